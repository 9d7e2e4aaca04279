"""The in-process reader's object-store byte source (sfclayer.reader.objectstore) on moto's S3 server:
the ByteSource contract, one request per call counted at the server (no HEAD before a GET, a ranged
GET for a range), credentials from options, the environment and an AWS profile, many threads, and
processes forked before and after it made requests; layers of every format version 1 to 6 (format 1's
files found by listing its data directory) read from it as the JVM reads their local copies. Spark
writes those layers locally only: integration/test_s3_inprocess.py reads a layer Spark wrote through S3A."""

import os
import pickle
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("obstore")

from integration import s3 as s3_helpers  # noqa: E402
from sfclayer.errors import InvalidArgument, StorageError  # noqa: E402
from sfclayer.reader.objectstore import ObjectStoreSource, open_objectstore  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "sfclayer-objectstore"
DATA = bytes(range(256)) * 4096  # 1 MiB, every offset's byte known


@pytest.fixture(scope="module")
def server():
    try:
        srv = s3_helpers.MotoS3().start()
    except s3_helpers.S3Unavailable as e:
        pytest.skip(str(e))
    srv.create_bucket(BUCKET)
    src = ObjectStoreSource(f"s3://{BUCKET}/layer", **creds(srv))
    client = src._requests()
    for path, data in (("_sfclayer/v00000001.json", b'{"version": 1}'), ("_sfclayer/v00000002.json", b'{"version": 2}'),
                       ("_sfclayer/manifests/m-1.json", b"{}"), ("data-1/attempt-0/part-r-00000-0/data", DATA),
                       ("data-1/attempt-0/part-r-00000-0/index", b"index")):
        client._obs.put(client._store, client._p(path), data)
    yield srv
    srv.stop()


def creds(srv):
    return {"endpoint": srv.endpoint, "access_key_id": s3_helpers.ACCESS_KEY,
            "secret_access_key": s3_helpers.SECRET_KEY, "region": s3_helpers.REGION}


@pytest.fixture
def source(server):
    return open_objectstore(f"s3://{BUCKET}/layer", **creds(server))


def counted(server, fn):
    server.reset()
    out = fn()
    return out, server.requests(), server.ranges()


def test_reads_ranges_sizes_lists_and_existence_as_the_contract_says(source):
    assert source.read("_sfclayer/v00000002.json") == b'{"version": 2}'
    assert source.read_range("data-1/attempt-0/part-r-00000-0/data", 1000, 300) == DATA[1000:1300]
    assert source.read_range("data-1/attempt-0/part-r-00000-0/data", len(DATA) - 10, 100) == DATA[-10:]
    assert source.read_range("data-1/attempt-0/part-r-00000-0/data", len(DATA), 100) == b""
    assert source.size("data-1/attempt-0/part-r-00000-0/data") == len(DATA)
    # directly under the prefix only: manifests/ is a sub-directory, not listed
    assert sorted(source.list("_sfclayer")) == [("v00000001.json", 14), ("v00000002.json", 14)]
    assert sorted(source.list("_sfclayer/")) == sorted(source.list("_sfclayer"))
    assert source.list("no-such-dir") == []
    assert source.list_dirs("_sfclayer") == ["manifests"]  # optional in the contract: format 1's listing
    assert source.list_dirs("data-1") == ["attempt-0"] and sorted(source.list_dirs("")) == ["_sfclayer", "data-1"]
    assert source.list_dirs("no-such-dir") == []
    assert source.exists("data-1/attempt-0/part-r-00000-0/index")
    assert not source.exists("data-1/attempt-0/part-r-00000-0/bloom")


def test_a_missing_object_is_file_not_found_naming_it(source):
    for call in (lambda: source.read("_sfclayer/v00000009.json"),
                 lambda: source.read_range("_sfclayer/v00000009.json", 0, 10),
                 lambda: source.size("_sfclayer/v00000009.json")):
        with pytest.raises(FileNotFoundError, match=f"s3://{BUCKET}/layer/_sfclayer/v00000009.json"):
            call()


def test_every_call_is_one_request_a_range_one_ranged_get_and_no_head_before_a_get(server, source):
    path = "data-1/attempt-0/part-r-00000-0/data"
    got, requests, ranges = counted(server, lambda: source.read_range(path, 4096, 512))
    assert got == DATA[4096:4608]
    assert [m for m, _, _ in requests] == ["GET"] and requests[0][1] == f"/{BUCKET}/layer/{path}"
    assert ranges == ["bytes=4096-4607"]
    _, requests, ranges = counted(server, lambda: source.read("_sfclayer/v00000001.json"))
    assert [m for m, _, _ in requests] == ["GET"] and ranges == [None]
    _, requests, _ = counted(server, lambda: source.list("_sfclayer"))
    assert len(requests) == 1 and requests[0][0] == "GET" and "delimiter=%2F" in requests[0][2]
    _, requests, _ = counted(server, lambda: source.size(path))
    assert [m for m, _, _ in requests] == ["HEAD"]


