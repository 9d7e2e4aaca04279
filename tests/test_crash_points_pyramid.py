"""Every filesystem call of a pyramid update and of a GeoTrellis conversion a crash point (issues 35 and 38),
as the JUnit CrashPointsTest does for the layer's own operations: the operation is run once recording its
calls under the layer (io.sfclayer.testing.CrashPointFs, from the test jar, as the session's local
filesystem), then again on a fresh copy with one call failing (an IOException; a java.lang.Error), and
after each run:

* pyramid update (an incremental one: the base took an append since the pyramid was built): the newest
  pyramid document is the one from before or the next one, whole (its checksum); the levels it pins read
  exactly as before or exactly as a successful run leaves them (a full rebuild's levels, FORMAT.md section
  8); the base is untouched; and a rerun gives the successful run's levels (a lease a failed release left
  is reported by the next run as left by a finished run, then removed by hand as FORMAT.md says);
* GeoTrellis convert (a base zoom and one level): the output has no version, or a base that reads as a
  whole conversion's, with no pyramid document or one whose level reads as a whole conversion's; a
  conversion again (``mode="overwrite"``) gives the whole result.

The default run takes a seeded sample of the points (``SAMPLE`` per operation and failure mode, the seed
printed; ``SFCLAYER_CRASH_SEED`` replays it); ``SFCLAYER_CRASH_ALL=1`` takes every point (``make
crash-points``). The counts of calls are printed: 124 for the pyramid update (4 × 4 base tiles, levels 1
and 2, an append of two tiles since), 69 for the conversion of ``wm`` zoom 3 with zoom 2."""

import hashlib
import os
import random
import re
import shutil

import pytest

import sfclayer
from sfclayer import geotrellis
from sfclayer import pyramids

from . import helpers
from .test_pyramid_update import tile_pixels, tiles_df, write_base

pytest.importorskip("morecantile")

CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "geotrellis", "catalog")
#: Points per operation and failure mode in the default run (``SFCLAYER_CRASH_SAMPLE`` sets another):
#: a pyramid update run and its checks take 10-20 s on two cores under load.
SAMPLE = int(os.environ.get("SFCLAYER_CRASH_SAMPLE") or 2)
ALL = os.environ.get("SFCLAYER_CRASH_ALL") == "1"
MODES = ("IO_EXCEPTION", "ERROR")


class CrashPoints:
    """The session's local filesystem replaced by CrashPointFs while the tests of this module run."""

    def __init__(self, spark):
        jvm = spark._jvm
        try:
            loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
            jvm.java.lang.Class.forName("io.sfclayer.testing.CrashPointFs", False, loader)
        except Exception as e:
            pytest.skip(f"CrashPointFs is in the test jar (build/libs/sfclayer-bench.jar, `make setup`): {e}")
        self.spark = spark
        self.fs = jvm.io.sfclayer.testing.CrashPointFs
        self.modes = {m: getattr(jvm.io.sfclayer.testing, "CrashPointFs$Mode").valueOf(m) for m in MODES + ("STICKY",)}

    def arm(self, path, at=0, mode="IO_EXCEPTION"):
        self.fs.arm(os.path.abspath(path), at, self.modes[mode])

    def disarm(self):
        self.fs.disarm()

    def recorded(self):
        return list(self.fs.recorded())


@pytest.fixture(scope="module")
def crash(spark):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    keys = {"fs.file.impl": "io.sfclayer.testing.CrashPointFs", "fs.file.impl.disable.cache": "true"}
    saved = {k: conf.get(k) for k in keys}
    points = CrashPoints(spark)
    for k, v in keys.items():
        conf.set(k, v)
    try:
        yield points
    finally:
        points.disarm()
        for k, v in saved.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)


def _points(name, calls):
    """The 1-based calls to fail per mode: all with SFCLAYER_CRASH_ALL=1, else a seeded sample."""
    if ALL:
        return {m: list(range(1, calls + 1)) for m in MODES}
    rnd = random.Random(helpers.seed("SFCLAYER_CRASH_SEED", f"{name}: crash-point sample"))
    return {m: sorted(rnd.sample(range(1, calls + 1), min(SAMPLE, calls))) for m in MODES}


def _run_failing(crash, path, at, mode, operation):
    """Runs ``operation`` with call ``at`` under ``path`` failing; returns the call that failed."""
    crash.arm(path, at, mode)
    try:
        operation()
    except Exception:  # the injected failure as the operation reports it (a Py4JJavaError, an sfclayer error)
        pass
    finally:
        rec = crash.recorded()
        crash.disarm()
    return rec[at - 1] if len(rec) >= at else f"(fewer calls: {len(rec)})"


