"""obstore against fsspec/s3fs for the in-process reader's object-store source (issue 33): the request
count and latency of a cold look-up on moto's S3 server with a cloud-like 20 ms before each answer.

    .venv/bin/python bench/object_stores.py [--latency-ms 20] [--runs 9] [--s3fs-path DIR] [--out bench/RESULTS.md]

A cold look-up is what a reader does in a fresh process: **open** (list ``_sfclayer/`` with a
delimiter, then GET the newest version document) and the **first touch** of a data file (GET its
``index`` whole, then one ranged GET of ``data``), then a **look-up with the index cached** (one
ranged GET). Each run is a fresh client in a fresh subprocess (no pooled connection, no cache); the
server (moto, in this process) counts the requests. Objects have a real layer's sizes (a 6 KiB
version document among 5, a 1 KiB index, a 3 MiB data file read 100 KiB at a time). ``--s3fs-path``
puts a directory holding s3fs first on the client's path (s3fs pins a botocore other than moto's:
install it apart with ``pip install --target DIR s3fs``). Writes its block ``object-stores`` of
RESULTS.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BUCKET = "sfclayer-stores"
PREFIX = "layer"
DOC = 6 << 10
INDEX = 1 << 10
DATA = 3 << 20
RANGE = (1 << 20, 100 << 10)  # (start, length) of the record read


def _client_obstore(endpoint, key, secret):
    import obstore
    from obstore.store import S3Store

    store = S3Store(BUCKET, endpoint=endpoint, access_key_id=key, secret_access_key=secret,
                    region="us-east-1", allow_http=True)

    def listing(prefix):
        r = obstore.list_with_delimiter(store, prefix)
        return [(o["path"], o["size"]) for o in r["objects"]]

    def read(path):
        return bytes(obstore.get(store, path).bytes())

    def read_range(path, start, length):
        return bytes(obstore.get_range(store, path, start=start, length=length))

    return listing, read, read_range


def _client_s3fs(endpoint, key, secret):
    import s3fs

    fs = s3fs.S3FileSystem(key=key, secret=secret, endpoint_url=endpoint, skip_instance_cache=True,
                           use_listings_cache=False, max_concurrency=1, client_kwargs={"region_name": "us-east-1"})

    def listing(prefix):
        return [(o["name"].split("/", 1)[1], o["size"]) for o in fs.ls(f"{BUCKET}/{prefix}", detail=True)
                if o["type"] == "file"]

    def read(path):
        return fs.cat_file(f"{BUCKET}/{path}")

    def read_range(path, start, length):
        return fs.cat_file(f"{BUCKET}/{path}", start=start, end=start + length)

    return listing, read, read_range


def client(kind, endpoint, key, secret):
    """One cold look-up in this (fresh) process: prints the step times as JSON."""
    t0 = time.perf_counter()
    listing, read, read_range = {"obstore": _client_obstore, "s3fs": _client_s3fs}[kind](endpoint, key, secret)
    t1 = time.perf_counter()
    docs = sorted(p for p, _ in listing(f"{PREFIX}/_sfclayer/") if p.endswith(".json"))
    doc = read(docs[-1])
    t2 = time.perf_counter()
    index = read(f"{PREFIX}/data-1/part-r-00000-0/index")
    record = read_range(f"{PREFIX}/data-1/part-r-00000-0/data", *RANGE)
    t3 = time.perf_counter()
    again = read_range(f"{PREFIX}/data-1/part-r-00000-0/data", RANGE[0] + RANGE[1], RANGE[1])
    t4 = time.perf_counter()
    warm = []
    for i in range(5):
        t = time.perf_counter()
        read_range(f"{PREFIX}/data-1/part-r-00000-0/data", RANGE[1] * i, RANGE[1])
        warm.append(time.perf_counter() - t)
    assert len(doc) == DOC and len(index) == INDEX and len(record) == len(again) == RANGE[1]
    print(json.dumps({"setup": t1 - t0, "open": t2 - t1, "first": t3 - t2, "cached": t4 - t3,
                      "warm": statistics.median(warm)}))


def measure(server, kind, runs, latency, extra_path=None):
    """``runs`` cold look-ups, each in a fresh subprocess: p50 of each step and its requests."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH")) if p)
    steps, counts = [], None
    for _ in range(runs):
        server.latency = 0.0
        server.reset()
        server.latency = latency
        out = subprocess.run([sys.executable, __file__, "--client", kind, "--endpoint", server.endpoint],
                             env=env, capture_output=True, text=True, timeout=300)
        if out.returncode:
            return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
        steps.append(json.loads(out.stdout.strip().splitlines()[-1]))
        log = server.requests()
        counts = {"total": len(log), "methods": sorted({m for m, _, _ in log}),
                  "requests": [f"{m} {p}{' ?' + q if q else ''}" for m, p, q in log]}
    server.latency = 0.0
    p50 = {k: statistics.median(s[k] for s in steps) * 1000 for k in steps[0]}
    return {"p50_ms": p50, **counts}