def test_a_cold_look_up_is_list_get_then_index_and_one_ranged_get(server):
    """What the reader does: open (LIST _sfclayer/, GET the newest document), a file's first touch
    (GET its index, one ranged GET of data), a look-up with the index cached (one ranged GET)."""
    server.reset()
    src = open_objectstore(f"s3a://{BUCKET}/layer", **creds(server))  # the JVM path's URL reads too
    newest = max(name for name, _ in src.list("_sfclayer") if name.endswith(".json"))
    assert src.read(f"_sfclayer/{newest}") == b'{"version": 2}'
    opening = server.requests()
    assert len(opening) == 2, opening
    server.reset()
    src.read("data-1/attempt-0/part-r-00000-0/index")
    src.read_range("data-1/attempt-0/part-r-00000-0/data", 5000, 100)
    assert [m for m, _, _ in server.requests()] == ["GET", "GET"] and server.ranges() == [None, "bytes=5000-5099"]
    _, requests, ranges = counted(server, lambda: src.read_range("data-1/attempt-0/part-r-00000-0/data", 9000, 100))
    assert len(requests) == 1 and ranges == ["bytes=9000-9099"]


def test_read_many_puts_the_reads_in_flight_together(server, source):
    """Three reads in one round trip: moto waits 0.3 s before each answer, they take well under 0.9 s."""
    path = "data-1/attempt-0/part-r-00000-0/data"
    items = [("data-1/attempt-0/part-r-00000-0/index", None, None), (path, 0, 100), (path, 500000, 1000)]
    source.read(items[0][0])  # a warm client: connections, credentials
    server.latency = 0.3
    try:
        t = time.perf_counter()
        got, requests, ranges = counted(server, lambda: source.read_many(items))
        elapsed = time.perf_counter() - t
    finally:
        server.latency = 0.0
    assert got == [b"index", DATA[:100], DATA[500000:501000]]
    assert len(requests) == 3 and sorted(r or "" for r in ranges) == ["", "bytes=0-99", "bytes=500000-500999"]
    assert elapsed < 0.75, f"{elapsed:.2f} s: not concurrent"
    with pytest.raises(FileNotFoundError, match="nope"):
        source.read_many([(path, 0, 10), ("nope", None, None)])


def test_credentials_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_helpers.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_helpers.SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", s3_helpers.REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)  # http://: plain HTTP allowed for it
    src = open_objectstore(f"s3://{BUCKET}/layer")
    assert src.read("_sfclayer/v00000001.json") == b'{"version": 1}'


def test_credentials_from_an_aws_profile_through_boto3(server, monkeypatch, tmp_path):
    pytest.importorskip("boto3")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[bench]\naws_access_key_id = {s3_helpers.ACCESS_KEY}\n"
                           f"aws_secret_access_key = {s3_helpers.SECRET_KEY}\n")
    config = tmp_path / "config"
    config.write_text(f"[profile bench]\nregion = {s3_helpers.REGION}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "bench")
    src = open_objectstore(f"s3://{BUCKET}/layer", endpoint=server.endpoint)
    assert src.read("_sfclayer/v00000001.json") == b'{"version": 1}'
    provider = src._requests()._store.credential_provider
    assert type(provider).__name__ == "Boto3CredentialProvider"
    assert provider().get("access_key_id") == s3_helpers.ACCESS_KEY


def test_bad_urls_and_failures_name_what_is_wrong(server):
    with pytest.raises(InvalidArgument, match="unsupported scheme 'ftp'"):
        open_objectstore("ftp://host/layer")
    with pytest.raises(InvalidArgument, match="no bucket"):
        open_objectstore("s3:///layer")
    src = open_objectstore("s3://no-such-bucket-here/layer", **creds(server))
    with pytest.raises((FileNotFoundError, StorageError), match="s3://no-such-bucket-here/layer/x"):
        src.read("x")


def test_many_threads_share_one_source(source):
    path = "data-1/attempt-0/part-r-00000-0/data"
    errors, lock = [], threading.Lock()

    def work(i):
        try:
            for j in range(5):
                start = (i * 7919 + j * 104729) % (len(DATA) - 4096)
                assert source.read_range(path, start, 4096) == DATA[start:start + 4096]
        except Exception as e:  # collected: an assert in a thread would not fail the test
            with lock:
                errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []


def test_sources_of_one_bucket_share_one_client_per_process(server):
    a = open_objectstore(f"s3://{BUCKET}/layer", **creds(server))
    b = open_objectstore(f"s3://{BUCKET}/other", **creds(server))
    c = open_objectstore(f"s3://{BUCKET}/layer", **{**creds(server), "region": "eu-west-1"})
    assert a._requests()._store is b._requests()._store  # its connections and credentials
    assert c._requests()._store is not a._requests()._store  # other settings, another client
    assert b.list("_sfclayer") == []


def _upload(server, root, prefix):
    """Every file under the local directory ``root`` put at ``s3://BUCKET/prefix/``."""
    client = ObjectStoreSource(f"s3://{BUCKET}/{prefix}", **creds(server))._requests()
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".crc"):  # the local filesystem's checksum files: S3A writes none
                continue
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            with open(os.path.join(folder, name), "rb") as f:
                client._obs.put(client._store, client._p(rel), f.read())
    return client


