"""The package's shape: every module imports on its own, no module imports one that imports it back
(function-level imports count: issue 26), and every public name that existed before a move still
imports from where it did."""

import ast
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


def _imports(path, module, is_package, known):
    """The modules of ``known`` that ``module`` (the file at ``path``) imports anywhere in its code."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    here = module if is_package else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # "from . import x" names the submodule x; "from .x import y" names x (or x.y, a module)
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    return {m for m in out if m in known and m != module}


def _graph(top, prefix):
    """``{module: modules it imports}`` of the .py files under ``top`` (named ``prefix`` + dotted path)."""
    files = {}
    for dirpath, _, names in os.walk(top):
        for f in names:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), top)[:-3].replace(os.sep, ".")
                name = prefix + rel.removesuffix("__init__").rstrip(".") if rel.endswith("__init__") else prefix + rel
                files[name.strip(".")] = (os.path.join(dirpath, f), f == "__init__.py")
    return {m: _imports(p, m, pkg, files) for m, (p, pkg) in files.items()}


def _circles(graph):
    """The sets of two or more modules that import each other around a loop (Tarjan's components)."""
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
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("top, prefix", [("python/sfclayer", "sfclayer."), ("bench", "")])
def test_no_module_imports_one_that_imports_it_back_even_inside_a_function(top, prefix):
    graph = _graph(os.path.join(ROOT, top), prefix)
    assert len(graph) > 10 and any(graph.values())
    assert _circles(graph) == []


#: What stands on top of the core: the command line, the map server, the demo and the pictures.
APPLICATIONS = ("sfclayer.cli", "sfclayer.__main__", "sfclayer.server", "sfclayer.demo", "sfclayer.viz")


def test_the_core_imports_neither_the_facade_nor_the_applications_on_top():
    """Arrows point down: a core module (layer, pyramids, ingestion, curves...) that needs something
    takes it from the module that defines it, never from ``sfclayer`` itself or from an application."""
    graph = _graph(os.path.join(ROOT, "python/sfclayer"), "sfclayer.")
    up = {m: sorted(d for d in deps if d == "sfclayer" or d.startswith(APPLICATIONS))
          for m, deps in graph.items() if m != "sfclayer" and not m.startswith(APPLICATIONS)}
    assert {m: d for m, d in up.items() if d} == {}
    assert "sfclayer.layer" in up and "sfclayer.server.catalog" not in up


def test_the_circle_check_sees_function_level_imports_and_the_package_facade():
    graph = {"sfclayer": {"sfclayer.layer"}, "sfclayer.layer": {"sfclayer.curves"}, "sfclayer.curves": set()}
    assert _circles(graph) == []
    assert _circles(dict(graph, **{"sfclayer.curves": {"sfclayer"}})) == [["sfclayer", "sfclayer.curves",
                                                                         "sfclayer.layer"]]
    real = _graph(os.path.join(ROOT, "python/sfclayer"), "sfclayer.")
    assert "sfclayer.curves" in real["sfclayer.layer"]  # imported inside functions only
    assert "sfclayer.raster" in real["sfclayer.server.catalog"]  # "from .. import raster"
    assert "sfclayer.server" in real["sfclayer"]  # serve() imports it when called


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


def test_the_package_holds_no_hooks_for_tests_or_benches():
    """What only tests and benches use lives in tests/ and bench/ (issue 39): no function of the package
    takes a hidden parameter for them (``sfclayer.open(..., _open_mode)`` was one), and old spellings kept
    for them are gone (``sfclayer.pictures``: ``sfclayer.viz.pictures``)."""
    import ast

    hidden = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "python/sfclayer")):
        for f in (f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as src:
                tree = ast.parse(src.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = node.args
                    hidden += [(os.path.relpath(path, ROOT), node.name, p.arg)
                               for p in a.posonlyargs + a.args + a.kwonlyargs
                               if p.arg.startswith("_") and p.arg != "_"]  # "_": an ignored argument
    assert hidden == []
    for gone in ("pictures", "_manifests", "nope"):
        with pytest.raises(AttributeError, match=f"no attribute '{gone}'"):
            getattr(sfclayer, gone)


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


#: The transports (issue 39): the only modules that may ask which kind of session they were given.
TRANSPORTS = ("sfclayer._jvm", "sfclayer._transport", "sfclayer._classic", "sfclayer._connect")


def _session_kind_questions(path):
    """Where a module asks which kind of session it has: ``is_connect``, a ``.connect`` attribute, or an
    import of pyspark's Connect modules (``pyspark.sql.connect``), as ``(line, what)``."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "is_connect":
            found.append((node.lineno, "is_connect"))
        elif isinstance(node, ast.Attribute) and node.attr in ("is_connect", "connect"):
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyspark.sql.connect"):
            found.append((node.lineno, f"from {node.module}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("pyspark.sql.connect")]
    return sorted(found)


def test_no_module_outside_the_transports_asks_which_kind_of_session_it_has():
    """One transport per session, chosen once (``sfclayer._jvm.transport``): the rest of the package asks
    it for what it needs (its column functions, whether it has RDDs), never which kind it is."""
    asking = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "python/sfclayer")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.join(ROOT, "python"))[:-3].replace(os.sep, ".")
                module = rel.removesuffix(".__init__")
                if module not in TRANSPORTS and _session_kind_questions(path):
                    asking[module] = _session_kind_questions(path)
    assert asking == {}


def test_the_session_kind_check_sees_each_way_of_asking(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from . import _jvm\nif _jvm.is_connect(s): pass\nif self._last.connect: pass\n"
                 "from pyspark.sql.connect import functions\nimport pyspark.sql.connect.proto\n")
    assert [w for _, w in _session_kind_questions(f)] == [".is_connect", ".connect", "from pyspark.sql.connect",
                                                          "pyspark.sql.connect.proto"]


def test_the_operation_table_is_the_jars_and_the_dispatchers():
    """One table of named operations for both languages: Python's (sfclayer._transport.OPERATIONS) is the
    jar's resource, and the JVM's one dispatcher (io.sfclayer.spark.Operations) has a case for each."""
    import json
    import re
    import zipfile

    from sfclayer._transport import OPERATIONS

    with zipfile.ZipFile(sfclayer.jar_path()) as jar:
        table = json.loads(jar.read("io/sfclayer/spark/operations.json"))["operations"]
    assert {name: (tuple(tuple(a) for a in op["args"]), op["answer"]) for name, op in table.items()} == OPERATIONS
    with open(os.path.join(ROOT, "jvm/src/main/java/io/sfclayer/spark/Operations.java"), encoding="utf-8") as f:
        source = f.read()
    dispatched = re.findall(r'case "(\w+)":', source[source.index("private static String run("):])
    assert sorted(dispatched) == sorted(OPERATIONS)
