"""Real S3 servers on loopback for sfclayer's tests and benchmarks, reached through S3A.

- :class:`MotoS3`: moto's ``ThreadedMotoServer`` (an S3 implementation in Python) on 127.0.0.1, with
  every request it answers counted (:meth:`MotoS3.requests`) and an optional per-request latency
  (:attr:`MotoS3.latency`, seconds before the answer's first byte) for the benchmark. moto evaluates
  ``If-None-Match: *`` on PUT, but checks then writes without a lock: it cannot referee a race.
- :class:`S3Proxy`: S3Proxy (Maven ``org.gaul:s3proxy``, its ``transient-nio2`` in-memory backend
  decides ``If-None-Match`` atomically) in a JVM of its own: the referee for true races.
- :class:`FaultProxy`: an HTTP proxy in front of either that can hold PUTs of chosen keys until a
  second one arrives (both reach the server in flight at once), or lose the answer to a PUT that
  succeeded (the client sees a 500, the object is stored).

The ``s3`` and ``s3_race`` fixtures in the top-level conftest.py start these once per test run and
configure the test Spark session's S3A for them, per bucket (``fs.s3a.bucket.<b>.*``), so both
servers serve one session. ``integration/fetch-s3-jars.sh`` fetches the S3A and S3Proxy jars.
"""

import http.client
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
S3A_JARS_DIR = REPO / "integration" / "target" / "s3-jars"
S3PROXY_JAR = REPO / "integration" / "target" / "s3proxy" / "s3proxy.jar"
FETCH_SCRIPT = REPO / "integration" / "fetch-s3-jars.sh"
ACCESS_KEY = "sfclayer"
SECRET_KEY = "sfclayer-secret"
REGION = "us-east-1"


class S3Unavailable(RuntimeError):
    """No S3 server can be started here (no moto, no S3A jars, no Java)."""


def s3a_jars(fetch=True):
    """The S3A jars (hadoop-aws and the AWS SDK modules), fetched by fetch-s3-jars.sh if needed."""
    if fetch and not (S3A_JARS_DIR / ".done").exists():
        ensure_jars()
    jars = sorted(str(p) for p in S3A_JARS_DIR.glob("*.jar"))
    if not jars:
        raise S3Unavailable(f"no S3A jars in {S3A_JARS_DIR}: run `make s3-jars`")
    return jars


def ensure_jars(timeout=900):
    """Runs integration/fetch-s3-jars.sh (at once when the jars are up to date)."""
    try:
        subprocess.run(["bash", str(FETCH_SCRIPT)], check=True, timeout=timeout, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise S3Unavailable(f"fetch-s3-jars.sh failed: {e.stderr[-2000:]}") from e
    except (OSError, subprocess.TimeoutExpired) as e:
        raise S3Unavailable(f"fetch-s3-jars.sh: {e}") from e


def free_port():
    """A port free on 127.0.0.1 now: a server to be started there, or one nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiles(spark, cols, rows, keys=None, bump=0, payload=400, partitions=2):
    """A DataFrame of tiles ``v = col * 1000 + row + bump`` with a ``payload`` of that many bytes
    derived from ``v``: every tile of a ``cols`` x ``rows`` grid, or the (col, row) ``keys`` given."""
    from pyspark.sql import functions as F

    if keys is None:
        df = (spark.range(cols * rows, numPartitions=partitions)
              .select((F.col("id") % cols).cast("int").alias("col"),
                      F.floor(F.col("id") / cols).cast("int").alias("row")))
    else:
        df = spark.createDataFrame(keys, "col int, row int")
    return (df.withColumn("v", F.col("col") * 1000 + F.col("row") + F.lit(bump))
              .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {payload // 4}))")))


def s3a_settings(bucket, endpoint):
    """Hadoop settings for S3A to reach ``bucket`` at ``endpoint`` (per bucket: other buckets keep theirs)."""
    b = f"fs.s3a.bucket.{bucket}."
    return {
        b + "endpoint": endpoint,
        b + "endpoint.region": REGION,
        b + "path.style.access": "true",
        b + "connection.ssl.enabled": "false",
        b + "access.key": ACCESS_KEY,
        b + "secret.key": SECRET_KEY,
        b + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        # the request counts asserted here are the classic stream's (no HEAD when sfclayer gives the
        # length); Hadoop 3.5's default analytics stream adds a HEAD per file open (README, "Layers on S3")
        b + "input.stream.type": "classic",
        # a local server: fail fast rather than retry for minutes
        b + "attempts.maximum": "2",
        b + "retry.limit": "2",
        b + "retry.interval": "50ms",
        b + "connection.establish.timeout": "15s",
        b + "connection.timeout": "30s",
    }


def configure_spark(spark, settings):
    """Sets Hadoop settings on the session's driver configuration (executors of local mode share it)."""
    conf = spark._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)


