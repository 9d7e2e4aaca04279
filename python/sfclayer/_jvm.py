"""sfclayer's calls to a Spark driver, whichever way they travel: :func:`transport` chooses a session's
transport once (:mod:`sfclayer._classic`: py4j and the loopback socket; :mod:`sfclayer._connect`: Spark
Connect's plugins) and the functions here are the package's named operations on it. The only module
besides the transports that knows there are kinds of sessions (tests/test_structure.py): the rest asks
the transport for what it needs. Java errors become sfclayer's in :mod:`sfclayer._java_errors`."""

from ._java_errors import translated

__all__ = ["is_connect", "transport", "require_classic", "translated", "lookup_call", "command", "read_text",
           "take_lease", "release_lease", "verify_layer", "pyramid_document", "publish_pyramid_document",
           "layer_metadata_json", "restore_document", "rebuild_manifests", "hadoop_opener", "hadoop_file_status",
           "connector_version"]  # what the rest of sfclayer uses


def is_connect(spark):
    """Whether ``spark`` (a SparkSession) is a Spark Connect session: no py4j gateway behind it."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def transport(spark):
    """The transport of ``spark``'s driver (a :class:`sfclayer._transport.Transport`), chosen on first use
    and kept on the session; for None, the in-process reader's (no Spark)."""
    if spark is None:
        from ._transport import in_process

        return in_process()
    kept = vars(spark).get("_sfclayer_transport")  # getattr may reach a Connect session's __getattr__
    if kept is None:
        if is_connect(spark):
            from ._connect import ConnectTransport as kind
        else:
            from ._classic import ClassicTransport as kind
        kept = kind(spark)
        try:
            vars(spark)["_sfclayer_transport"] = kept
        except TypeError:  # a session without a __dict__ of its own: chosen again each time
            pass
    return kept


def require_classic(spark, what=None):
    """Raise :class:`~sfclayer.errors.InvalidArgument` unless ``spark``'s transport calls the driver's JVM
    itself (py4j): a clear error naming the function (``what``, else the sfclayer function the caller
    called) instead of pyspark's ``JVM_ATTRIBUTE_NOT_SUPPORTED``."""
    t = transport(spark)
    if not t.driver_jvm:
        raise t._no_driver_jvm(what)


def connector_version(jvm):
    """``(version, jar)`` of the connector classes a driver JVM (``SparkContext._jvm``) loaded, or None."""
    from ._classic import connector_version as version

    return version(jvm)


# ---------------------------------------------------------------- the named operations (io.sfclayer.spark.Operations)

def command(spark, name, *args):
    """Run the driver's operation ``name`` (:data:`sfclayer._transport.OPERATIONS`: history, delete,
    compact, vacuum, repair, deleteKeys, restore, ...) with positional ``args``; its answer, parsed."""
    return transport(spark).call(name, *args)


def verify_layer(spark, path, version=None):
    """The JSON report of ``io.sfclayer.spark.VerifyJob`` on a layer version (newest by default)."""
    return command(spark, "verify", path, int(version or 0))


def layer_metadata_json(spark, path, version=None, files=None):
    """The version document of one version of a layer (the newest when ``version`` is None), as JSON text.

    Its ``files`` hold every data file (read from every manifest of a format 6 version) when ``files``
    is None, else at most ``files`` of them, the first in index order (0: no ``files`` field): what
    callers that need only the document's other fields ask for, so a layer of millions of files
    answers from its version document alone.
    """
    return command(spark, "layerMetadata", path, -1 if version is None else int(version),
                   -1 if files is None else int(files))


def restore_document(spark, path):
    """``io.sfclayer.layer.LayerRepair.restoreDocument``: a new version restoring the newest readable one."""
    return command(spark, "restoreDocument", path)


def rebuild_manifests(spark, path):
    """``io.sfclayer.layer.ManifestRepair.run``: the newest version again with its damaged manifests rebuilt."""
    return command(spark, "rebuildManifests", path)


def read_text(spark, path):
    """The UTF-8 text of a small file on any Hadoop filesystem, or None if there is none."""
    return command(spark, "readText", path)


def pyramid_document(spark, directory):
    """The newest pyramid document in ``directory`` (``io.sfclayer.layer.PyramidDocuments.newest``): a dict
    of ``number`` (0: the legacy ``pyramid.json``, -1: none), ``name`` and ``text``."""
    return command(spark, "pyramidDocument", directory)


def publish_pyramid_document(spark, directory, number, text):
    """Publish pyramid document ``number`` unless another holds the name: whether it was published."""
    return command(spark, "publishPyramidDocument", directory, int(number), text)


def take_lease(spark, path, what):
    """``io.sfclayer.layer.Lease.take``: the token of the lease at ``path`` (ConcurrentUpdate if held)."""
    return command(spark, "takeLease", path, what)


def release_lease(spark, path, token):
    """``io.sfclayer.layer.Lease.release``: whether ``token`` still held the lease at ``path``."""
    return command(spark, "releaseLease", path, token)


# ---------------------------------------------------------------- the driver's JVM itself (classic sessions)

def hadoop_file_status(spark, path):
    """``(length, modification time in ms)`` of a file on any Hadoop filesystem.

    Raises
    ------
    InvalidInput
        If there is no such file (or it is a directory).
    StorageError
        If the file system failed (the file may well be there).
    """
    return transport(spark).hadoop_file_status(path)


def hadoop_opener(spark):
    """A rasterio ``opener`` (rasterio >= 1.4) reading files through the driver JVM's Hadoop filesystems
    (``hdfs://``...), for the driver only (:meth:`sfclayer._transport.Transport.hadoop_opener`)."""
    return transport(spark).hadoop_opener()


def lookup_call(spark, method, handle):
    """``LookupSessions.<method>(handle)`` (classic sessions): ``close``, ``reader``, ``metadataJson``, ``stats``."""
    require_classic(spark)
    from ._classic import lookup_call as call

    return call(spark, method, handle)
