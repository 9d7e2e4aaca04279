"""What opening a layer's newest version costs the in-process reader on S3 when its log holds many
version documents (issue 38: a streaming query commits a version per micro-batch). Runs alone:

    .venv/bin/python bench/open_requests.py [--versions 10,1000,10000]

and writes its block of bench/RESULTS.md. moto's S3 server on loopback (integration/s3.py) counts the
requests; the log is filled with N small objects ``_sfclayer/v<n>.json`` and the ``_last_version`` hint
(only the newest document is ever read on opening, so the others need not parse, and the newest one
does not either: the count stops at its GET). ``sfclayer.reader.documents.VersionLog.current()`` is what
``sfclayer.open(path)`` runs first (the JVM's ``format.VersionLog.current()`` lists the whole log on an
object store: one ``listStatus`` of ``_sfclayer/``, which S3A pages 1,000 keys at a time, then one GET).
"""

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from integration import s3 as s3_helpers  # noqa: E402
from sfclayer.errors import CorruptLayer  # noqa: E402
from sfclayer.reader.documents import VersionLog  # noqa: E402
from sfclayer.reader.objectstore import ObjectStoreSource  # noqa: E402


def measure(server, bucket, n):
    creds = {"endpoint": server.endpoint, "access_key_id": s3_helpers.ACCESS_KEY,
             "secret_access_key": s3_helpers.SECRET_KEY, "region": s3_helpers.REGION}
    src = ObjectStoreSource(f"s3://{bucket}/log-{n}", **creds)
    client = src._requests()

    def put(i):
        client._obs.put(client._store, client._p(f"_sfclayer/v{i:08d}.json"), b'{"version": %d}' % i)

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(1, n + 1)))
    client._obs.put(client._store, client._p("_sfclayer/_last_version"), str(n).encode())
    server.reset()
    t0 = time.perf_counter()
    try:
        VersionLog(src, f"s3://{bucket}/log-{n}").current()
    except CorruptLayer:
        pass  # the stand-in document does not parse: its GET was the last request of opening
    seconds = time.perf_counter() - t0
    reqs = server.requests()
    assert reqs[-1][:2] == ("GET", f"/{bucket}/log-{n}/_sfclayer/v{n:08d}.json"), reqs[-1]
    return {"versions": n, "requests": len(reqs), "lists": sum(1 for r in reqs if "list-type=2" in r[2]),
            "gets": sum(1 for r in reqs if r[0] == "GET" and "list-type=2" not in r[2]), "ms": round(seconds * 1000)}


def section(res, command):
    rows = [f"| {r['versions']:,} | **{r['requests']}** | {r['lists']} | {r['gets']} | {r['ms']:,} ms |" for r in res]
    return "\n".join([
        "## Opening the newest version on S3 with many versions",
        "",
        f"`{command}` — requests the in-process reader makes to find and read the newest version document"
        " (`VersionLog.current()`, the first step of `sfclayer.open(path)`) on moto's S3 server, with N version"
        " documents in `_sfclayer/`. Times are moto's on loopback (a real S3 LIST page takes"
        " tens of milliseconds).",
        "",
        "| version documents | requests | LIST pages | GETs | time |",
        "|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "How (docs/FORMAT.md section 6): one LIST of the keys after `_sfclayer/v` (the documents only, S3's start-after); when they fill a page (1,000 keys), a GET of the `_last_version` hint `N` and a LIST from just before `v<N>.json`, which shows the hinted document still exists (else the hint is stale and the whole log is listed) and names every newer one; then the newest document's GET. Before, the reader listed the whole log (`_sfclayer/` with a delimiter): 2, 3 and 12 requests (11 LIST pages; 2.1 s on moto at load ~7) for these logs. The JVM's `VersionLog` still does that (Hadoop's listing has no start-after). Two requests for a long log would need a start known without a request of its own (reading the hint is one): a reader that remembers the newest version it opened, or a writer-kept object holding the newest document itself (GET it, LIST start-after it to confirm nothing newer: an optional new file in the log, a format addition).",
        "",
    ])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--versions", default="10,1000,10000")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    server = s3_helpers.MotoS3().start()
    try:
        server.create_bucket("sfclayer-open")
        res = [measure(server, "sfclayer-open", int(n)) for n in args.versions.split(",")]
    finally:
        server.stop()
    import report

    command = "python bench/open_requests.py --versions " + args.versions
    report.write_section("open_requests", section(res, command), path=args.out)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