def _http(endpoint, method, path, body=b"", headers=None, timeout=30):
    host, port = endpoint.split("//", 1)[1].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class MotoS3:
    """moto's S3 server on 127.0.0.1, its requests counted.

    Attributes
    ----------
    endpoint : str
        ``http://127.0.0.1:PORT``
    latency : float
        Seconds each request waits before it is answered (0: none); the benchmark's cloud-like delay.
    """

    def __init__(self, port=0):
        try:
            from moto.moto_server import threaded_moto_server as threaded
        except ImportError as e:
            raise S3Unavailable(f"moto is not installed (pip install 'moto[s3,server]'): {e}") from e
        self.latency = 0.0
        self._log = []
        self._ranges = []  # the Range header of each request logged (None: none), in the same order
        self._lock = threading.Lock()
        outer = self

        class Counting:
            """moto's WSGI app behind a shim that logs (method, path, query) and waits ``latency``."""

            def __init__(self, app):
                self.app = app

            def __call__(self, environ, start_response):
                method = environ["REQUEST_METHOD"]
                if method == "PUT" and environ.get("HTTP_X_AMZ_COPY_SOURCE"):
                    method = "COPY"  # a server-side copy: what a rename is on S3
                with outer._lock:
                    outer._log.append((method, environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")))
                    outer._ranges.append(environ.get("HTTP_RANGE"))
                if outer.latency > 0:
                    time.sleep(outer.latency)
                return self.app(environ, start_response)

        class Quiet(threaded.MotoRequestHandler):
            def log_request(self, *args, **kwargs):
                pass

        class Server(threaded.ThreadedMotoServer):
            # ThreadedMotoServer's own thread body, with the app wrapped
            def _server_entry(self):
                app = Counting(threaded.DomainDispatcherApplication(threaded.create_backend_app))
                self._server = threaded.make_server(self._ip_address, self._port, app, True,
                                                   request_handler=Quiet)
                self._server_ready_event.set()
                self._server.serve_forever()

        self._server = Server(ip_address="127.0.0.1", port=port, verbose=False)
        self.port = None
        self.endpoint = None

    def start(self):
        self._server.start()
        self.port = self._server.get_host_and_port()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.reset()
        return self

    def create_bucket(self, name):
        status, body = _http(self.endpoint, "PUT", f"/{name}")
        if status not in (200, 409):
            raise S3Unavailable(f"moto could not create bucket {name}: {status} {body[:300]!r}")

    def requests(self):
        """The requests answered since the last :meth:`reset`: a list of (method, path, query); a PUT
        that copies another object is logged as method ``COPY``."""
        with self._lock:
            return list(self._log)

    def ranges(self):
        """The ``Range`` header of each request of :meth:`requests` (None where it had none)."""
        with self._lock:
            return list(self._ranges)

    def counts(self, prefix=None):
        """Requests since the last reset by method (``{"GET": 3, "HEAD": 1}``), those under ``prefix`` only if given."""
        return Counter(m for m, p, _ in self.requests() if prefix is None or p.startswith(prefix))

    def reset(self):
        with self._lock:
            self._log.clear()
            self._ranges.clear()

    def stop(self):
        self._server.stop()


class S3Proxy:
    """S3Proxy with its transient-nio2 (in-memory) backend, in its own JVM on 127.0.0.1."""

    def __init__(self, work_dir, port=None, jar=S3PROXY_JAR):
        if not Path(jar).exists():
            raise S3Unavailable(f"no S3Proxy jar at {jar}: run `make s3-jars`")
        java = shutil.which("java") if not os.environ.get("JAVA_HOME") else os.path.join(
            os.environ["JAVA_HOME"], "bin", "java")
        if not java:
            raise S3Unavailable("no `java` on PATH for S3Proxy")
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        props = self.work_dir / "s3proxy.properties"
        props.write_text("\n".join([
            f"s3proxy.endpoint=http://127.0.0.1:{self.port}",
            "s3proxy.authorization=aws-v2-or-v4",
            f"s3proxy.identity={ACCESS_KEY}",
            f"s3proxy.credential={SECRET_KEY}",
            "jclouds.provider=transient-nio2",
            f"jclouds.identity={ACCESS_KEY}",
            f"jclouds.credential={SECRET_KEY}",
            "jclouds.regions=" + REGION,
        ]) + "\n")
        self.log_path = self.work_dir / "s3proxy.log"
        self._cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", str(jar),
                     "--properties", str(props)]
        self.process = None

    def start(self, timeout=90):
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self._cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise S3Unavailable(f"S3Proxy exited ({self.process.returncode}); log {self.log_path}: "
                                    + self.log_path.read_text(errors="replace")[-2000:])
            try:
                _http(self.endpoint, "GET", "/", timeout=2)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise S3Unavailable(f"S3Proxy did not answer within {timeout} s; log {self.log_path}")
                time.sleep(0.1)

    def create_bucket(self, name, spark):
        """Through S3A itself (S3Proxy wants signed requests): mkdirs on the bucket's root creates nothing,
        so a tiny S3 client call through the SDK on S3A's class path does it."""
        jvm = spark._jvm
        sdk = jvm.software.amazon.awssdk
        creds = sdk.auth.credentials.StaticCredentialsProvider.create(
            sdk.auth.credentials.AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY))
        client = (sdk.services.s3.S3Client.builder()
                  .endpointOverride(jvm.java.net.URI.create(self.endpoint))
                  .region(sdk.regions.Region.of(REGION))
                  .credentialsProvider(creds)
                  .forcePathStyle(True)
                  .build())
        try:
            client.createBucket(sdk.services.s3.model.CreateBucketRequest.builder().bucket(name).build())
        finally:
            client.close()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if getattr(self, "_log", None):
            self._log.close()


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of an S3 endpoint, for races and lost answers.

    ``hold(pattern, n=2, timeout=10)``: PUTs whose path matches ``pattern`` wait until ``n`` of them
    are waiting (or ``timeout`` passes), then all go on at once: ``n`` requests in flight at the
    server together. ``lose_answer(pattern)``: the next PUT whose path matches is forwarded and, once
    the server has answered it (whatever it answered), the client gets a 500 instead.
    ``.held`` records (path, release generation) of the PUTs held, ``.lost`` (path, server status) of
    the answers lost, ``.log`` (method, path, status the server gave) of every request.
    """

    def __init__(self, target):
        self.target_host, port = target.split("//", 1)[1].rsplit(":", 1)
        self.target_port = int(port)
        self._lock = threading.Condition()
        self._hold = None
        self._lose = None
        self.held = []
        self.lost = []
        self.log = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _relay(self):
                body = self._read_body()
                method, path = self.command, self.path
                if method == "PUT":
                    proxy._maybe_hold(path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "transfer-encoding")}
                headers["Content-Length"] = str(len(body))
                upstream = http.client.HTTPConnection(proxy.target_host, proxy.target_port, timeout=60)
                try:
                    upstream.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
                    for k, v in headers.items():
                        if k.lower() != "expect":
                            upstream.putheader(k, v)
                    upstream.endheaders(body if method not in ("GET", "HEAD") or body else None)
                    r = upstream.getresponse()
                    data = r.read()
                    with proxy._lock:
                        proxy.log.append((method, path.split("?", 1)[0], r.status))
                    if method == "PUT" and proxy._take_lose(path, r.status):
                        self._answer(500, [("Content-Type", "application/xml")],
                                     b"<Error><Code>InternalError</Code><Message>answer lost by FaultProxy"
                                     b"</Message></Error>")
                        return
                    self._answer(r.status, r.getheaders(), data, head=method == "HEAD")
                finally:
                    upstream.close()

            def _read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _answer(self, status, headers, data, head=False):
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)) if not head else
                                 next((v for k, v in headers if k.lower() == "content-length"), "0"))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="FaultProxy", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def hold(self, pattern, n=2, timeout=10.0, once=True):
        """Hold PUTs matching ``pattern`` until ``n`` wait (or ``timeout``); ``once``: for one group only."""
        with self._lock:
            self._hold = {"re": re.compile(pattern), "n": n, "timeout": timeout, "waiting": 0, "gen": 0,
                          "once": once}

    def lose_answer(self, pattern):
        with self._lock:
            self._lose = re.compile(pattern)

    def clear(self):
        with self._lock:
            if self._hold is not None:
                self._hold["gen"] += 1  # release whoever waits
            self._hold = None
            self._lose = None
            self.held, self.lost, self.log = [], [], []
            self._lock.notify_all()

    def _maybe_hold(self, path):
        with self._lock:
            h = self._hold
            if h is None or not h["re"].search(path):
                return
            gen = h["gen"]
            h["waiting"] += 1
            if h["waiting"] >= h["n"]:
                h["gen"] += 1
                h["waiting"] = 0
                if h["once"]:
                    self._hold = None
                self._lock.notify_all()
            else:
                deadline = time.monotonic() + h["timeout"]
                while h["gen"] == gen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        h["waiting"] -= 1
                        break
                    self._lock.wait(left)
            self.held.append((path, gen))

    def _take_lose(self, path, status):
        with self._lock:
            if self._lose is not None and self._lose.search(path):
                self._lose = None
                self.lost.append((path, status))
                return True
            return False

    def stop(self):
        self.clear()
        self._server.shutdown()
        self._server.server_close()


class S3Bucket:
    """A bucket of a test server: fresh paths in it, and the server (and proxy) behind it."""

    def __init__(self, server, name, proxy=None):
        self.server = server
        self.name = name
        self.proxy = proxy
        self.run = uuid.uuid4().hex[:8]
        self._n = 0
        self._lock = threading.Lock()

    def path(self, name="layer"):
        """A path no test used before: ``s3a://<bucket>/<run>/<name>-<n>``."""
        with self._lock:
            self._n += 1
            return f"s3a://{self.name}/{self.run}/{name}-{self._n}"

    def key_prefix(self, path):
        """The server-side request path prefix of an ``s3a://`` path (path-style: ``/bucket/key``)."""
        return "/" + path.split("//", 1)[1]