def _names(client, prefix):
    """Names of the objects directly under ``prefix``."""
    return [path.rsplit("/", 1)[1] for path, _ in client.list(prefix + "/")]


def test_a_format_1_layer_is_read_by_listing_its_data_directory(server, spark, tmp_path):
    """Format 1 (docs/FORMAT.md section 1): the version's files are the ``part-*`` entries of ``dataDir``,
    listed through the store (common prefixes), their count checked against ``fileCount``; the answers
    are the JVM's on the same layer's local copy."""
    import sfclayer
    from sfclayer.errors import CorruptLayer

    from . import helpers

    local = str(tmp_path / "format1")
    sfclayer.write(s3_helpers.tiles(spark, 12, 9, payload=40, partitions=3), local, bounds=(0, 0, 11, 8), partitions=3)
    md = helpers.as_format_1(local)
    assert md["fileCount"] == 3 and "dir" not in md["files"][0]
    client = _upload(server, local, "format1")
    url = f"s3://{BUCKET}/format1"
    remote = sfclayer.open(url, storage_options=creds(server))
    jvm = sfclayer.open(spark, local)
    try:
        assert remote.metadata["formatVersion"] == 1 and remote.count() == jvm.count() == 12 * 9
        assert sorted(map(sorted, (t.items() for t in remote.query()))) == \
            sorted(map(sorted, (t.items() for t in jvm.query())))
        for key in [(0, 0), (11, 8), (5, 4), (3, 7)]:
            assert remote.get(*key) == jvm.get(*key), key
        assert remote.count(keys=(2, 2, 6, 5)) == jvm.count(keys=(2, 2, 6, 5)) == 5 * 4
    finally:
        jvm.close()
        remote.close()
    # not part-*: Spark's _SUCCESS marker and an abandoned attempt's directory are no data files
    data_dir = md["dataDir"]
    client._obs.put(client._store, client._p(f"{data_dir}/_SUCCESS"), b"")
    client._obs.put(client._store, client._p(f"{data_dir}/_temporary/0/part-r-00009-9/data"), b"junk")
    with sfclayer.open(url, storage_options=creds(server)) as again:
        assert again.count() == 12 * 9 and [f["name"] for f in again.metadata["files"]] == \
            [f["name"] for f in md["files"]]  # the document's own entries, as written
    # a part the document does not name (renamed: S3 copies, then deletes), then a part gone: said as the JVM says
    first = md["files"][0]["name"]
    renamed = first.replace("part-r-00000-", "part-r-00099-")
    for name in _names(client, f"{data_dir}/{first}"):  # data, index, bloom
        body = client._obs.get(client._store, client._p(f"{data_dir}/{first}/{name}")).bytes()
        client._obs.put(client._store, client._p(f"{data_dir}/{renamed}/{name}"), body)
        client._obs.delete(client._store, client._p(f"{data_dir}/{first}/{name}"))
    with pytest.raises(CorruptLayer, match=f"data file {data_dir}/{renamed} is not among the files its metadata lists"):
        sfclayer.open(url, storage_options=creds(server))
    for name in _names(client, f"{data_dir}/{renamed}"):  # S3 has no directories: gone with its objects
        client._obs.delete(client._store, client._p(f"{data_dir}/{renamed}/{name}"))
    with pytest.raises(CorruptLayer, match=f"{data_dir} holds 2 data files but the version's metadata lists 3"):
        sfclayer.open(url, storage_options=creds(server))


