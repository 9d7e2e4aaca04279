"""The object-store byte source of the in-process reader: S3, GCS and Azure Blob through obstore.

``open_objectstore("s3://bucket/layers/dem")`` (also ``s3a://``, ``gs://``, ``az://``/``abfs://``,
``memory://``) gives a :class:`ObjectStoreSource` for that layer root (the ``ByteSource`` contract of
``sfclayer.reader.source``). Each method is one request: ``read`` one GET, ``read_range`` one ranged
GET (never a HEAD: the reader knows data files' lengths from the version document), ``list`` one
LIST with a delimiter (a page of 1000 entries), ``size`` and ``exists`` one HEAD. Beyond the
contract, ``read_many`` puts several reads in flight at once, so that a data file's first touch
(index, bloom filter, header, then the record) costs two round trips, not four.

Why obstore (bench/object_stores.py, bench/RESULTS.md "Object-store client"): the same requests as
s3fs once s3fs is told not to HEAD before a whole-object GET, but a fresh process is ready in about
60 ms instead of 0.4-1.5 s (botocore's models), and each request costs less on top of the network.

Credentials, the usual ways (obstore reads them; options override):

* options: ``access_key_id``, ``secret_access_key``, ``session_token``, ``region``, ``endpoint``
  (``http://`` endpoints are allowed plain HTTP), any other obstore ``S3Config``/``GCSConfig``/
  ``AzureConfig`` key, and ``client_options`` / ``retry_config`` as obstore takes them;
* the environment: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
  ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``; ``GOOGLE_*``;
  ``AZURE_STORAGE_*``; instance metadata / web identity on cloud machines;
* AWS profiles (``profile="name"``, or ``AWS_PROFILE``, or ``~/.aws/credentials`` when no key is in
  the environment): boto3's credential chain (SSO, assumed roles, refresh), which must be installed.

Thread-safe (obstore's stores are; the GIL is released during requests) and fork-safe: each process
builds its own client on first use (a child's never shares its parent's connections). obstore's
Tokio runtime does not survive a fork once it has run (a child hangs), so in a process forked from
one that made requests the source uses fsspec (s3fs, gcsfs, adlfs) when installed, and otherwise
refuses with :class:`~sfclayer.errors.StorageError` saying how to start workers (``spawn`` or
``forkserver``), never hangs.
"""

from __future__ import annotations

import configparser
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlparse

from ..errors import InvalidArgument, StorageError

__all__ = ["ObjectStoreSource", "open_objectstore"]

_S3 = ("s3", "s3a")
_GCS = ("gs", "gcs")
_AZURE = ("az", "azure", "abfs", "abfss")
_SCHEMES = _S3 + _GCS + _AZURE + ("memory",)

# pid of the process whose obstore (Tokio) runtime has run, and whether this process inherited one
_runtime_pid = None
_inherited_runtime = False
_pool = (None, None)  # (pid, ThreadPoolExecutor) of read_many: a forked child makes its own
_pool_lock = threading.Lock()
# obstore clients of this process by (scheme, bucket, options): a layer opened again, or another layer
# of the bucket, reuses the client's connections and credentials (a forked child builds its own)
_clients = {}
_clients_pid = None
_clients_lock = threading.Lock()


def _shared_client(key, build):
    global _clients, _clients_pid
    with _clients_lock:
        if _clients_pid != os.getpid():
            _clients, _clients_pid = {}, os.getpid()
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = build()
        return client


def _executor():
    global _pool
    pid, pool = _pool
    if pid != os.getpid():
        with _pool_lock:
            pid, pool = _pool
            if pid != os.getpid():
                pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sfclayer-objectstore")
                _pool = (os.getpid(), pool)
    return pool


def _after_fork_in_child():
    global _inherited_runtime
    if _runtime_pid is not None:
        _inherited_runtime = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def open_objectstore(url, **options):
    """The :class:`ObjectStoreSource` of the layer root ``url`` (see the module's docstring)."""
    return ObjectStoreSource(url, **options)