def seed(server):
    """The objects of a small layer, at real sizes."""
    import boto3

    from integration import s3 as s3_helpers

    s3 = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=s3_helpers.ACCESS_KEY,
                      aws_secret_access_key=s3_helpers.SECRET_KEY, region_name=s3_helpers.REGION)
    for v in range(1, 6):
        s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/_sfclayer/v{v:08d}.json", Body=b"{" + b" " * (DOC - 2) + b"}")
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/_sfclayer/manifests/m-1.json", Body=b"{}")
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/data-1/part-r-00000-0/index", Body=os.urandom(INDEX))
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/data-1/part-r-00000-0/data", Body=os.urandom(DATA))


def table(results, latency_ms):
    ms = latency_ms
    lines = [
        "## Object-store client for the in-process reader (bench/object_stores.py, issue 33)",
        "",
        f"moto's S3 server on loopback waiting {ms:g} ms before each answer; each run a fresh client in a",
        "fresh process (no pooled connection); p50 of the runs. *Requests* counted at the server.",
        "",
        "| step | requests | obstore ms | s3fs ms | obstore over the requests' latency | s3fs over |",
        "|---|---|---|---|---|---|",
    ]
    o, s = results.get("obstore", {}), results.get("s3fs", {})
    steps = [("client created", "setup", 0), ("open: LIST `_sfclayer/` + GET newest document", "open", 2),
             ("first touch: GET `index`, ranged GET `data`", "first", 2),
             ("look-up, index cached: ranged GET `data`", "cached", 1),
             ("the same, 5 more (p50 of them)", "warm", 1)]

    def cell(r, k, n, over=False):
        if "p50_ms" not in r:
            return r.get("error", "not run")[:60]
        v = r["p50_ms"][k]
        return f"{v - n * ms:+.1f}" if over else f"{v:.1f}"

    for label, k, n in steps:
        lines.append(f"| {label} | {n} | {cell(o, k, n)} | {cell(s, k, n)} | {cell(o, k, n, True)} | {cell(s, k, n, True)} |")
    for name, r in (("obstore", o), ("s3fs", s)):
        if "total" in r:
            lines.append("")
            lines.append(f"{name}: {r['total']} requests a run, the cold look-up then 5 ranged GETs ({', '.join(r['methods'])}): "
                         + "; ".join(r["requests"]))
    lines += ["",
              f"Load average at the start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (moto, a Python server, "
              "answers in this process: its own time is in both columns' overhead).",
              "",
              "**Choice: obstore.** The same requests (s3fs told `max_concurrency=1`, else it HEADs before a whole-object "
              "GET), a fresh process ready in tens of ms instead of seconds (botocore loads its service models), less "
              "per request. Against it: obstore's Tokio runtime does not survive `fork()` once it ran (a child hangs or "
              "crashes), where s3fs recreates its client per process; so the reader's source uses fsspec (s3fs, gcsfs, "
              "adlfs) in a process forked after obstore made requests, and refuses with `StorageError` naming the remedy "
              "(`spawn`/`forkserver` workers) when fsspec is not installed (tests/test_objectstore.py).",
              ""]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--client", choices=["obstore", "s3fs"], help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--s3fs-path", help="a directory holding s3fs, put first on the s3fs client's path")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    if args.client:
        sys.path[:0] = [ROOT]
        from integration import s3 as s3_helpers

        return client(args.client, args.endpoint, s3_helpers.ACCESS_KEY, s3_helpers.SECRET_KEY)
    sys.path[:0] = [HERE, ROOT, os.path.join(ROOT, "python")]
    from integration import s3 as s3_helpers

    import report

    server = s3_helpers.MotoS3().start()
    try:
        server.create_bucket(BUCKET)
        seed(server)
        results = {kind: measure(server, kind, args.runs, args.latency_ms / 1000,
                                 args.s3fs_path if kind == "s3fs" else None) for kind in ("obstore", "s3fs")}
    finally:
        server.stop()
    text = table(results, args.latency_ms)
    print(text)
    report.write_section("object-stores", text + f"\nCommand: `.venv/bin/python bench/object_stores.py --latency-ms "
                         f"{args.latency_ms:g} --runs {args.runs}`\n", args.out)


if __name__ == "__main__":
    main()
