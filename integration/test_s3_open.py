"""Opening a layer's newest version on S3 with a long log (issue 38: a stream commits a version a
micro-batch), counted at moto's server, for both readers: the JVM's ``commit.VersionLog.current()``
through S3A and the in-process reader's ``VersionLog.current()`` through obstore.

A log of 10^4 valid version documents (one real document Spark wrote, renumbered, its checksum
recomputed) opens in 2 requests when the writers' copy ``_sfclayer/_newest.json`` is current: its GET
and one LIST from just before its version (start-after). Whatever the copy and the ``_last_version``
hint say (behind by 1 or by many, ahead of the log, missing, garbage, another document of the same
number, a version vacuumed), both readers open the true newest version, checked against an independent
reference: the highest ``v<N>.json`` a full listing shows, and its bytes.
"""

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import sfclayer
from integration.s3 import ACCESS_KEY, REGION, SECRET_KEY
from integration.s3 import tiles as s3_tiles

pytestmark = pytest.mark.s3
pytest.importorskip("obstore")

from sfclayer.errors import LayerNotFound  # noqa: E402
from sfclayer.reader.datafile import crc32c  # noqa: E402
from sfclayer.reader.documents import VersionLog as PyVersionLog  # noqa: E402
from sfclayer.reader.objectstore import open_objectstore  # noqa: E402

N = 10_000


def renumbered(template: bytes, version: int, note: str | None = None) -> bytes:
    """``template`` as version ``version``'s document (and, with ``note``, another document of that
    number): a valid document, its CRC32C trailer recomputed (FORMAT.md section 9)."""
    doc = json.loads(template)
    doc.pop("checksum")
    doc["version"] = version
    if note is not None:
        doc["writeId"] = note
    body = json.dumps(doc, separators=(",", ":"))[:-1] + ',"checksum":"00000000"}'
    data = body.encode()
    at = data.rindex(b"00000000")
    return data[:at] + f"{crc32c(data):08x}".encode() + data[at + 8:]


@pytest.fixture(scope="module")
def template(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("open") / "layer")
    sfclayer.write(s3_tiles(spark, 4, 4, payload=16), path, bounds=(0, 0, 3, 3), partitions=1)
    with open(os.path.join(path, "_sfclayer", "v00000001.json"), "rb") as f:
        return f.read()


class Log:
    """A layer path on moto whose ``_sfclayer/`` the test fills directly (obstore PUTs)."""

    def __init__(self, spark, s3, path):
        self.spark, self.s3, self.path = spark, s3, path
        self.src = open_objectstore(path, endpoint=s3.server.endpoint, access_key_id=ACCESS_KEY,
                                    secret_access_key=SECRET_KEY, region=REGION)
        self.client = self.src._requests()

    def put(self, name, data):
        self.client._obs.put(self.client._store, self.client._p(name), data)

    def delete(self, name):
        self.client._obs.delete(self.client._store, self.client._p(name))

    def fill(self, template, versions):
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda v: self.put(f"_sfclayer/v{v:08d}.json", renumbered(template, v)), versions))

    def truth(self):
        """The newest document by an independent reference: every key listed, the highest number's bytes."""
        names = [n for n, _ in self.src.list("_sfclayer") if n.startswith("v") and n.endswith(".json")]
        newest = max(int(n[1:-5]) for n in names)
        return newest, self.src.read(f"_sfclayer/v{newest:08d}.json")

    def jvm(self):
        """(version, SHA-256 of its bytes, requests) of the JVM's VersionLog.current()."""
        jvm = self.spark._jvm
        jvm.io.sfclayer.lookup.ValueReader.forgetSharedIndexes()
        log = jvm.io.sfclayer.commit.VersionLog(self.spark._jsc.hadoopConfiguration(), jvm.org.apache.hadoop.fs.Path(self.path))
        log.fileSystem()  # the filesystem is created (its bucket probe) before counting
        self.s3.server.reset()
        md = log.current()
        reqs = self.s3.server.requests()
        from py4j.java_gateway import get_field
        return get_field(md, "version"), get_field(md, "digest"), reqs

    def py(self):
        self.s3.server.reset()
        doc = PyVersionLog(self.src, self.path).current()
        return doc.version, doc, self.s3.server.requests()


def kinds(reqs):
    return ["LIST" if "list-type=2" in q else m for m, _, q in reqs]


@pytest.fixture(scope="module")
def long_log(spark, s3, template):
    log = Log(spark, s3, s3.path("long-log"))
    log.fill(template, range(1, N + 1))
    return log


def set_pointers(log, copy, hint):
    for name, data in (("_sfclayer/_newest.json", copy), ("_sfclayer/_last_version", hint)):
        if data is None:
            log.delete(name)
        else:
            log.put(name, data)


def check_both(log, expect_requests=None):
    newest, data = log.truth()
    v, digest, jreqs = log.jvm()
    assert v == newest and digest == hashlib.sha256(data).hexdigest(), (v, newest)
    pv, doc, preqs = log.py()
    assert pv == newest and doc.doc == json.loads(data)
    if expect_requests is not None:
        assert (len(jreqs), len(preqs)) == expect_requests, (kinds(jreqs), kinds(preqs))
    return jreqs, preqs


def test_a_current_copy_opens_10k_versions_in_two_requests(long_log, template):
    set_pointers(long_log, renumbered(template, N), str(N).encode())
    jreqs, preqs = check_both(long_log, (2, 2))
    prefix = long_log.s3.key_prefix(long_log.path)
    for reqs in (jreqs, preqs):
        assert kinds(reqs) == ["GET", "LIST"] and reqs[0][1] == f"{prefix}/_sfclayer/_newest.json", reqs
        assert f"start-after={prefix[len('/sfclayer-tests/'):].replace('/', '%2F')}%2F_sfclayer%2Fv{N - 1:08d}.json" \
            in reqs[1][2], reqs[1]


