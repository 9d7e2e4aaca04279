"""What opening a layer's newest version costs on S3 when its log holds many version documents (issue
38: a streaming query commits a version per micro-batch), for both readers: the in-process reader
(``sfclayer.reader.documents.VersionLog.current()``, what ``sfclayer.open(path)`` runs first, through
obstore) and the JVM's (``commit.VersionLog.current()``, through S3A). Runs alone:

    .venv/bin/python bench/open_requests.py [--versions 10,1000,10000]

and writes its block of bench/RESULTS.md. moto's S3 server on loopback (integration/s3.py) counts the
requests; the log is filled with N valid version documents (one document the JVM wrote, renumbered,
its CRC32C recomputed) so both readers open and check the newest completely. S3A is told to page
1,000 keys a LIST (``fs.s3a.paging.maximum``), as S3 does whatever is asked (moto would return 5,000).

Cases: the writers' copy ``_sfclayer/_newest.json`` current (what every commit leaves); the copy
behind the log by one (a writer died before refreshing it); no copy, only the ``_last_version`` hint
(a log written by writers that predate the copy); and, for the JVM, the way it opened before (one
listing of ``_sfclayer/`` through Hadoop, then the newest's GET: counted as ``versions()``'s LIST
requests plus that GET).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from integration import s3 as s3_helpers  # noqa: E402
from sfclayer.reader.datafile import crc32c  # noqa: E402
from sfclayer.reader.documents import VersionLog  # noqa: E402
from sfclayer.reader.objectstore import ObjectStoreSource  # noqa: E402

BUCKET = "sfclayer-open"


def renumbered(template, version):
    """``template`` (a version document's bytes) as version ``version``'s, its checksum trailer recomputed."""
    doc = json.loads(template)
    doc.pop("checksum")
    doc["version"] = version
    data = (json.dumps(doc, separators=(",", ":"))[:-1] + ',"checksum":"00000000"}').encode()
    at = data.rindex(b"00000000")
    return data[:at] + f"{crc32c(data):08x}".encode() + data[at + 8:]


def lists(reqs):
    return sum(1 for r in reqs if "list-type=2" in r[2])


def measure(spark, server, template, n):
    path = f"s3a://{BUCKET}/log-{n}"
    creds = {"endpoint": server.endpoint, "access_key_id": s3_helpers.ACCESS_KEY,
             "secret_access_key": s3_helpers.SECRET_KEY, "region": s3_helpers.REGION}
    src = ObjectStoreSource(path, **creds)
    client = src._requests()

    def put(name, data):
        client._obs.put(client._store, client._p(name), data)

    def delete(name):
        client._obs.delete(client._store, client._p(name))

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda i: put(f"_sfclayer/v{i:08d}.json", renumbered(template, i)), range(1, n + 1)))
    jvm = spark._jvm
    log = jvm.io.sfclayer.commit.VersionLog(spark._jsc.hadoopConfiguration(), jvm.org.apache.hadoop.fs.Path(path))
    log.fileSystem()

    def counted(fn):
        server.reset()
        t0 = time.perf_counter()
        version = fn()
        ms = (time.perf_counter() - t0) * 1000
        reqs = server.requests()
        assert version == n, (version, n)
        return {"requests": len(reqs), "lists": lists(reqs), "ms": ms}

    def py():
        return VersionLog(src, path).current().version

    def java():
        from py4j.java_gateway import get_field
        return get_field(log.current(), "version")

    out = {"versions": n}
    cases = {"current": (renumbered(template, n), str(n).encode()),
             "behind": (renumbered(template, n - 1) if n > 1 else None, str(max(1, n - 1)).encode()),
             "hint": (None, str(n).encode())}
    for case, (copy, hint) in cases.items():
        (put if copy is not None else lambda name, _: delete(name))("_sfclayer/_newest.json", copy)
        put("_sfclayer/_last_version", hint)
        for who, fn in (("py", py), ("jvm", java)):
            fn()  # warm: JIT, connections
            runs = [counted(fn) for _ in range(3)]
            out[f"{who}_{case}"] = {**runs[-1], "ms": min(r["ms"] for r in runs)}
    server.reset()
    listed = len(log.versions())
    reqs = server.requests()
    assert listed == n
    out["jvm_before"] = {"requests": len(reqs) + 1, "lists": lists(reqs)}
    return out


def section(res, command):
    def cell(r):
        return f"**{r['requests']}** ({r['lists']} LIST)"

    rows = [f"| {r['versions']:,} | {cell(r['py_current'])} | {cell(r['jvm_current'])} | {r['py_current']['ms']:.0f} / "
            f"{r['jvm_current']['ms']:.0f} ms | {cell(r['py_behind'])} | {cell(r['jvm_behind'])} | {cell(r['py_hint'])} | "
            f"{cell(r['jvm_hint'])} | {r['jvm_before']['requests']} ({r['jvm_before']['lists']} LIST) |" for r in res]
    return "\n".join([
        "## Opening the newest version on S3 with many versions",
        "",
        f"`{command}` — requests each reader makes to find, read and check the newest version document on"
        " moto's S3 server with N valid version documents in `_sfclayer/`: the in-process reader (`py`:"
        " `VersionLog.current()`, the first step of `sfclayer.open(path)`, through obstore) and the JVM's"
        " (`commit.VersionLog.current()`, through S3A paging 1,000 keys a LIST as S3 does). Times are the"
        " best of 3 on loopback (py / JVM; a real S3 request takes tens of milliseconds).",
        "",
        "| version documents | py, copy current | JVM, copy current | time | py, copy behind by 1 |"
        " JVM, copy behind by 1 | py, hint only | JVM, hint only | JVM before (listing + GET) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "How (docs/FORMAT.md section 6, \"How readers find the newest version\"): every commit on an object"
        " store leaves `_sfclayer/_newest.json`, a byte-for-byte copy of the document it published. A reader"
        " GETs it and LISTs the documents after `v<N-1>.json` (S3's start-after; the JVM through S3A's own"
        " S3 client, Hadoop's listing having no start-after): when `v<N>.json` is the highest listed and its"
        " ETag is the MD5 of the copy, the copy is the newest document (2 requests); a newer one listed"
        " costs its GET (a stale copy: 3); no copy (a log of writers that predate it) lists from the"
        " `_last_version` hint instead (4; a log of under 1,000 documents without a copy also costs 4, where the in-process reader listed it in 2 before). Before: the in-process reader made 4 requests for 10^3 and"
        " 10^4 documents (a LIST of the first page, the hint's GET, a LIST from it, the GET), 2 for 10;"
        " the JVM listed the whole log through Hadoop (last column).",
        "",
    ])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--versions", default="10,1000,10000")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    import sfclayer

    server = s3_helpers.MotoS3().start()
    spark = sfclayer.session("local[1]", app_name="sfclayer-bench-open", s3=str(s3_helpers.S3A_JARS_DIR),
                             **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        server.create_bucket(BUCKET)
        s3_helpers.configure_spark(spark, {**s3_helpers.s3a_settings(BUCKET, server.endpoint),
                                           f"fs.s3a.bucket.{BUCKET}.paging.maximum": "1000"})
        work = tempfile.mkdtemp(prefix="sfclayer-bench-open-")
        layer = os.path.join(work, "layer")
        sfclayer.write(s3_helpers.tiles(spark, 4, 4, payload=16, partitions=1), layer, bounds=(0, 0, 3, 3),
                       partitions=1)
        with open(os.path.join(layer, "_sfclayer", "v00000001.json"), "rb") as f:
            template = f.read()
        res = [measure(spark, server, template, int(n)) for n in args.versions.split(",")]
    finally:
        spark.stop()
        server.stop()
    import report

    command = "python bench/open_requests.py --versions " + args.versions
    report.write_section("open_requests", section(res, command), path=args.out)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