def _tiles(spark, path, version=None):
    """{(col, row): sha256 of the tile's raster columns} of a layer's version (a level is a layer)."""
    df = sfclayer.read(spark, path, version=version) if version is not None else sfclayer.read(spark, path)
    out = {}
    for x in df.collect():
        d = x.asDict()
        digest = hashlib.sha256(repr(sorted((k, v) for k, v in d.items() if k not in ("col", "row"))).encode())
        out[(d["col"], d["row"])] = digest.hexdigest()
    return out


def _levels(spark, path, doc):
    """{zoom: tiles} of the level versions a pyramid document pins."""
    return {int(z): _tiles(spark, os.path.join(path, "_pyramid", str(z)), int(v))
            for z, v in sorted(doc["levelVersions"].items())}


def _copy(src, dst):
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


def _versions(path):
    """The version documents in a layer's log (none: the layer does not exist for readers)."""
    log = os.path.join(path, "_sfclayer")
    return sorted(f for f in os.listdir(log) if f.startswith("v") and f.endswith(".json")) if os.path.isdir(log) else []


def _lease(path):
    return os.path.join(path, "_pyramid", ".lease")


def _pristine_update(spark, pristine):
    """A base of 4 × 4 tiles with levels 1 and 2, and an append since: the next run is an incremental update
    (FORMAT.md section 8)."""
    write_base(spark, pristine, [((c, r), tile_pixels(10 * c + r)) for c in range(4) for r in range(4)])
    assert sfclayer.pyramid(spark, pristine, min_zoom=1) == [1, 2]
    sfclayer.write(tiles_df(spark, [((2, 2), tile_pixels(99)), ((5, 1), tile_pixels(98))]), pristine,
                   mode="append")
    return pristine


def test_every_call_of_a_pyramid_update_is_a_crash_point(spark, crash, tmp_path):
    pristine = _pristine_update(spark, str(tmp_path / "pristine"))
    number0, doc0 = pyramids._numbered_document(spark, pristine)
    before = _levels(spark, pristine, doc0)
    base = _tiles(spark, pristine)

    done = _copy(pristine, str(tmp_path / "done"))
    crash.arm(done)
    assert sfclayer.pyramid(spark, done) == [1, 2]
    calls = len(crash.recorded())
    crash.disarm()
    number1, doc1 = pyramids._numbered_document(spark, done)
    assert number1 == number0 + 1 and doc1["lastUpdate"]["kind"] == "incremental"
    after = _levels(spark, done, doc1)
    assert after != before

    failures, left_leases, runs = [], 0, 0
    for mode, ats in _points("pyramid update", calls).items():
        for at in ats:
            runs += 1
            path = _copy(pristine, str(tmp_path / f"point-{mode}-{at}"))
            call = _run_failing(crash, path, at, mode, lambda: sfclayer.pyramid(spark, path))
            where = f"pyramid update, call {at} of {calls}, {mode} [{call}]"
            try:
                number, doc = pyramids._numbered_document(spark, path)  # whole: its checksum is checked
                assert number in (number0, number1), f"{where}: pyramid document {number}"
                assert _levels(spark, path, doc) == (before if number == number0 else after), \
                    f"{where}: the levels document {number} pins read neither as before nor as after"
                assert _tiles(spark, path) == base, f"{where}: the base changed"
                if os.path.exists(_lease(path)):
                    left_leases += 1  # the failed call was the lease's release (an Error: not retried)
                    with pytest.raises(sfclayer.ConcurrentUpdate, match="left by a run that finished or died"):
                        sfclayer.pyramid(spark, path)
                    os.remove(_lease(path))  # as the error says (FORMAT.md section 8)
                sfclayer.pyramid(spark, path)
                number, doc = pyramids._numbered_document(spark, path)
                assert _levels(spark, path, doc) == after, f"{where}: a rerun's levels differ from a whole run's"
            except AssertionError as e:
                failures.append(str(e))
            except Exception as e:  # noqa: BLE001 - every point is reported, not the first only
                failures.append(f"{where}: {type(e).__name__}: {e}")
            shutil.rmtree(path)
    print(f"crash points: pyramid update {calls} calls, {runs} runs ({left_leases} left the lease)")
    assert not failures, "\n".join(failures)


