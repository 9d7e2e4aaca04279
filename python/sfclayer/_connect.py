"""The Spark Connect transport (:class:`ConnectTransport`): requests to sfclayer's Spark Connect plugins
(``io.sfclayer.spark.connect.SfcLayerRelationPlugin``, ``SfcLayerCommandPlugin``): what py4j does on a
classic session, a Spark Connect client asks the server's driver for as an extension relation (or
command), answered without a Spark job as a local relation (Arrow batches).

A request is a ``google.protobuf.Any`` whose ``type_url`` is :data:`TYPE_URL` and whose ``value`` is a
JSON object: ``op`` and its arguments. Answers are a text (``answer``, one row) or records (``count``,
``data``: batches of encoded tile records, as the loopback look-up socket sends them; a look-up's one
batch holds the socket's answer to it, :mod:`sfclayer._answers`).
"""

import base64
import contextlib
import itertools
import json
import os
import struct

from . import errors
from ._answers import TileAnswers
from ._java_errors import error_from_payload, translated
from ._transport import Transport

__all__ = ["TYPE_URL", "PLUGIN", "COMMAND_PLUGIN", "READ_OPS", "ConnectTransport", "request_text",
           "request_records", "ConnectLookupClient"]

TYPE_URL = "type.googleapis.com/sfclayer.connect.Request"  # ConnectRequest.TYPE_URL
PLUGIN = "io.sfclayer.spark.connect.SfcLayerRelationPlugin"  # spark.connect.extensions.relation.classes
COMMAND_PLUGIN = "io.sfclayer.spark.connect.SfcLayerCommandPlugin"  # spark.connect.extensions.command.classes
_NONCE = f"{os.getpid():x}-{os.urandom(4).hex()}-"
_COUNTER = itertools.count()


# Requests that only read (look-ups, box queries, counts, a reader's metadata and statistics) and
# "close" (idempotent) take the short path: a command to the command plugin, whose answer skips Spark's
# query planning, sent as one non-reattachable ExecutePlan call (:func:`_execute`), which may retry it
# whole. Everything else ("open", maintenance commands) goes as a relation the client's public way.
READ_OPS = frozenset({"get_many", "query", "count", "metadata", "stats", "readers", "close", "geotrellisIndex"})

# What the short path uses of pyspark's Connect client (SparkConnectClient internals, pyspark 4.x): where
# one is missing, requests take the public path.
_CLIENT_INTERNALS = ("_stub", "_builder", "_retrying", "_execute_plan_request_with_metadata",
                     "_verify_response_integrity", "_handle_error")


# Connect sessions (by session id) whose server has no sfclayer command plugin: their read requests go
# as relations (a separate server set up with the relation plugin only, or an older sfclayer jar)
_NO_COMMAND_PLUGIN = set()


def _proto(payload, command=False):
    """The request as a Connect plan: a relation extension (``google.protobuf.Any``) the relation plugin
    answers, or a command extension the command plugin does."""
    import pyspark.sql.connect.proto as pb2

    # the nonce: each request is its own relation, which no plan cache answers from an earlier one
    payload = dict(payload, nonce=_NONCE + str(next(_COUNTER)))
    plan = pb2.Plan()
    extension = plan.command.extension if command else plan.root.extension
    extension.type_url = TYPE_URL
    extension.value = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return plan


def _missing_handler(e):
    return "NO_HANDLER_FOR_EXTENSION" in str(e) or "No handler found for extension" in str(e)


def _table(spark, payload):
    # Errors come as Spark Connect's: the caller translates them (sfclayer._jvm.translated, which imports
    # this module, so it is handed in rather than imported back)
    client = spark.client
    try:
        if payload["op"] in READ_OPS and all(hasattr(client, a) for a in _CLIENT_INTERNALS):
            session = getattr(client, "_session_id", None)
            if session not in _NO_COMMAND_PLUGIN:
                try:
                    return _answered(payload, _execute(client, _proto(payload, command=True)))
                except Exception as e:
                    if not _missing_handler(e):
                        raise
                    _NO_COMMAND_PLUGIN.add(session)
            return _answered(payload, _execute(client, _proto(payload)))
        # one ExecutePlan round trip, reattachable (DataFrame.toArrow would analyze the plan first: a second one)
        return client.to_table(_proto(payload), {})[0]
    except Exception as e:
        _explain_missing_plugin(e)
        raise