@pytest.mark.parametrize("behind,pages", [(1, 1), (2_500, 3)])
def test_a_copy_behind_the_log_still_opens_the_newest(long_log, template, behind, pages):
    """A writer died before refreshing the copy (behind by 1), or writers that predate it committed
    since (behind by many): the LIST from its version names the newer ones, the newest is read."""
    set_pointers(long_log, renumbered(template, N - behind), str(N - behind).encode())
    jreqs, preqs = check_both(long_log, (2 + pages, 2 + pages))
    for reqs in (jreqs, preqs):
        assert kinds(reqs) == ["GET"] + ["LIST"] * pages + ["GET"] and reqs[-1][1].endswith(f"/v{N:08d}.json")


def test_a_copy_of_another_document_of_that_number_is_not_taken_for_it(long_log, template):
    """The copy names the newest version but its bytes are not that document's (a layer deleted and
    written again at its path, a backup restored): the listed ETag is not their MD5, the document is read."""
    set_pointers(long_log, renumbered(template, N, note="20260101T000000-deadbeef"), str(N).encode())
    jreqs, preqs = check_both(long_log, (3, 3))
    assert kinds(jreqs) == kinds(preqs) == ["GET", "LIST", "GET"]


@pytest.mark.parametrize("copy,hint", [("missing", "current"), ("garbage", "behind"), ("ahead", "current"),
                                       ("missing", "missing"), ("garbage", "garbage"), ("ahead", "ahead")])
def test_without_a_usable_copy_the_hint_or_the_whole_log_finds_the_newest(long_log, template, copy, hint):
    """A missing or unparsable copy, or one ahead of the log (its version not listed): the hint names the
    version to list from (GET copy, GET hint, LIST, GET: 4; a copy ahead costs its LIST too); a hint
    ahead of the log or neither usable: the log is listed from its start, as before."""
    copies = {"missing": None, "garbage": b"\x00junk{", "ahead": renumbered(template, N + 7)}
    hints = {"missing": None, "garbage": b"junk", "current": str(N).encode(), "behind": str(N - 40).encode(),
             "ahead": str(N + 7).encode()}
    set_pointers(long_log, copies[copy], hints[hint])
    jreqs, preqs = check_both(long_log)
    if hint in ("current", "behind"):
        want = ["GET", "LIST", "GET", "LIST", "GET"] if copy == "ahead" else ["GET", "GET", "LIST", "GET"]
        assert kinds(jreqs) == kinds(preqs) == want, (kinds(jreqs), kinds(preqs))
    else:  # the whole log, as before: a LIST from its start
        for reqs in (jreqs, preqs):
            assert any("list-type=2" in q and ("start-after" not in q or "_sfclayer%2Fv&" in q + "&") for _, _, q in reqs)


def test_a_copy_whose_version_was_vacuumed_lists_the_log(spark, s3, template):
    log = Log(spark, s3, s3.path("vacuumed"))
    log.fill(template, range(1, 13))
    set_pointers(log, renumbered(template, 5), b"5")
    log.delete("_sfclayer/v00000005.json")  # vacuum removed it (and would the older ones)
    check_both(log)
    set_pointers(log, renumbered(template, 12), b"12")
    check_both(log, (2, 2))


def test_versions_past_ten_to_the_eighth_are_found_though_they_sort_first(spark, s3, template):
    """``v100000000.json`` sorts before ``v99999999.json``: a LIST from a copy of an 8-digit version
    cannot show it, so seeing the last 8-digit name means listing the whole log."""
    log = Log(spark, s3, s3.path("long-names"))
    log.fill(template, [99_999_998, 99_999_999, 100_000_000, 100_000_001])
    set_pointers(log, renumbered(template, 99_999_998), b"99999998")
    check_both(log)
    assert log.truth()[0] == 100_000_001
    set_pointers(log, renumbered(template, 100_000_001), b"100000001")
    check_both(log, (2, 2))


def test_a_copy_without_any_version_document_is_no_layer(spark, s3, template):
    """A path whose documents are all gone (deleted by hand) but whose copy and hint remain: LayerNotFound
    from both readers, naming the path, never the copy's document."""
    log = Log(spark, s3, s3.path("no-versions"))
    set_pointers(log, renumbered(template, 3), b"3")
    log.put("data-1/_pending", b"")
    with pytest.raises(Exception) as e:
        log.jvm()
    assert "SFCLAYER_LAYER_NOT_FOUND" in str(e.value) and "no committed version" in str(e.value)
    with pytest.raises(LayerNotFound, match="no committed version"):
        log.py()


def test_a_write_through_s3a_keeps_the_copy_and_opens_in_two(spark, s3):
    """The JVM writer refreshes the copy after each commit: it is the newest document byte for byte, and
    both readers open the layer with its GET and one LIST."""
    path = s3.path("written")
    sfclayer.write(s3_tiles(spark, 4, 4, payload=16), path, bounds=(0, 0, 3, 3), partitions=1)
    sfclayer.write(s3_tiles(spark, 4, 4, keys=[(1, 1)], bump=1, payload=16), path, mode="append")
    log = Log(spark, s3, path)
    assert log.src.read("_sfclayer/_newest.json") == log.src.read("_sfclayer/v00000002.json")
    jreqs, preqs = check_both(log, (2, 2))
    assert kinds(jreqs) == kinds(preqs) == ["GET", "LIST"]
