"""Two pyramid builds racing on S3 (issue 27's lease, on issue 28's primitive): the lease is taken with
S3A's conditional create, as a commit is, so of two runs whose lease PUTs are at the server together
exactly one proceeds and the other fails with ConcurrentUpdate before writing anything.

S3Proxy decides ``If-None-Match: *`` atomically (moto cannot referee a race); the FaultProxy of
integration/s3.py holds the first PUT of the lease until the other run's is in flight. A lease taken
with a check-then-copy rename (what S3A's rename is) lets both runs through here.
"""

import json
import threading

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer.ingestion import Grid

pytestmark = pytest.mark.s3

COLS, ROWS, TILE = 4, 4, 8
GRID = Grid("EPSG:4326", (0.0, 0.0, 4.0, 4.0), COLS, ROWS, TILE, TILE, None, 2)
LEASE = r"/_pyramid/\.lease$"


def _base(spark, path):
    rows = []
    for c in range(COLS):
        for r in range(ROWS):
            v = raster.from_numpy(np.full((1, TILE, TILE), 1 + c * 16 + r * 3, np.uint8), 0)
            rows.append((c, r, *(v[k] for k in raster.COLUMNS)))
    sfclayer.write(spark.createDataFrame(rows, raster.spark_schema()), path, bounds=GRID.bounds, extent=GRID.extent,
                   crs=GRID.crs, raster=GRID.raster_metadata(1, "uint8", 0), partitions=1)


def _pixels(spark, path, zoom):
    rows = sfclayer.read(spark, path, zoom=zoom).select("col", "row", *raster.COLUMNS).collect()
    return {(x["col"], x["row"]): raster.to_numpy(x).tolist() for x in rows}


def _exists(spark, path):
    p = spark._jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(p)


def test_of_two_pyramid_runs_racing_on_s3_exactly_one_builds_and_no_level_is_lost(spark, s3_race, tmp_path):
    proxy = s3_race.proxy
    path = s3_race.path("pyramid-race")
    _base(spark, path)
    outcome = {}

    def run(name):
        try:
            outcome[name] = sfclayer.pyramid(spark, path)
        except Exception as e:  # judged below
            outcome[name] = e

    proxy.clear()
    proxy.hold(LEASE, n=2, timeout=30)
    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    held = [p for p, gen in proxy.held if gen == 0]
    proxy.clear()
    assert not any(t.is_alive() for t in threads), "a pyramid run did not finish"
    assert len(held) == 2, f"the two lease PUTs were not at the server together: {held}"

    built = [v for v in outcome.values() if not isinstance(v, Exception)]
    failed = [v for v in outcome.values() if isinstance(v, Exception)]
    assert built == [[0, 1]] and len(failed) == 1, outcome
    assert isinstance(failed[0], sfclayer.ConcurrentUpdate) and ".lease" in str(failed[0]), repr(failed[0])

    # The loser wrote nothing: each level has the winner's one version, pinned by the document.
    doc = json.loads(spark.read.text(f"{path}/_pyramid/pyramid-00000001.json", wholetext=True).first()[0])  # the first numbered document
    assert doc["baseVersion"] == 1 and doc["levelVersions"] == {"0": 1, "1": 1}
    for z in (0, 1):
        assert [v.version for v in sfclayer.history(spark, f"{path}/_pyramid/{z}")] == [1]
    assert not _exists(spark, f"{path}/_pyramid/.lease")
    # No level lost or mixed: the levels equal the same pyramid built alone on local files.
    local = str(tmp_path / "alone")
    _base(spark, local)
    assert sfclayer.pyramid(spark, local) == [0, 1]
    assert sfclayer.pyramid_levels(spark, path) == [0, 1, 2]
    for z in (0, 1):
        assert _pixels(spark, path, z) == _pixels(spark, local, z)