def _answered(payload, table):
    if table is None:
        raise errors.SfcLayerError(f"sfclayer Connect request {payload['op']}: the server sent no answer")
    return table


def _execute(client, plan):
    """The answer of a read request in one non-reattachable ExecutePlan call, its Arrow batches decoded
    here: what ``client.to_table`` does, less its costs that buy nothing for a short idempotent read (a
    ReleaseExecute call after each, progress and metrics handling, the pandas-minded bookkeeping).
    None when the answer has no Arrow batch. Spark Connect's errors as ``to_table`` raises them; retried
    whole by the client's retry policy."""
    import pyarrow as pa

    try:
        for attempt in client._retrying():
            with attempt:
                req = client._execute_plan_request_with_metadata()  # a new operation id each attempt
                req.plan.CopyFrom(plan)
                for hook in getattr(client, "_session_hooks", ()):
                    req = hook.on_execute_plan(req)
                batches, chunks = [], []
                for b in client._stub.ExecutePlan(req, metadata=client._builder.metadata()):
                    client._verify_response_integrity(b)
                    if b.HasField("arrow_batch"):
                        a = b.arrow_batch
                        chunks.append(a.data)  # a batch may come in chunks (result_chunking_options)
                        if not a.HasField("num_chunks_in_batch") or len(chunks) >= max(1, a.num_chunks_in_batch):
                            batches.extend(pa.ipc.open_stream(b"".join(chunks)))
                            chunks = []
                if chunks:
                    raise errors.SfcLayerError("the Spark Connect server's answer ended inside an Arrow batch")
                return pa.Table.from_batches(batches) if batches else None
    except errors.SfcLayerError:
        raise
    except Exception as e:
        client._handle_error(e)


def _explain_missing_plugin(e):
    """An InvalidArgument saying how to set the server up when it has no sfclayer plugin (Spark's
    ``NO_HANDLER_FOR_EXTENSION``), rather than Spark's bare error."""
    if _missing_handler(e):
        raise errors.InvalidArgument(
            "spark: the Spark Connect server has no sfclayer relation plugin: start it with the sfclayer jar and "
            f"--conf spark.connect.extensions.relation.classes={PLUGIN} (README, \"Spark Connect\"), or use "
            "sfclayer.configure(SparkSession.builder.remote(\"local\")) for a server of its own") from e


def request_text(spark, op, **args):
    """The text answer of a request (None when the server answered none); Spark Connect's errors as they come."""
    table = _table(spark, dict(args, op=op))
    column = table.column("answer").to_pylist()
    if len(column) != 1:
        raise errors.SfcLayerError(f"sfclayer Connect request {op}: {len(column)} answers, expected one")
    return column[0]


def request_records(spark, op, **args):
    """The record batches of a request: a list of (count, bytes)."""
    table = _table(spark, dict(args, op=op))
    return list(zip(table.column("count").to_pylist(), table.column("data").to_pylist()))


