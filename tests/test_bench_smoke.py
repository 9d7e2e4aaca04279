"""A tiny run of the benchmark (bench/run.py, config SMOKE) on the session's Spark.

Checks that the report has every comparator and look-up method, that the numbers are sane (answers
of the right size, records read at least the records returned, sfclayer reading fewer records than
a full scan, percentiles ordered) and that RESULTS.md and the plot render. It asserts no speeds.
"""

import importlib.util
import math
import os

import pytest

import sfclayer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location("sfclayer_bench_run", os.path.join(ROOT, "bench", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    try:
        sfclayer.jar_path()
    except sfclayer.SfcLayerError as e:
        pytest.skip(f"the benchmark needs the connector jar: {e}")
    return _bench()


def _finite_positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_smoke_run_reports_every_comparator(spark, bench, tmp_path):
    cfg = bench.SMOKE
    report = bench.run(spark, cfg, str(tmp_path / "work"), log=lambda s: None)

    assert len(report["sizes"]) == len(cfg.sizes)
    size = report["sizes"][0]
    n, tile_bytes = size["tiles"], cfg.tile_bytes
    assert n == size["side"] ** 2

    # writes: every layout, positive times, the data on disk
    assert set(size["writes"]) == set(bench.WRITERS)
    for name, w in size["writes"].items():
        assert _finite_positive(w["seconds"]) and _finite_positive(w["tiles_per_s"]), name
        assert w["files"] >= 1, name
        assert w["disk_bytes"] > 0.5 * n * tile_bytes, name

    # bounding boxes: every comparator, every fraction, exact answers
    assert [b["fraction"] for b in size["bbox"]] == list(cfg.fractions)
    for b in size["bbox"]:
        assert set(b["results"]) == set(bench.COMPARATORS)
        for name, r in b["results"].items():
            assert _finite_positive(r["median_s"]), name
            assert r["returned"] == b["tiles"] == b["box_side"] ** 2, name
            assert r["records_read"] >= r["returned"], name
            assert 1 <= r["files_read"] <= r["files_total"], name
        # pruning: sfclayer reads exactly the box (refinement discards nothing on a Z2 layer
        # whose ranges are exact), the full scan reads everything
        assert b["results"]["sfclayer"]["records_read"] == b["tiles"]
        assert b["results"]["sfclayer_fullscan"]["records_read"] == n
        assert b["results"]["sfclayer"]["mb_read"] > 0

    # point look-ups: every method, ordered percentiles, one record read per sfclayer Spark query
    lk = size["lookups"]
    for key, _ in bench.POINT_METHODS:
        assert _finite_positive(lk[key]["p50_ms"]), key
        assert lk[key]["p99_ms"] >= lk[key]["p50_ms"], key
    assert lk["spark_sfclayer"]["records_read"] == 1
    assert lk["spark_parquet_plain"]["records_read"] >= 1
    for key, _ in bench.BATCHES:
        assert _finite_positive(lk[key]["keys_per_s"]), key
        assert lk[key]["mb_per_s"] > 0, key
    assert lk["warm_files_opened"] >= 1

    # the tile-size study: every size, every transport
    ts = report["tile_sizes"]
    assert [r["tile_bytes"] for r in ts["results"]] == [2 * s * s for s in cfg.tile_study_sides]
    for r in ts["results"]:
        for key in ("warm_python", "warm_socket", "warm_py4j", "cold_python"):
            assert _finite_positive(r[key]["p50_ms"]), key
        assert _finite_positive(r["batch_socket"]["us_per_key"])

    # the index-interval study
    iv = report["intervals"]
    assert [r["interval"] for r in iv["results"]] == list(cfg.intervals)
    entries = [r["index_entries"] for r in iv["results"]]
    assert entries == sorted(entries, reverse=True) and entries[-1] >= 1
    # measured on disk, independently of the entry counts: a sparser index is a smaller file, and
    # the bytes a look-up may scan past its entry grow with the interval but stay within the data
    sizes = [r["index_bytes"] for r in iv["results"]]
    assert all(a > b for a, b in zip(sizes, sizes[1:])) and sizes[-1] > 0
    scans = [r["scan_bytes_max"] for r in iv["results"]]
    assert scans == sorted(scans) and all(0 <= x < r["data_bytes"] for x, r in zip(scans, iv["results"]))
    assert len({r["data_bytes"] for r in iv["results"]}) == 1  # the same data under every interval
    for r in iv["results"]:
        assert _finite_positive(r["cold_socket"]["p50_ms"])
        assert _finite_positive(r["warm_random_socket"]["p50_ms"])
        assert _finite_positive(r["batch_warm"]["us_per_key"])
        assert len(r["batch_rounds_us_per_key"]) == cfg.interval_rounds

    # the report renders, with every comparator and the machine
    text = bench.render_markdown(report, "pytest smoke")
    for label in list(bench.LABELS.values()) + [lab for _, lab in bench.POINT_METHODS]:
        assert label in text, label
    for heading in ("## Machine", "## Write throughput", "## Bounding-box queries", "## Point look-ups",
                    "### Batch look-ups", "### Tile size", "## Index interval", "## Interpretation"):
        assert heading in text
    assert report["machine"]["cores"] >= 1 and report["machine"]["spark"]
    png = tmp_path / "results.png"
    bench.plot(report, str(png))
    assert png.stat().st_size > 10_000