def test_a_failed_lease_release_is_retried_then_left_to_the_next_run_to_report(spark, crash, tmp_path):
    """FORMAT.md section 8: the release deletes the heartbeat, then the lease, each retried once. A fault
    once at the lease's delete is retried (nothing left); one that persists (every call from the delete on
    failing) leaves the lease, the run (its levels and document published) returns with a warning naming
    it, and the next run's error says the lease was left by a run that finished or died, naming its owner
    and the file to delete."""
    pristine = _pristine_update(spark, str(tmp_path / "pristine"))
    done = _copy(pristine, str(tmp_path / "done"))
    crash.arm(done)
    assert sfclayer.pyramid(spark, done) == [1, 2]
    recorded = crash.recorded()
    crash.disarm()
    at = recorded.index("delete /_pyramid/.lease") + 1
    assert recorded[at - 2].startswith("delete /_pyramid/.lease-") and recorded[at - 2].endswith(".alive")
    _, doc1 = pyramids._numbered_document(spark, done)

    once = _copy(pristine, str(tmp_path / "once"))
    assert _run_failing(crash, once, at, "IO_EXCEPTION", lambda: sfclayer.pyramid(spark, once)) \
        == "delete /_pyramid/.lease"
    assert not [f for f in os.listdir(os.path.join(once, "_pyramid")) if f.startswith(".lease")]
    assert pyramids._numbered_document(spark, once)[1]["levelVersions"] == doc1["levelVersions"]

    stuck = _copy(pristine, str(tmp_path / "stuck"))
    crash.arm(stuck, at, "STICKY")
    try:
        with pytest.warns(RuntimeWarning, match=r"cannot release the lease .*\.lease \(owner \d+@"):
            assert sfclayer.pyramid(spark, stuck) == [1, 2]
    finally:
        crash.disarm()
    assert [f for f in os.listdir(os.path.join(stuck, "_pyramid")) if f.startswith(".lease")] == [".lease"]
    assert _levels(spark, stuck, pyramids._numbered_document(spark, stuck)[1]) == _levels(spark, done, doc1)
    with pytest.raises(sfclayer.ConcurrentUpdate) as e:
        sfclayer.pyramid(spark, stuck)
    message = str(e.value)
    assert "left by a run that finished or died" in message, message
    assert re.search(r"owner \d+@", message) and f"delete file:{_lease(stuck)}" in message, message
    os.remove(_lease(stuck))
    assert sfclayer.pyramid(spark, stuck) == []  # up to date: the stuck run's work stands


@pytest.mark.skipif(not os.path.isdir(CATALOG), reason="tests/data/geotrellis is not there (integration/geotrellis writes it)")
def test_every_call_of_a_geotrellis_conversion_is_a_crash_point(spark, crash, tmp_path):
    done = str(tmp_path / "done")
    crash.arm(done)
    geotrellis.convert(spark, CATALOG, "wm", 3, done, zooms=[2], quiet=True)
    calls = len(crash.recorded())
    crash.disarm()
    base = _tiles(spark, done)
    _, doc = pyramids._numbered_document(spark, done)
    levels = _levels(spark, done, doc)
    assert list(levels) == [2] and levels[2]

    failures, states, runs = [], {}, 0
    for mode, ats in _points("GeoTrellis convert", calls).items():
        for at in ats:
            runs += 1
            path = str(tmp_path / f"point-{mode}-{at}")
            call = _run_failing(crash, path, at, mode,
                                lambda: geotrellis.convert(spark, CATALOG, "wm", 3, path, zooms=[2], quiet=True))
            where = f"GeoTrellis convert, call {at} of {calls}, {mode} [{call}]"
            try:
                if not _versions(path):
                    state = "no version"
                else:
                    assert _tiles(spark, path) == base, f"{where}: the base reads neither absent nor whole"
                    number, d = pyramids._numbered_document(spark, path)
                    if d is None:
                        state = "base, no pyramid"
                    else:
                        assert _levels(spark, path, d) == levels, f"{where}: the level reads neither absent nor whole"
                        state = "whole"
                states[state] = states.get(state, 0) + 1
                if os.path.exists(_lease(path)):
                    os.remove(_lease(path))  # a failed release: removed by hand (FORMAT.md section 8)
                geotrellis.convert(spark, CATALOG, "wm", 3, path, zooms=[2], quiet=True, mode="overwrite")
                _, d = pyramids._numbered_document(spark, path)
                assert _tiles(spark, path) == base and _levels(spark, path, d) == levels, \
                    f"{where}: converting again does not give the whole result"
            except AssertionError as e:
                failures.append(str(e))
            except Exception as e:  # noqa: BLE001
                failures.append(f"{where}: {type(e).__name__}: {e}")
            shutil.rmtree(path, ignore_errors=True)
    print(f"crash points: GeoTrellis convert {calls} calls, {runs} runs, left {states}")
    assert not failures, "\n".join(failures)