def _answer(call):
    """What a call answers: its value, or the class of the sfclayer error it raises."""
    from sfclayer.errors import SfcLayerError

    try:
        return call()
    except SfcLayerError as e:
        return type(e)


def _layer_of_format(spark, path, version):
    """A small local layer whose version document says ``version`` (2 to 6), made the way each is."""
    import numpy as np

    import sfclayer
    from sfclayer import raster

    from . import helpers

    if version in (2, 3):
        sfclayer.write(s3_helpers.tiles(spark, 8, 6, payload=40, partitions=3), path, bounds=(0, 0, 7, 5),
                       partitions=3, **({"format_version": 2} if version == 2 else {}))
    elif version in (4, 5):  # raster tiles: zstd-raster says 4; with their validity mask column, 5
        rng = np.random.default_rng(version)
        rows = []
        for c in range(6):
            for r in range(5):
                a = rng.integers(0, 255, (2, 8, 8)).astype("uint16")
                a[:, 0, :3] = 0
                rows.append({"col": c, "row": r, **raster.from_numpy(a, nodata=0, valid=(a != 7).any(axis=0))})
        df = spark.createDataFrame(rows, raster.spark_schema())
        if version == 4:
            df = df.drop("mask")
        sfclayer.write(df, path, bounds=(0, 0, 5, 4), partitions=3)
    else:  # manifests: one data file a leaf, two manifests a node
        with helpers.manifest_capacities(spark):
            sfclayer.write(s3_helpers.tiles(spark, 8, 6, payload=40, partitions=3), path, bounds=(0, 0, 7, 5),
                           partitions=4)
    return helpers.metadata(path)


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_every_later_format_reads_from_the_store_as_the_jvm_reads_it_locally(server, spark, tmp_path, version):
    """Formats 2 to 6 (format 1: above) uploaded to moto: the in-process reader's answers from the store
    equal the JVM path's on the local copy (tiles, counts, look-ups, the document's files)."""
    import sfclayer

    local = str(tmp_path / f"format{version}")
    md = _layer_of_format(spark, local, version)
    assert md["formatVersion"] == version
    _upload(server, local, f"format{version}")
    jvm = sfclayer.open(spark, local)
    remote = sfclayer.open(f"s3://{BUCKET}/format{version}", storage_options=creds(server))
    try:
        assert remote.metadata["formatVersion"] == version
        assert remote.count() == jvm.count() > 0
        got = sorted(map(sorted, (t.items() for t in remote.query())))
        assert got == sorted(map(sorted, (t.items() for t in jvm.query())))
        for key in [(0, 0), (5, 4), (2, 3), (7, 5), (9, 9)]:  # (9, 9): no tile; rasters: not (7, 5) either
            assert _answer(lambda: remote.get(*key)) == _answer(lambda: jvm.get(*key)), key
        assert [f["name"] for f in remote.metadata["files"]] == [f["name"] for f in jvm.metadata["files"]]
    finally:
        jvm.close()
        remote.close()


def test_a_source_pickles_without_its_client(source):
    copy = pickle.loads(pickle.dumps(source))
    assert copy.read("_sfclayer/v00000002.json") == b'{"version": 2}'


FORK = """
import os, sys
from sfclayer.reader.objectstore import open_objectstore
src = open_objectstore(sys.argv[1], endpoint=sys.argv[2], access_key_id="k", secret_access_key="s", region="us-east-1")
if sys.argv[3] == "after":
    assert src.read("_sfclayer/v00000001.json") == b'{"version": 1}'
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        out = b"ok " + src.read("_sfclayer/v00000002.json")
    except BaseException as e:
        out = f"{type(e).__name__}: {e}".encode()
    os.write(w, out)
    os._exit(0)
os.close(w)
child = os.read(r, 4096).decode()
os.waitpid(pid, 0)
print(child)
print("parent", src.read("_sfclayer/v00000001.json").decode())
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_forked_child_reads_or_refuses_clearly_and_never_hangs(server, when):
    """Forked before the source made a request: the child builds its own obstore client. Forked after:
    obstore's runtime is unusable in the child; it reads through fsspec (s3fs) when that is installed,
    else it refuses naming the remedy. The parent reads on either way."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(FORK), f"s3://{BUCKET}/layer", server.endpoint, when],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    child, parent = out.stdout.strip().splitlines()[-2:]
    assert parent == 'parent {"version": 1}'
    try:
        import s3fs  # noqa: F401
        has_fsspec = True
    except ImportError:
        has_fsspec = False
    if when == "before" or has_fsspec:
        assert child == 'ok {"version": 2}'
    else:
        assert child.startswith("StorageError: ") and "'spawn' or 'forkserver'" in child and "s3fs" in child, child


