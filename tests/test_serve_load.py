"""The tile server under load on loopback, and its clean stop on SIGTERM.

The load test stops by itself: SFCLAYER_LOAD_CLIENTS clients (32) × SFCLAYER_LOAD_REQUESTS
requests each (60 here; the issue's 2,000 with the variable set) over a mix of PNG and value
requests; no errors, then no sockets, Python threads or JVM look-up threads left behind.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from sfclayer import server as srv

from . import serving as sv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    return sv.write_layers(spark, str(tmp_path_factory.mktemp("load")), names=("rgb", "dem"))


def _sockets():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def _jvm_lookup_threads(spark):
    threads = spark.sparkContext._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
    return sorted(t.getName() for t in threads if t.getName().startswith("sfclayer-lookup"))


def test_load_on_loopback_leaves_nothing_behind(spark, layers):
    clients = int(os.environ.get("SFCLAYER_LOAD_CLIENTS", 32))
    per_client = int(os.environ.get("SFCLAYER_LOAD_REQUESTS", 60))
    sockets0, threads0, jvm0 = _sockets(), threading.active_count(), _jvm_lookup_threads(spark)
    keys = sv.keys()
    errors, latencies = [], []
    lock = threading.Lock()

    with srv.serve(spark, [layers["rgb"], layers["dem"]], port=0, coalesce_ms=2, background=True,
                   log=lambda *_: None) as server:
        assert _jvm_lookup_threads(spark)  # the driver's look-up server the served layers share

        def run(i):
            rng = np.random.default_rng(i)
            c = sv.Client(server.url)
            mine = []
            try:
                for _ in range(per_client):
                    col, row = keys[rng.integers(len(keys))]
                    path = (f"/layers/rgb/tiles/0/{col}/{row}.png" if rng.random() < 0.5
                            else f"/layers/dem/values/{col}/{row}")
                    t0 = time.perf_counter()
                    code, _, body = c.get(path)
                    mine.append(time.perf_counter() - t0)
                    if code != 200 or not body:
                        with lock:
                            errors.append((path, code))
            except Exception as e:  # noqa: BLE001 - every failure is reported below
                with lock:
                    errors.append(("exception", repr(e)))
            finally:
                c.close()
            with lock:
                latencies.extend(mine)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        seconds = time.perf_counter() - t0
    served = server.app.requests  # counted as each response ends: read after the stop

    assert errors == []
    assert len(latencies) == served == clients * per_client
    p50, p99 = np.percentile(latencies, [50, 99]) * 1000
    print(f"\nload: {clients} clients × {per_client} requests: {len(latencies) / seconds:.0f} req/s, "
          f"p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    # Nothing left: sockets (listening, accepted, look-up connections), threads here and in the JVM.
    deadline = time.time() + 10
    while time.time() < deadline and (_sockets() > sockets0 or not set(_jvm_lookup_threads(spark)) <= set(jvm0)):
        time.sleep(0.1)
    assert _sockets() <= sockets0  # fewer is fine: an idle connection of an earlier test may close meanwhile
    assert threading.active_count() == threads0
    assert set(_jvm_lookup_threads(spark)) <= set(jvm0)  # fewer is fine, as for sockets


def test_sigterm_stops_the_cli_server_cleanly(layers):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-m", "sfclayer", "serve", f"rgb={layers['rgb']}", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    try:
        url = None
        deadline = time.time() + 180
        while url is None and time.time() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
            url = m.group(1) if m else None
        assert url, "".join(lines)
        c = sv.Client(url)
        assert c.get("/layers/rgb/tiles/0/1/1.png")[0] == 200
        c.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(lines) + err
    assert proc.returncode == 0, err
    assert '"GET /layers/rgb/tiles/0/1/1.png" 200' in err
    assert "stopped (SIGTERM); layers closed" in err


def test_serving_benchmark_client_replays_the_trace(spark, layers, capsys):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("sfclayer_bench_serving", os.path.join(ROOT, "bench", "serving.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    views = bench.trace(60, 30)
    assert all(0 <= c < 60 and 0 <= r < 30 for view in views for c, r in view)
    assert {len(v) for v in views} == {15 * 9, 30 * 18}
    assert len({(c, r) for v in views for c, r in v}) == 60 * 30  # the pans cover the whole layer
    with srv.serve(spark, [f"demo={layers['rgb']}"], port=0, coalesce_ms=2, background=True,
                   log=lambda *_: None) as server:
        for endpoint in ("values", "png"):
            bench.client_main(server.url, endpoint, 2, 0.5, sv.GRID[0], sv.GRID[1])
            out = json.loads(capsys.readouterr().out)
            # The trace's views hold the layer's one missing key: its requests, and only those, are 404s.
            c, r = sv.MISSING
            missing = f"/layers/demo/values/{c}/{r}" if endpoint == "values" else f"/layers/demo/tiles/0/{c}/{r}.png"
            assert out["requests"] > 10
            assert out["failed"] == {f"404 {missing}": out["asked"][missing]} and out["asked"][missing] >= 1
            assert out["errors"] == out["asked"][missing]
            assert 0 < out["p50_ms"] <= out["p99_ms"]
