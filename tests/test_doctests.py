"""Every module's docstring examples run, those that need Spark on the test session's ``spark``
(as the docs say: "with a SparkSession ``spark``")."""

import doctest
import importlib
import pkgutil

import pytest

import sfclayer

MODULES = ["sfclayer"] + sorted(m.name for m in pkgutil.walk_packages(sfclayer.__path__, "sfclayer."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile.mkdtemp() in the examples lands here
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"spark": spark}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_examples_are_many():
    finder = doctest.DocTestFinder()
    examples = {name: sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
                for name in MODULES}
    assert sum(examples.values()) > 80
    for name in ("sfclayer", "sfclayer.layer", "sfclayer.grid", "sfclayer.raster", "sfclayer.viz.pictures"):
        assert examples[name] > 0, name
