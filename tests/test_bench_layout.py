"""The benchmark's layout without running it: the study registry tolerates studies not written yet,
and RESULTS.md is rewritten block by block, so one study run alone leaves the others' figures."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, BENCH)
    try:
        import report
        import studies

        yield report, studies
    finally:
        sys.path.remove(BENCH)


def test_every_shared_study_is_registered_and_loads(bench_modules):
    _, studies = bench_modules
    for name in ("writes", "boxes", "lookup", "tiles", "intervals"):
        module = studies.load(name)
        assert module is not None and studies.is_shared(module), name
    with pytest.raises(KeyError, match="unknown study 'nope'"):
        studies.load("nope")


def test_a_registered_study_without_its_module_is_skipped(bench_modules, monkeypatch):
    _, studies = bench_modules
    monkeypatch.setitem(studies.STUDIES, "later", ("no_such_study_module", "not written yet"))
    assert not studies.available("later")
    assert studies.load("later") is None


def test_the_checked_in_results_are_blocks_that_merge_unchanged(bench_modules):
    report, _ = bench_modules
    with open(os.path.join(BENCH, "RESULTS.md")) as f:
        text = f.read()
    names = [m.group(1) for m in report._BLOCK.finditer(text)]
    assert names[:6] == ["run", "writes", "boxes", "lookup", "tiles", "intervals"]
    assert report.merge(text, []) == text


def test_merge_replaces_its_blocks_and_keeps_the_others(bench_modules):
    report, _ = bench_modules
    old = report.merge("", [("run", "# results\n"), ("boxes", "## Boxes\nold\n"), ("interp:boxes", "boxes said\n")])
    old = report.merge(old, [("updates", "## Updates\nfrom bench/updates.py\n")])
    new = report.merge(old, [("lookup", "## Look-ups\nnew\n"), ("boxes", "## Boxes\nnew\n")])
    names = [m.group(1) for m in report._BLOCK.finditer(new)]
    # lookup lands after boxes (document order), the study of its own stays where it was
    assert names == ["run", "boxes", "lookup", "interp:boxes", "updates"]
    assert "## Boxes\nnew" in new and "old" not in new
    assert "from bench/updates.py" in new and "boxes said" in new


def test_write_section_adds_then_replaces_one_block(bench_modules, tmp_path):
    report, _ = bench_modules
    path = str(tmp_path / "RESULTS.md")
    report.write_blocks([("run", "# results\n"), ("boxes", "## Boxes\n")], path)
    report.write_section("serving", "## Serving\nv1\n", path)
    report.write_section("serving", "## Serving\nv2\n", path)
    with open(path) as f:
        text = f.read()
    assert text.count("## Serving") == 1 and "v2" in text and "## Boxes" in text


def test_the_readme_study_table_lists_every_registered_study_with_its_module(bench_modules):
    """bench/README.md's table of studies names each study of studies.py and the module that runs it."""
    import re

    _, studies = bench_modules
    with open(os.path.join(BENCH, "README.md")) as f:
        rows = re.findall(r"^\| `(\w+)` \| `(\w+)\.py`", f.read(), re.M)
    assert dict(rows) == {name: module for name, (module, _) in studies.STUDIES.items()}