def _split(url):
    p = urlparse(url)
    scheme = p.scheme.lower()
    if scheme not in _SCHEMES:
        raise InvalidArgument(f"{url}: unsupported scheme {scheme!r} for the in-process reader "
                              f"(expected one of {', '.join(s + '://' for s in _SCHEMES)}, or a local path)")
    if scheme in ("abfs", "abfss") and "@" in p.netloc:  # abfs://container@account.dfs.core.windows.net/path
        container, account = p.netloc.split("@", 1)
        return scheme, container, unquote(p.path).strip("/"), {"account_name": account.split(".", 1)[0]}
    if not p.netloc and scheme != "memory":
        raise InvalidArgument(f"{url}: no bucket in the URL")
    return scheme, p.netloc, unquote(p.path).strip("/"), {}


def _aws_profile(options):
    """The AWS profile to take credentials from, or None (keys given, in the environment, or no profile)."""
    if "profile" in options:
        return options.pop("profile")
    if any(k in options for k in ("access_key_id", "aws_access_key_id", "skip_signature", "credential_provider")):
        return None
    if os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return None
    if os.environ.get("AWS_PROFILE"):
        return os.environ["AWS_PROFILE"]
    files = [os.environ.get("AWS_SHARED_CREDENTIALS_FILE", os.path.expanduser("~/.aws/credentials")),
             os.environ.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config"))]
    for f in files:
        parser = configparser.ConfigParser()
        try:
            parser.read(f)
        except configparser.Error:
            continue
        if parser.has_section("default") or parser.has_section("profile default"):
            return "default"
    return None


def _obstore_store(scheme, bucket, prefix, extra, options):
    from obstore import store as obs

    options = dict(options)
    client_options = dict(options.pop("client_options", None) or {})
    retry_config = options.pop("retry_config", None)
    endpoint = options.get("endpoint") or (next((os.environ[k] for k in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")
                                                  if os.environ.get(k)), None) if scheme in _S3 else None)
    if endpoint and endpoint.startswith("http://"):
        client_options.setdefault("allow_http", True)
    kw = {"prefix": prefix or None, "client_options": client_options or None, "retry_config": retry_config}
    if scheme in _S3:
        profile = _aws_profile(options)
        if profile is not None:
            try:
                import boto3
                from obstore.auth.boto3 import Boto3CredentialProvider
            except ImportError as e:
                raise StorageError(f"s3://{bucket}: credentials from AWS profile {profile!r} need boto3 "
                                   f"(pip install 'sfclayer[s3]'), or set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY: {e}") from e
            session = boto3.Session(profile_name=profile)
            options.setdefault("region", session.region_name or os.environ.get("AWS_REGION") or "us-east-1")
            options["credential_provider"] = Boto3CredentialProvider(session)
        return obs.S3Store(bucket, **kw, **options)
    if scheme in _GCS:
        return obs.GCSStore(bucket, **kw, **options)
    if scheme in _AZURE:
        return obs.AzureStore(bucket, **kw, **{**extra, **options})
    return obs.MemoryStore()


class _Obstore:
    """The requests through obstore; paths relative to the store's prefix."""

    def __init__(self, store, prefix):
        import obstore

        self._obs = obstore
        self._store = store
        self._prefix = prefix  # the layer root in the bucket: stores are shared by the layers of a bucket

    def _p(self, path):
        return f"{self._prefix}/{path}" if self._prefix else path

    def _used(self):
        global _runtime_pid
        _runtime_pid = os.getpid()

    def get(self, path):
        self._used()
        return bytes(self._obs.get(self._store, self._p(path)).bytes())

    def get_range(self, path, start, length):
        self._used()
        try:
            return bytes(self._obs.get_range(self._store, self._p(path), start=start, length=length))
        except self._obs.exceptions.GenericError as e:
            if "416" in str(e):  # a range starting at or past the end: the contract's "fewer at end"
                return b""
            raise

    def head(self, path):
        self._used()
        return self._obs.head(self._store, self._p(path))["size"]

    def list(self, prefix):
        self._used()
        listing = self._obs.list_with_delimiter(self._store, self._p(prefix))
        cut = len(self._prefix) + 1 if self._prefix else 0
        return [(o["path"][cut:], o["size"]) for o in listing["objects"]]

    def list_dirs(self, prefix):
        self._used()
        listing = self._obs.list_with_delimiter(self._store, self._p(prefix))
        cut = len(self._prefix) + 1 if self._prefix else 0
        return [p.rstrip("/")[cut:] for p in listing["common_prefixes"]]

    def list_from(self, directory, start_after, page=None):
        """Keys under ``directory`` that sort after the key ``start_after`` (S3's start-after; one LIST a
        1,000 keys) as ``(name, size, etag)``: the first ``page`` of them, or all when ``page`` is None; and
        whether that was all."""
        self._used()
        cut = len(self._prefix) + 1 if self._prefix else 0
        stream = self._obs.list(self._store, self._p(directory), offset=self._p(start_after), chunk_size=page or 1000)
        def entry(o):
            return o["path"][cut:], o["size"], (o.get("e_tag") or "").strip('"')

        if page:
            got = next(iter(stream), [])
            return [entry(o) for o in got], len(got) < page
        return [entry(o) for chunk in stream for o in chunk], True


class _Fsspec:
    """The same requests through fsspec (s3fs, gcsfs, adlfs): for processes forked after obstore ran."""

    _KEYS = {"access_key_id": "key", "aws_access_key_id": "key", "secret_access_key": "secret",
             "aws_secret_access_key": "secret", "session_token": "token", "skip_signature": "anon"}

    def __init__(self, scheme, bucket, prefix, options):
        import fsspec

        kw = {"skip_instance_cache": True}
        if scheme in _S3:
            kw["max_concurrency"] = 1  # else a whole-object GET is preceded by a HEAD
            client = {}
            for k, v in options.items():
                if k in self._KEYS:
                    kw[self._KEYS[k]] = v
                elif k == "endpoint":
                    kw["endpoint_url"] = v
                elif k == "region":
                    client["region_name"] = v
                elif k == "profile":
                    kw["profile"] = v
            if client:
                kw["client_kwargs"] = client
            scheme = "s3"
        self._fs = fsspec.filesystem("gcs" if scheme in _GCS else "abfs" if scheme in _AZURE else scheme, **kw)
        self._root = "/".join(p for p in (bucket, prefix) if p)

    def _p(self, path):
        return f"{self._root}/{path}" if path else self._root

    def get(self, path):
        return self._fs.cat_file(self._p(path))

    def get_range(self, path, start, length):
        return self._fs.cat_file(self._p(path), start=start, end=start + length) if length > 0 else b""

    def head(self, path):
        return self._fs.info(self._p(path))["size"]

    def list(self, prefix):
        try:
            entries = self._fs.ls(self._p(prefix), detail=True)
        except FileNotFoundError:
            return []
        cut = len(self._root) + 1
        return [(e["name"][cut:], e["size"]) for e in entries if e.get("type") == "file"]

    def list_dirs(self, prefix):
        try:
            entries = self._fs.ls(self._p(prefix), detail=True)
        except FileNotFoundError:
            return []
        cut = len(self._root) + 1
        return [e["name"].rstrip("/")[cut:] for e in entries if e.get("type") == "directory"]


class ObjectStoreSource:
    """A layer root on an object store (the ``ByteSource`` contract of ``sfclayer.reader.source``).

    Parameters
    ----------
    url : str
        ``s3://bucket/path`` (or ``s3a://``), ``gs://bucket/path``, ``az://container/path``,
        ``abfs[s]://container@account.dfs.core.windows.net/path``, ``memory://`` (this process only).
    **options
        Credentials and client settings (module docstring); ``profile`` for an AWS profile.
    """

    def __init__(self, url, **options):
        self.url = url.rstrip("/")
        self._scheme, self._bucket, self._prefix, self._extra = _split(self.url)
        self._options = options
        self._lock = threading.Lock()
        self._pid = None
        self._client = None
        if self._scheme == "memory":  # one store per source, kept across calls (it is the data)
            self._memory = _obstore_store("memory", None, None, {}, {})

    def _requests(self):
        pid = os.getpid()
        client = self._client
        if client is not None and self._pid == pid:
            return client
        with self._lock:
            if self._client is None or self._pid != pid:
                self._client = self._connect()
                self._pid = pid
            return self._client

    def _connect(self):
        if self._scheme == "memory":
            return _Obstore(self._memory, self._prefix or self._bucket)
        if _inherited_runtime:
            try:
                return _Fsspec(self._scheme, self._bucket, self._prefix, self._options)
            except ImportError as e:
                raise StorageError(
                    f"{self.url}: this process (pid {os.getpid()}) was forked from one that had read through "
                    "obstore, whose runtime does not survive a fork; start worker processes with "
                    "multiprocessing's 'spawn' or 'forkserver' method (or open layers only after forking), or "
                    f"install fsspec's s3fs/gcsfs/adlfs, which forked children then use ({e})") from None
        key = (self._scheme, self._bucket, repr(sorted(self._extra.items())), repr(sorted(self._options.items())))
        store = _shared_client(key, lambda: _obstore_store(self._scheme, self._bucket, None, self._extra, self._options))
        return _Obstore(store, self._prefix)

    def _call(self, what, path, *args):
        try:
            return getattr(self._requests(), what)(path, *args)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{self.url}/{path}: not found") from e
        except (StorageError, InvalidArgument):
            raise
        except Exception as e:  # obstore's and fsspec's errors: permission, network, configuration
            raise StorageError(f"{self.url}/{path}: {type(e).__name__}: {e}") from e

    def read(self, path):
        """The whole object (one GET); ``FileNotFoundError`` naming it if absent."""
        return self._call("get", path)

    def read_range(self, path, start, length):
        """``length`` bytes from ``start`` (one ranged GET), fewer at the end of the object."""
        if length <= 0:
            return b""
        return self._call("get_range", path, start, length)

    def read_many(self, items):
        """Several reads in flight at once: one round trip's latency for all of them (a file's first
        touch: its index, bloom filter and header together, then its record).

        Parameters
        ----------
        items : list of tuple
            ``(path, start, length)``; ``start`` None reads the whole object (``length`` ignored).

        Returns
        -------
        list of bytes
            In the order of ``items``; the first error raised by any of them is raised.
        """
        def one(item):
            path, start, length = item
            return self.read(path) if start is None else self.read_range(path, start, length)

        items = list(items)
        if len(items) <= 1:
            return [one(i) for i in items]
        return list(_executor().map(one, items))

    def size(self, path):
        """The object's length (one HEAD); ``FileNotFoundError`` if absent."""
        return self._call("head", path)

    def list(self, prefix):
        """``(name, size)`` of the objects directly under ``prefix`` (one LIST with a delimiter)."""
        prefix = prefix.strip("/")
        got = self._call("list", prefix + "/" if prefix else "")
        cut = len(prefix) + 1 if prefix else 0
        return [(name[cut:], size) for name, size in got]

    def list_dirs(self, prefix):
        """Names of the "directories" (common prefixes) directly under ``prefix`` (one LIST with a
        delimiter): optional in the contract, for format 1 versions, whose files are found by listing."""
        prefix = prefix.strip("/")
        got = self._call("list_dirs", prefix + "/" if prefix else "")
        cut = len(prefix) + 1 if prefix else 0
        return [name[cut:] for name in got]

    def list_from(self, directory, start_after, page=None):
        """``(name, size, etag)`` of the objects under ``directory`` (recursively) whose key sorts after the
        key ``start_after``, with S3's start-after (one LIST a 1,000 keys from there; the ETag unquoted, ""
        where the store gives none): the first ``page`` of them or, ``page`` None, all; and whether those
        were all of them. None where the client cannot (fsspec's, in a forked process)."""
        if not hasattr(self._requests(), "list_from"):
            return None
        return self._call("list_from", directory, start_after, page)

    def exists(self, path):
        """Whether the object exists (one HEAD)."""
        try:
            self.size(path)
            return True
        except FileNotFoundError:
            return False

    def __getstate__(self):  # no client travels: the receiving process builds its own
        state = dict(self.__dict__)
        state.update(_lock=None, _client=None, _pid=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self):
        return f"ObjectStoreSource({self.url!r})"
