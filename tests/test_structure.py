"""The package's shape: every module imports on its own (no import cycles), and every public name
that existed before a move still imports from where it did."""

import importlib
import os
import pkgutil
import subprocess
import sys

import pytest

import sfclayer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules():
    names = ["sfclayer"]
    for m in pkgutil.walk_packages(sfclayer.__path__, "sfclayer."):
        names.append(m.name)
    return sorted(names)


def test_every_module_imports_alone_in_a_fresh_interpreter():
    # One interpreter per module: a cycle only shows when its module is the first one imported.
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    failures = {}
    for name in _modules():
        r = subprocess.run([sys.executable, "-c", f"import {name}"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            failures[name] = r.stderr.strip().splitlines()[-1:]
    assert failures == {}
    assert "sfclayer.curves.ranges" in _modules() and "sfclayer.viz.pictures" in _modules()


def _import_graph():
    """Module -> the sfclayer modules it imports, at any depth of its code (function-level imports
    too: a cycle through one shows only when the function runs)."""
    import ast

    top = os.path.join(ROOT, "python")
    paths = {}
    for dirpath, _, files in os.walk(os.path.join(top, "sfclayer")):
        for f in files:
            if f.endswith(".py"):
                name = os.path.relpath(os.path.join(dirpath, f), top)[:-3].replace(os.sep, ".")
                paths[name[:-len(".__init__")] if name.endswith(".__init__") else name] = os.path.join(dirpath, f)
    graph = {}
    for name, path in paths.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        deps = set()
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1]) if node.level else ""
                module = ".".join(p for p in (base, node.module) if p)
                subs = {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in paths}
                deps.update(subs)
                if len(subs) < len(node.names):  # names from the module itself
                    deps.add(module)
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


# Cycles through function-level imports that issue 26 ("arrows down") removes: when it does, this
# list shrinks with it; any other cycle fails the test.
KNOWN_CYCLES = [
    ["sfclayer", "sfclayer.server", "sfclayer.server.app", "sfclayer.server.catalog"],
    ["sfclayer._pyramid_changes", "sfclayer.ingestion", "sfclayer.layer", "sfclayer.pyramids"],
]


def test_no_import_cycles_counting_function_level_imports():
    assert _cycles(_import_graph()) == sorted(KNOWN_CYCLES)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check itself


# Public names of the modules that moved, as they were before the move.
OLD_CURVES = [
    "IndexRange", "KeyBounds", "TimeBounds", "GridKey", "GridTimeKey", "Z2_LIMIT", "Z3_LIMIT",
    "HILBERT_MAX_ORDER", "z2_encode", "z2_decode", "z3_encode", "z3_decode", "hilbert_encode",
    "hilbert_decode", "hilbert_order", "hilbert_max_index", "z2_ranges", "z3_ranges", "hilbert_ranges",
    "merge_ranges", "z2_encode_array", "z2_decode_array", "z3_encode_array", "z3_decode_array",
    "hilbert_encode_array", "hilbert_decode_array", "to_micros", "format_micros", "describe_key",
    "KeyIndex", "ZIndex", "HilbertIndex", "RowMajorIndex", "Z3Index", "key_index", "key_index_from_json",
]
OLD_PICTURES = ["tile_files", "file_colors", "layout_grid", "layout_picture", "region_picture"]
OLD_DEMO = ["Raster", "SOURCES", "load_raster", "tile_table", "tile_pixels", "stitch", "scan_report",
            "run_demo", "DemoResult"]


@pytest.mark.parametrize("module, names", [
    ("sfclayer.curves", OLD_CURVES), ("sfclayer.demo", OLD_DEMO), ("sfclayer.viz", OLD_PICTURES),
])
def test_public_names_import_from_where_they_did(module, names):
    mod = importlib.import_module(module)
    assert [n for n in names if not hasattr(mod, n)] == []
    exported = getattr(mod, "__all__")
    assert [n for n in exported if not hasattr(mod, n)] == []


def test_old_pictures_module_spelling_still_works():
    from sfclayer import pictures
    from sfclayer.viz import pictures as moved

    assert pictures is moved
    assert [n for n in OLD_PICTURES if not hasattr(pictures, n)] == []
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sfclayer.nope  # noqa: B018


def test_every_source_file_over_500_lines_says_why_at_its_top():
    """Files a newcomer reads in one sitting (issue 15): a longer one gives its reason in its first lines."""
    import re

    long_unexplained = []
    for top in ("python", "jvm/src", "bench", "tests", "integration"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".py", ".java")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    lines = fh.readlines()
                if len(lines) > 500 and not re.search(r"(over|about) 500 lines", "".join(lines[:40]), re.I):
                    long_unexplained.append((os.path.relpath(path, ROOT), len(lines)))
    assert long_unexplained == []