class ConnectTransport(Transport):
    """A Spark Connect session's driver, reached through sfclayer's plugins on its server: named operations
    as the plugin's op ``"command"`` (``io.sfclayer.spark.Operations``), readers as handles on the server."""

    def _call(self, name, args):
        with translated():
            return request_text(self.spark, "command", operation=name, args=args)

    def open_layer(self, path, cache_size, cache_bytes, index_in_driver, version, as_of_millis):
        # the server's relation plugin opens it: no host or port, answers come as relations
        with translated():
            info = json.loads(request_text(self.spark, "open", path=path, cacheSize=int(cache_size),
                                           cacheBytes=int(cache_bytes), indexInDriver=bool(index_in_driver),
                                           version=int(version), asOfMillis=int(as_of_millis)))
        return info, ConnectLookupClient(self.spark, info)

    def open_geotrellis(self, catalog, name, zoom, cache_size):
        with translated():
            opened = json.loads(request_text(self.spark, "geotrellisOpen", catalog=catalog, name=name,
                                             zoom=int(zoom), cacheSize=int(cache_size)))
        return opened["info"], _GeoTrellisLookups(self.spark, opened)

    def functions(self):
        from pyspark.sql.connect import functions

        return functions

    def cores(self):
        """The server's ``spark.default.parallelism`` or ``local[N]``, else 8 (a Connect client cannot ask
        the cluster)."""
        if self.spark.conf.get("spark.default.parallelism", None):
            return int(self.spark.conf.get("spark.default.parallelism"))
        master = self.spark.conf.get("spark.master", "") or ""
        inside = master[master.find("[") + 1:master.find("]")] if master.startswith("local[") else ""
        return int(inside) if inside.isdigit() else 8

    def resolved(self, df):
        df.schema  # Connect plans lazily: resolve it now, so a missing layer fails here as on classic
        return df

    def follow_progress(self, tracker):
        return _progress_handler(self.spark, tracker)


@contextlib.contextmanager
def _progress_handler(spark, tracker):
    def handler(stages, inflight_tasks, operation_id, done):
        if stages:
            tracker.stages(operation_id, [(s.stage_id, s.num_completed_tasks, s.num_tasks) for s in stages])

    register = getattr(spark, "registerProgressHandler", None)
    if register is None:  # a pyspark-client without the API: no bar, the work goes on
        yield
        return
    register(handler)
    try:
        yield
    finally:
        spark.removeProgressHandler(handler)


class ConnectLookupClient:
    """:class:`sfclayer._lookup.LookupClient`'s requests for one reader opened on a Spark Connect server
    (``handle``, ``token``), made as relation requests: the same answers, the same errors."""

    def __init__(self, spark, info):
        self._spark = spark
        self._id = {"handle": int(info["handle"]), "token": str(info["token"])}
        self._error = error_from_payload
        self._closed = False

    def _text(self, op, **args):
        with translated():
            return request_text(self._spark, op, **args, **self._id)

    def _records(self, op, **args):
        with translated():
            return request_records(self._spark, op, **args, **self._id)

    def _check(self):
        if self._closed:
            raise errors.SfcLayerError("the layer is closed")

    def get(self, col, row, time_micros):
        """The encoded tile record at the key, or None."""
        return self.get_many(struct.pack(">iiq", col, row, time_micros))[0]

    def get_many(self, packed_keys, errors_as_values=False):
        """Records (or None) for keys packed as big-endian (int col, int row, long time); see LookupClient."""
        self._check()
        n = len(packed_keys) // 16
        [(_, data)] = self._records("get_many", keys=base64.b64encode(packed_keys).decode("ascii"))
        out = [None] * n
        answers = TileAnswers.of_bytes(data, self._error)  # the socket's framing (sfclayer._answers)
        first_error = answers.many(n, out, errors_as_values=errors_as_values)
        answers.end()
        if first_error is not None and not errors_as_values:
            raise first_error
        return out

    def query(self, spec):
        """Encoded records of a box query in batches: (count, the records back to back)."""
        self._check()
        yield from self._records("query", spec=spec)

    def count(self, spec):
        """The number of records a box query matches."""
        self._check()
        return int(self._text("count", spec=spec))

    def metadata_json(self):
        self._check()
        return self._text("metadata")

    def stats(self):
        self._check()
        return json.loads(self._text("stats"))

    def close(self):
        """Closes the reader on the server (nothing if closed already)."""
        if not self._closed:
            self._closed = True
            self._text("close")


class _GeoTrellisLookups(ConnectLookupClient):
    """A GeoTrellis layer's requests on a Spark Connect server (``io.sfclayer.lookup.GtTileSource`` there)."""

    def index(self, col, row, millis):
        """GeoTrellis' index of a key (time in ms)."""
        self._check()
        return int(self._text("geotrellisIndex", col=int(col), row=int(row), millis=int(millis)))
