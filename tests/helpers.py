"""Small helpers shared by the tests: inspecting layers on disk through the JVM."""

import contextlib
import glob
import io
import json
import os
import random

import fastavro
import pytest


def document_files(layer_path, doc):
    """The ``files`` entries of version document ``doc`` of the local layer at ``layer_path``, read from
    the files themselves: listed inline (formats 2-5), or through the document's manifests (format 6,
    docs/FORMAT.md section 10), in the order listed. The tests' and benches' own reading of a local
    layer's documents, independent of the JVM's and of the in-process reader's."""
    if "manifests" not in doc:
        return list(doc.get("files") or [])
    out = []

    def walk(refs):
        for ref in refs:
            with open(os.path.join(layer_path, "_sfclayer", "manifests", ref["path"]), "rb") as f:
                m = json.load(f)
            if ref["level"] == 0:
                out.extend(m["files"])
            else:
                walk(m["manifests"])

    walk(doc["manifests"])
    return out


@contextlib.contextmanager
def sfclayer_errors():
    """Raw Spark API calls with their Java errors raised as sfclayer's classes, as ``sfclayer.read`` does."""
    from sfclayer import _jvm

    with _jvm.translated():
        yield


def versions(path):
    """Committed version numbers of a local layer."""
    names = sorted(os.listdir(os.path.join(path, "_sfclayer")))
    return [int(n[1:-5]) for n in names if n.startswith("v") and n.endswith(".json")]


def metadata(path, version=None):
    """The metadata document of a local layer's newest (or given) version."""
    version = version or versions(path)[-1]
    with open(os.path.join(path, "_sfclayer", f"v{version:08d}.json")) as f:
        doc = json.load(f)
    if "manifests" in doc:  # format 6: its files through its manifests, as the JVM gives documents out
        doc["files"] = document_files(path, doc)
    return doc


def data_files(path, version=None):
    """Data file (MapFile directory) paths of a local layer version, sorted by first index."""
    md = metadata(path, version)
    if md["formatVersion"] >= 2:  # the document lists its files, each with its directory
        files = [os.path.join(path, f["dir"], f["name"]) for f in md["files"]]
    else:
        files = glob.glob(os.path.join(path, md["dataDir"], "part-r-*"))
    return sorted(files, key=lambda p: int(os.path.basename(p).rsplit("-", 1)[1]))


def as_format_1(path):
    """Rewrite a local layer of one version as format 1 wrote it (docs/FORMAT.md sections 1 and 7):
    its data files moved into the one ``dataDir``, found by listing it; the document's ``files``
    without ``dir``, no ``operation`` and no ``checksum``. Returns the document."""
    import shutil

    (version,) = versions(path)
    md = metadata(path, version)
    data_dir = os.path.join(path, md["dataDir"])
    for f in md["files"]:
        if os.path.join(path, f["dir"]) != data_dir:
            shutil.move(os.path.join(path, f["dir"], f["name"]), os.path.join(data_dir, f["name"]))
        del f["dir"]
    md["formatVersion"] = 1
    md.pop("operation", None)
    md.pop("checksum", None)  # format 1 documents have none (a stale one would be damage)
    for pointer in glob.glob(os.path.join(path, "_sfclayer", "_last*")):
        os.remove(pointer)
    with open(os.path.join(path, "_sfclayer", f"v{version:08d}.json"), "w") as f:
        json.dump(md, f)
    return md


def read_groups(spark, mapfile):
    """Every (index, group bytes) of one MapFile, read with the connector's DataFileReader."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    reader = jvm.io.sfclayer.format.DataFileReader(conf, jvm.org.apache.hadoop.fs.Path(mapfile))
    out = []
    try:
        while reader.next():
            out.append((reader.index(), bytes(reader.bytes())[reader.offset(): reader.offset() + reader.length()]))
    finally:
        reader.close()
    return out


def decode_group(md, group):
    """The tile records of one group, decoded in Python from the metadata's tile schema alone."""
    from sfclayer import codecs

    group = codecs.decompress(group, md["compression"])
    schema = fastavro.parse_schema({"type": "array", "items": md["tileSchema"]})
    return fastavro.schemaless_reader(io.BytesIO(group), schema)


#: The test jar (``gradle benchJar``, built by ``make setup``): the benchmark's JVM helpers and the
#: fault-injecting test filesystems of io.sfclayer.testing, which conftest.py puts on the session.
TEST_JAR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "libs",
                        "sfclayer-bench.jar")


