"""Ingest memory stays bounded: a source several times larger than a Python worker's memory share
(``spark.executor.pyspark.memory``, which Spark enforces as the worker's address-space limit) is
ingested through windowed reads, while reading it whole in the same worker fails.

Runs in a subprocess with its own small Spark (local[1]) since the share is a Spark setting; the
source is a sparse GeoTIFF (2.25 GiB of pixels, a few KB on disk) so the test stays fast."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("rasterio")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r'''
import json, os, sys
import numpy as np
import rasterio
from rasterio.windows import Window

work, side, tile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = os.path.join(work, "big.tif")
RAMP = (np.arange(512) % 250 + 1).astype("uint8")
# Sparse: only the patches are written; GDAL reads every other block as nodata.
patches = {(1, 2): 11, (8, 1): 22, (11, 11): 33}  # (tile col, tile row) -> value
with rasterio.open(src, "w", driver="GTiff", width=side, height=side, count=1, dtype="uint8", crs="EPSG:3857",
                   transform=rasterio.transform.from_origin(0, side * 10.0, 10.0, 10.0), nodata=0, tiled=True,
                   blockxsize=512, blockysize=512, compress="deflate", sparse_ok=True) as ds:
    for (c, r), v in patches.items():
        a = np.full((1, 512, 512), v, "uint8")
        a[0, :7, :] = RAMP  # not constant, so the pixels check means something
        ds.write(a, window=Window(c * tile + 100, r * tile + 200, 512, 512))

os.environ["PYSPARK_PYTHON"] = sys.executable
import sfclayer
spark = sfclayer.session("local[1]", app_name="sfclayer-ingest-memory", spark_ui_enabled="false",
                         spark_executor_pyspark_memory="600m", spark_sql_shuffle_partitions="2",
                         spark_ui_showConsoleProgress="false")
spark.sparkContext.setLogLevel("ERROR")
out = {"source_bytes": side * side}

def read_whole(_):
    import resource
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    try:
        with rasterio.open(src) as ds:
            ds.read()
        yield ("read", limit)
    except MemoryError:
        yield ("MemoryError", limit)

out["whole_read"], out["limit"] = spark.sparkContext.parallelize([0], 1).mapPartitions(read_whole).collect()[0]
path = os.path.join(work, "layer")
r = sfclayer.ingest(spark, src, path, tms=None, tile_size=tile)
out["candidates"], out["tiles"] = r.candidates, r.tiles
rows = sfclayer.read(spark, path).collect()
out["keys"] = sorted([row["col"], row["row"]] for row in rows)
ok = True
for row in rows:
    a = sfclayer.raster.to_numpy(row)[0]
    v = patches[(row["col"], row["row"])]
    ok &= bool((a[200:207, 100:612] == RAMP).all() and (a[207:712, 100:612] == v).all()
               and int((a != 0).sum()) == 512 * 512)
out["pixels_ok"] = ok
spark.stop()
print("RESULT " + json.dumps(out))
'''


def test_ingest_source_larger_than_the_worker_memory_share(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), SPARK_LOCAL_IP="127.0.0.1")
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    side, tile = 49152, 4096  # 2.25 GiB of uint8 pixels; 12 × 12 tiles of 16 MiB
    p = subprocess.run([sys.executable, str(script), str(tmp_path), str(side), str(tile)], env=env,
                       capture_output=True, text=True, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["limit"] == 600 * 2**20
    assert out["source_bytes"] > 3 * out["limit"]
    assert out["whole_read"] == "MemoryError"  # the share is real: the whole source does not fit
    assert out["candidates"] == 12 * 12
    assert out["tiles"] == 3 and out["keys"] == [[1, 2], [8, 1], [11, 11]]
    assert out["pixels_ok"]