def test_opening_a_log_longer_than_a_page_without_a_copy_lists_from_the_hint_in_four_requests(server):
    """A log of more version documents than one LIST page written by writers that keep no copy of the
    newest document (``_sfclayer/_newest.json``, which opens in 2: integration/test_s3_open.py): the
    copy's GET finds none, the ``_last_version`` hint's GET, one LIST from just before the hinted
    document (start-after), then the newest is read: 4 requests however long the log (the whole listing
    took one LIST a 1,000 keys). A hint behind the newest still finds it; a stale hint (its version
    vacuumed) or none lists the log."""
    from sfclayer.errors import CorruptLayer
    from sfclayer.reader.documents import VersionLog

    n = 2_500
    src = open_objectstore(f"s3://{BUCKET}/long-log", **creds(server))
    client = src._requests()

    def put(name, data):
        client._obs.put(client._store, client._p(name), data)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: put(f"_sfclayer/v{i:08d}.json", b'{"version": %d}' % i), range(1, n + 1)))
    put("_sfclayer/manifests/m-1.json", b"{}")
    log = VersionLog(src, f"s3://{BUCKET}/long-log")
    for hint in (n, n - 3):
        put("_sfclayer/_last_version", str(hint).encode())
        newest, requests, _ = counted(server, log._newest_from_copy)
        assert newest == (n, len(b'{"version": %d}' % n)), hint
        lists = [q for m, _, q in requests if "list-type=2" in q]
        assert len(requests) == 3 and len(lists) == 1, requests
        assert requests[0][:2] == ("GET", f"/{BUCKET}/long-log/_sfclayer/_newest.json")
        assert requests[1][:2] == ("GET", f"/{BUCKET}/long-log/_sfclayer/_last_version")
        assert f"start-after=long-log%2F_sfclayer%2Fv{hint - 1:08d}.json" in lists[0], lists[0]
        server.reset()
        with pytest.raises(CorruptLayer):  # the stand-in documents do not parse: the GET was made
            log.current()
        assert len(server.requests()) == 4 and server.requests()[-1][1] == f"/{BUCKET}/long-log/_sfclayer/v{n:08d}.json"
    client._obs.delete(client._store, client._p("_sfclayer/v00000005.json"))  # as vacuum removes old versions
    for hint in (b"5", b"junk"):
        put("_sfclayer/_last_version", hint)
        assert counted(server, log._newest_from_copy)[0] is None  # then current() lists the log
        server.reset()
        with pytest.raises(CorruptLayer):
            log.current()
        assert server.requests()[-1][1] == f"/{BUCKET}/long-log/_sfclayer/v{n:08d}.json"


def test_opening_with_a_current_copy_of_the_newest_document_is_two_requests(server):
    """The writers' copy ``_sfclayer/_newest.json`` (docs/FORMAT.md section 6): its GET and one LIST from
    its version, whose listed ETag (the MD5 of the bytes) shows the copy is the newest document; a copy
    of other bytes under that number, or one behind, costs the listed newest's GET. The stand-in
    documents do not parse: the error names the version document, whichever bytes were parsed.
    (integration/test_s3_open.py: both readers on 10^4 valid documents.)"""
    from concurrent.futures import ThreadPoolExecutor

    from sfclayer.errors import CorruptLayer
    from sfclayer.reader.documents import VersionLog

    n = 1_500
    src = open_objectstore(f"s3://{BUCKET}/copied-log", **creds(server))
    client = src._requests()

    def put(name, data):
        client._obs.put(client._store, client._p(name), data)

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: put(f"_sfclayer/v{i:08d}.json", b'{"version": %d}' % i), range(1, n + 1)))
    log = VersionLog(src, f"s3://{BUCKET}/copied-log")
    newest = f"/{BUCKET}/copied-log/_sfclayer/v{n:08d}.json"
    for copy, want in ((b'{"version": %d}' % n, ["GET", "LIST"]), (b'{"version": %d, "x": 1}' % n, ["GET", "LIST", "GET"]),
                       (b'{"version": %d}' % (n - 1), ["GET", "LIST", "GET"])):
        put("_sfclayer/_newest.json", copy)
        server.reset()
        with pytest.raises(CorruptLayer, match=f"v{n:08d}.json"):
            log.current()
        got = ["LIST" if "list-type=2" in q else m for m, _, q in server.requests()]
        assert got == want, (copy, server.requests())
        assert len(want) == 2 or server.requests()[-1][1] == newest
