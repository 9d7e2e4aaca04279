"""A layer Spark wrote through S3A to moto, read in-process (no JVM on the read side) through the
object-store byte source, its requests counted at the server: open in 2 (LIST ``_sfclayer/``, GET
the newest document), a file's first touch in 2 sequential requests (GET ``index``, one ranged GET of
``data``), a look-up whose file's index is cached in 1 ranged GET. The bytes are checked on the way:
the index parsed by FORMAT.md section 2 alone, the record's CRC32C, its tiles decoded from the tile
schema. When the in-process reader (``sfclayer.open(path)`` without Spark) is importable, its own
requests are held to the same counts."""

import io
import json
import os
import struct

import fastavro
import pytest

import sfclayer
from integration.s3 import ACCESS_KEY, REGION, SECRET_KEY
from integration.s3 import tiles as s3_tiles
from tests.test_format_spec import index_entries

pytestmark = pytest.mark.s3
pytest.importorskip("obstore")

from sfclayer.reader.objectstore import open_objectstore  # noqa: E402

N_COLS, N_ROWS = 32, 16


@pytest.fixture(scope="module")
def layer(spark, s3):
    path = s3.path("inprocess")
    sfclayer.write(s3_tiles(spark, N_COLS, N_ROWS, payload=400), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1),
                   partitions=2, block_size=64 << 10, index_interval=4, compression="none")
    return path


def source(s3, path):
    return open_objectstore(path, endpoint=s3.server.endpoint, access_key_id=ACCESS_KEY,
                            secret_access_key=SECRET_KEY, region=REGION)


def crc32c(data):
    import google_crc32c

    return google_crc32c.value(data)


def test_a_cold_look_up_costs_two_then_two_then_one_requests(s3, layer):
    server = s3.server
    server.reset()
    src = source(s3, layer)
    newest = max(name for name, _ in src.list("_sfclayer") if name.endswith(".json"))
    doc = json.loads(src.read(f"_sfclayer/{newest}"))
    opening = server.requests()
    assert [m for m, _, _ in opening] == ["GET", "GET"] and "list-type=2" in opening[0][2], opening
    assert doc["formatVersion"] >= 3 and len(doc["files"]) >= 3

    for f in doc["files"][:3]:
        server.reset()
        base = f"{f['dir']}/{f['name']}"
        entries = index_entries(src.read(f"{base}/index"))  # first touch: the index...
        offsets = [o for _, o in entries] + [f["dataBytes"]]
        key, start = entries[-1]
        block = src.read_range(f"{base}/data", start, offsets[-1] - start)  # ...then the records it points at
        assert [m for m, _, _ in server.requests()] == ["GET", "GET"]
        assert server.ranges() == [None, f"bytes={start}-{f['dataBytes'] - 1}"]
        if struct.unpack_from(">i", block, 0)[0] == -1:  # a sync escape before the record
            block = block[20:]
        record_length, key_length, index, n = struct.unpack_from(">iiqi", block, 0)
        assert (key_length, index, record_length) == (8, key, 12 + n)
        value = block[20:20 + n]
        assert struct.unpack(">I", value[-4:])[0] == crc32c(block[8:20 + n - 4])
        schema = fastavro.parse_schema({"type": "array", "items": doc["tileSchema"]})
        for t in fastavro.schemaless_reader(io.BytesIO(value[:-4]), schema):
            assert t["v"] == t["col"] * 1000 + t["row"]

        server.reset()  # the index now known: a look-up is one ranged GET of its records
        key, start = entries[0]
        src.read_range(f"{base}/data", start, offsets[1] - start)
        assert len(server.requests()) == 1 and server.ranges() == [f"bytes={start}-{offsets[1] - 1}"]


def test_the_in_process_reader_keeps_to_the_same_requests(s3, layer):
    pytest.importorskip("sfclayer.reader.layer", reason="the in-process reader (issue 33) is not merged yet")
    creds = {"endpoint": s3.server.endpoint, "access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY,
             "region": REGION}
    server = s3.server
    server.reset()
    # s3:// (s3a:// paths are the JVM's, which the in-process reader leaves to Spark)
    with sfclayer.open(layer.replace("s3a://", "s3://", 1), storage_options=creds) as lyr:
        assert len(server.requests()) <= 2, server.requests()
        server.reset()
        assert lyr.get(0, 0)["v"] == 0  # first touch of its file
        assert len(server.requests()) <= 2, server.requests()
        lyr.get(N_COLS - 1, N_ROWS - 1)
        server.reset()
        # the file of (0, 0) again, another index block (z index 4): its index is cached
        assert lyr.get(2, 0)["v"] == 2000
        requests = server.requests()
        assert len(requests) == 1 and requests[0][0] == "GET" and requests[0][1].endswith("/data"), requests