def add_delta_version(spark, layer, source):
    """Publishes a version of ``layer`` whose deltas (format 7) are ``source``'s files (a layer of the same
    key index, schema and compression), as later tiles replacing earlier ones of the same key; returns the
    version number. By hand, through io.sfclayer.testing.DeltaVersions in the test jar (``make setup``):
    a way to make delta versions that does not depend on the writer that writes them."""
    try:
        helper = spark._jvm.io.sfclayer.testing.DeltaVersions
        return int(helper.add(spark.sparkContext._jsc.hadoopConfiguration(), layer, source))
    except TypeError as e:  # py4j: a JavaPackage, not a class, when the test jar is not on the class path
        pytest.skip(f"delta versions are built by the test jar ({TEST_JAR}, `make setup`): {e}")


@contextlib.contextmanager
def faults(spark, scheme="file", **settings):
    """Faults injected into writes (``sfclayer.test.*`` settings of io.sfclayer.testing.Faults) by a
    test filesystem standing in for ``scheme``'s while the block runs; the connector reads no test
    setting itself."""
    impl = {"file": "io.sfclayer.testing.FaultLocalFileSystem", "hdfs": "io.sfclayer.testing.FaultHdfs"}[scheme]
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    keys = {f"fs.{scheme}.impl": impl, f"fs.{scheme}.impl.disable.cache": "true", **settings}
    saved = {k: conf.get(k) for k in keys}
    for k, v in keys.items():
        conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)


@contextlib.contextmanager
def manifest_capacities(spark, inline_files=0, leaf_files=1, fanout=2):
    """Writes in the block get format 6 manifests of these capacities (docs/FORMAT.md, section 10);
    the defaults make every version a tree of one data file a leaf and two manifests a node."""
    keys = {"inlineFiles": inline_files, "leafFiles": leaf_files, "fanout": fanout}
    for k, v in keys.items():
        spark.conf.set(f"spark.hadoop.sfclayer.manifest.{k}", str(v))
    try:
        yield
    finally:
        for k in keys:
            spark.conf.unset(f"spark.hadoop.sfclayer.manifest.{k}")


def start_lookup_server(spark, reader, max_connections=None, auth_timeout_ms=None, io_timeout_ms=None,
                        bind_host=None):
    """Starts a JVM ``LookupServer`` of its own on a JVM reader (``layer._reader``): (server, host, port, token).

    Limits left as None take the server's defaults; ``bind_host`` (a loopback address such as
    ``"::1"``) defaults to the JVM's loopback address.
    """
    from sfclayer import _jvm

    jvm = spark.sparkContext._jvm
    cls = jvm.io.sfclayer.lookup.LookupServer
    with _jvm.translated():
        if max_connections is None and auth_timeout_ms is None and io_timeout_ms is None and bind_host is None:
            server = cls(reader)
        else:
            bind = (jvm.java.net.InetAddress.getByName(bind_host) if bind_host is not None
                    else jvm.java.net.InetAddress.getLoopbackAddress())
            server = cls(reader, bind,
                         int(max_connections or cls.DEFAULT_MAX_CONNECTIONS),
                         int(auth_timeout_ms or cls.DEFAULT_AUTH_TIMEOUT_MILLIS),
                         int(io_timeout_ms or cls.DEFAULT_IO_TIMEOUT_MILLIS))
        return server, str(server.host()), int(server.port()), bytes(server.token())


def test_jar_class(spark, name):
    """The class ``io.sfclayer.testing.<name>`` of the test jar (build/libs/sfclayer-bench.jar, on the session's
    class path when `make setup` built it); skips the test without it."""
    jvm = spark._jvm
    try:
        return jvm.java.lang.Class.forName(f"io.sfclayer.testing.{name}", False,
                                           jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception as e:
        pytest.skip(f"io.sfclayer.testing.{name} is in the test jar (build/libs/sfclayer-bench.jar, `make setup`): {e}")


def seed(variable, what):
    """A run's seed: ``$variable`` when set (a replay), else drawn; printed with how to replay it."""
    value = int(os.environ.get(variable) or random.randrange(10**9))
    print(f"{what} seed {value} (replay: {variable}={value})")
    return value


def seeded_test_jar_run(spark, name, variable, what):
    """The test jar's ``io.sfclayer.testing.<name>`` as a JVM class to call (skips the test without the jar),
    and the run's :func:`seed`: the preamble of the store-wide runs (crash points, races)."""
    test_jar_class(spark, name)
    return getattr(spark._jvm.io.sfclayer.testing, name), seed(variable, what)
