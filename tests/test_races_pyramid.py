"""Pyramid updates as a race kind (issue 35): threads run, at once and at random, appends (copy-on-write and
delta files) and deletes on a raster base layer, pyramid updates and zero-retention vacuums (of the base and,
with it, every level), each thread from a seeded RNG (the seed is printed; ``SFCLAYER_PYRAMID_RACE_SEED``
replays the operations, the schedule being the machine's). Checked against an independent reference:

* a dict model of the base: every base version is made by exactly one operation the run knows of (the
  append or delete that returned it), so the model gives the tiles of any base version, vacuumed or not;
* the reference pyramid of a base version, built here with numpy from the model's tiles (each parent the
  2 x 2 mean of its children's valid pixels, rounded half to even, level by level: FORMAT.md section 8);
* in between (a ``check`` operation) and at the end: every pyramid document left is whole (its sha256),
  its pinned level versions read exactly as the reference pyramid of the base version it pins; the newest
  document's pinned level versions are never missing, whatever vacuum ran (readers open them); an older
  one's may have been vacuumed, never damaged;
* a pyramid run concurrent with another is refused with :class:`sfclayer.ConcurrentUpdate` (by the lease,
  or by the document another run published) and changes nothing a document pins; a run whose base version
  a vacuum removed under it fails with a named sfclayer error, nothing else;
* at the end: no lease left, a last update equals the reference of the newest base version, two runs
  started at once give one pyramid and one ``ConcurrentUpdate``, and ``verify`` is clean on the base and
  on every pinned level version.

The default is a short sample (about 30 s); ``SFCLAYER_PYRAMID_RACE_OPS=N`` (operations per thread) and
``SFCLAYER_PYRAMID_RACE_SECONDS`` make it longer (``make races``)."""

import json
import os
import random
import threading
import time
import traceback

import numpy as np
import pytest
from py4j.java_gateway import get_field

import sfclayer
from sfclayer import _jvm, raster
from sfclayer import pyramids
from sfclayer.errors import ConcurrentUpdate, SfcLayerError
from sfclayer.ingestion import Grid

pytest.importorskip("morecantile")

TMS, BASE, MIN_ZOOM = "WorldCRS84Quad", 3, 1
COLS, ROWS = 8, 4          # base tiles (0..7, 0..3) of zoom 3: levels 2 (4 x 2) and 1 (2 x 1)
SIZE = 256                 # the tile matrix set's tile size
THREADS = int(os.environ.get("SFCLAYER_PYRAMID_RACE_THREADS") or 3)
OPS = int(os.environ.get("SFCLAYER_PYRAMID_RACE_OPS") or 4)
SECONDS = float(os.environ.get("SFCLAYER_PYRAMID_RACE_SECONDS") or 15)


def pixels(seed):
    """A base tile's pixels, (1, 256, 256) uint8, from its seed: values 1..255 with a nodata (0) region whose
    size the seed picks (so parents average partly valid blocks, and some pixels of a parent are missing)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 256, size=(1, SIZE, SIZE), dtype=np.uint8)
    h, w = int(rng.integers(0, SIZE // 2)), int(rng.integers(0, SIZE))
    a[:, :h, :w] = 0
    return a


# ------------------------------------------------------------------ the independent reference (numpy)

def reference_pyramid(base):
    """{zoom: {(col, row): (1, 256, 256) uint8}} of levels BASE-1 .. MIN_ZOOM from ``base`` {key: pixels}:
    a parent is its four children side by side (an absent child all missing), each 2 x 2 block the mean of its
    valid (non-zero) pixels rounded half to even, 0 (missing) when none is; a parent with no valid pixel is
    absent."""
    levels, below = {}, base
    for z in range(BASE - 1, MIN_ZOOM - 1, -1):
        parents = {}
        for pc, pr in {(c // 2, r // 2) for c, r in below}:
            mosaic = np.zeros((2 * SIZE, 2 * SIZE), np.float64)
            for dc in (0, 1):
                for dr in (0, 1):
                    child = below.get((2 * pc + dc, 2 * pr + dr))
                    if child is not None:
                        mosaic[dr * SIZE:(dr + 1) * SIZE, dc * SIZE:(dc + 1) * SIZE] = child[0]
            blocks = mosaic.reshape(SIZE, 2, SIZE, 2)
            valid = (blocks != 0).sum(axis=(1, 3))
            total = blocks.sum(axis=(1, 3))
            mean = np.where(valid > 0, np.round(total / np.maximum(valid, 1)), 0).astype(np.uint8)
            if valid.any():
                parents[(pc, pr)] = mean[np.newaxis]
        levels[z] = parents
        below = parents
    return levels


def base_tiles(state):
    return {k: pixels(s) for k, s in state.items()}


def differences(want, got):
    """What differs between two {key: pixels} (empty when equal): missing, extra and differing tiles."""
    out = [f"{k} missing" for k in sorted(set(want) - set(got))]
    out += [f"{k} extra" for k in sorted(set(got) - set(want))]
    for k in sorted(set(want) & set(got)):
        if not np.array_equal(want[k], got[k]):
            out.append(f"{k} differs in {int((want[k] != got[k]).sum())} pixels")
    return out


# ------------------------------------------------------------------ reading the layer

def read_tiles(spark, path, version):
    """{key: pixels} of a layer version; checks each tile's validity against its pixels (no mask needed:
    an average of non-zero pixels is non-zero)."""
    out = {}
    for x in sfclayer.read(spark, path, version=version).select("col", "row", *raster.COLUMNS).collect():
        a = np.array(raster.to_numpy(x))
        assert np.array_equal(raster.valid_mask(x, a), a[0] != 0), f"{path} v{version} tile {x['col'], x['row']}: mask"
        assert (x["col"], x["row"]) not in out, f"{path} v{version}: tile {x['col'], x['row']} read twice"
        out[(x["col"], x["row"])] = a
    return out


def level_dir(path, z):
    return os.path.join(path, "_pyramid", str(z))


def documents(path):
    """{number: document} of the numbered pyramid documents in ``_pyramid/`` (each checked whole by its sha256;
    one the publisher's clean-up removed after the listing is skipped)."""
    out, d = {}, os.path.join(path, "_pyramid")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.startswith("pyramid-") and name.endswith(".json"):
            try:
                with open(os.path.join(d, name)) as f:
                    doc = json.load(f)
            except FileNotFoundError:
                continue
            want = doc.pop("sha256")
            assert pyramids._checksum(doc) == want, f"pyramid document {name} is damaged (sha256)"
            doc["sha256"] = want
            out[int(name[len("pyramid-"):-len(".json")])] = doc
    return out


def append_tiles(spark, path, items, mode="rewrite"):
    """Upserts {key: seed} into a layer through the connector's write; the version committed (its LayerMetadata)."""
    rows = [(c, r, *(raster.from_numpy(pixels(s), 0)[k] for k in raster.COLUMNS)) for (c, r), s in items.items()]
    df = spark.createDataFrame(rows, raster.spark_schema())
    jvm = spark._jvm
    options = jvm.java.util.HashMap()
    options.put("appendMode", mode)
    options.put("compactAfterDeltas", "1000000")  # no automatic compaction: every version is an operation's
    with _jvm.translated():  # a conflict as sfclayer.ConcurrentUpdate
        md = jvm.io.sfclayer.spark.SfcLayerWrite.run(spark._jsparkSession, df._jdf, path,
                                                    jvm.org.apache.spark.sql.SaveMode.Append, options)
    return get_field(md, "version")


def lost_to_vacuum(e):
    """Whether a write failed because a vacuum (retention 0) removed the version it read, saying so:
    LayerNotFound (a task rewriting a file of that version reports ConcurrentUpdate, handled as a conflict).
    A CorruptLayer or a raw FileNotFoundException here is a violation: nothing is damaged."""
    return isinstance(e, sfclayer.errors.LayerNotFound)


def vacuumed(e):
    """Whether an error says a version is gone (vacuum removed it): sfclayer's LayerNotFound."""
    return isinstance(e, sfclayer.errors.LayerNotFound)


# ------------------------------------------------------------------ the run

class Run:
    def __init__(self, spark, path, seed):
        self.spark, self.path, self.seed = spark, path, seed
        self.lock = threading.Lock()
        self.claims = {}       # base version -> [(op id, kind, arg)]: what returned it
        self.ops = []          # (op id, thread, kind, outcome, detail)
        self.snapshots = []    # (where, doc number, doc, {zoom: tiles read}): compared with the model at the end
        self.bad = []
        self.ids = 1
        self.began = {}        # op id -> its start (time.monotonic())
        self.grid = Grid.from_tms(TMS, BASE)

    def next_id(self):
        with self.lock:
            self.ids += 1
            return self.ids

    def record(self, op, thread, kind, outcome, detail=""):
        with self.lock:
            self.ops.append((op, thread, kind, outcome, f"{detail} [{time.monotonic() - self.began.get(op, 0):.1f} s]"))

    def claim(self, version, op, kind, arg):
        with self.lock:
            self.claims.setdefault(int(version), []).append((op, kind, arg))

    def append(self, items, mode):
        return append_tiles(self.spark, self.path, items, mode)

    def create(self):
        state = {(c, r): 1000 + 10 * c + r for c in range(COLS) for r in range(ROWS) if (c + r) % 3}
        rows = [(c, r, *(raster.from_numpy(pixels(s), 0)[k] for k in raster.COLUMNS)) for (c, r), s in state.items()]
        g = self.grid
        sfclayer.write(self.spark.createDataFrame(rows, raster.spark_schema()), self.path, bounds=g.bounds,
                       extent=g.extent, crs=g.crs, raster=g.raster_metadata(1, "uint8", 0), quiet=True)
        self.claim(1, 1, "create", state)
        assert sfclayer.pyramid(self.spark, self.path, min_zoom=MIN_ZOOM, quiet=True) == [1, 2]

    def step(self, thread, rnd):
        op = self.next_id()
        self.began[op] = time.monotonic()
        pick = rnd.random()
        kind = ("append" if pick < 0.25 else "delta" if pick < 0.4 else "delete" if pick < 0.55
                else "pyramid" if pick < 0.8 else "vacuum" if pick < 0.92 else "check")
        try:
            if kind in ("append", "delta"):
                keys = {(rnd.randrange(COLS), rnd.randrange(ROWS)) for _ in range(rnd.randint(1, 3))}
                items = {k: op * 100 + i for i, k in enumerate(sorted(keys))}
                v = self.append(items, "rewrite" if kind == "append" else "delta")
                self.claim(v, op, "append", items)
                self.record(op, thread, kind, "committed", f"v{v} {sorted(items)}")
            elif kind == "delete":
                c, r = rnd.randrange(COLS), rnd.randrange(ROWS)
                box = (c, r, min(COLS - 1, c + rnd.randint(0, 1)), min(ROWS - 1, r + rnd.randint(0, 1)))
                v = sfclayer.delete(self.spark, self.path, keys=box).version
                self.claim(v, op, "delete", box)
                self.record(op, thread, kind, "committed", f"v{v} {box}")
            elif kind == "pyramid":
                self.pyramid(op, thread)
            elif kind == "vacuum":
                sfclayer.vacuum(self.spark, self.path, retain=0, enforce_retention=False, quiet=True)
                self.record(op, thread, kind, "done")
            else:
                self.check(f"check op {op}")
                self.record(op, thread, kind, "done")
        except ConcurrentUpdate as e:
            # a copy-on-write append or a delete (each replaces the files it rewrites) lost to a commit that
            # rewrote the same files meanwhile (FORMAT.md section 6): no version
            self.record(op, thread, kind, "conflict", str(e).splitlines()[0])
        except Exception as e:  # noqa: BLE001 - every operation's failure is a violation, reported with the seed
            if kind in ("append", "delta", "delete") and lost_to_vacuum(e):
                # a zero-retention vacuum removed the files of the version it read, before its commit: no version
                # (the model check finds any version no operation returned)
                self.record(op, thread, kind, "read version vacuumed", f"{type(e).__name__}: {str(e)[:200]}")
                return
            self.record(op, thread, kind, "FAILED", f"{type(e).__name__}: {e}")
            self.bad.append(f"op {op} {kind} (thread {thread}) failed: {traceback.format_exc()[-3000:]}")

    def pyramid(self, op, thread):
        before = max(documents(self.path))
        try:
            levels = sfclayer.pyramid(self.spark, self.path, quiet=True)
        except ConcurrentUpdate as e:
            self.record(op, thread, "pyramid", "refused", str(e).splitlines()[0])
            return
        except SfcLayerError as e:
            if not vacuumed(e):
                raise
            # the base version it read was vacuumed (retention 0) while it ran: the document stays as it was
            self.record(op, thread, "pyramid", "vacuumed", f"{type(e).__name__}: {str(e).splitlines()[0]}")
            return
        self.record(op, thread, "pyramid", "built", f"{levels} after document {before}")
        self.check(f"after pyramid op {op}")

    def check(self, where):
        """Reads the newest document and the level versions it pins (compared with the model at the end). A
        pinned version missing while the document is still the newest is a violation."""
        for _ in range(3):
            docs = documents(self.path)
            number = max(docs)
            doc = docs[number]
            try:
                tiles = {int(z): read_tiles(self.spark, level_dir(self.path, z), int(v))
                         for z, v in sorted(doc["levelVersions"].items())}
            except Exception as e:  # noqa: BLE001
                if max(documents(self.path)) != number:
                    continue  # a newer document meanwhile: this one's level versions may go
                self.bad.append(f"{where}: the newest pyramid document {number} pins level versions "
                                f"{doc['levelVersions']}, unreadable: {type(e).__name__}: {e}")
                return
            with self.lock:
                self.snapshots.append((where, number, doc, tiles))
            return

    def worker(self, thread, deadline):
        rnd = random.Random(self.seed * 1_000_003 + thread)
        for i in range(OPS if "SFCLAYER_PYRAMID_RACE_SECONDS" not in os.environ else 10**9):
            if i > 0 and time.monotonic() > deadline:
                break
            self.step(thread, rnd)

    # -------------------------------------------------------------- the model and the checks

    def model(self):
        """{base version: {key: seed}} for every version 1..newest, each made by one operation that returned it
        (others returning the same version must change nothing there: a delete of an empty box returns the
        newest version unchanged)."""
        states = {}
        newest = max(self.claims)
        for v in range(1, newest + 1):
            prev = states.get(v - 1, {})
            made = None
            for op, kind, arg in self.claims.get(v, []):
                s = apply(prev, kind, arg)
                if all(o == op or apply(s, k, a) == s for o, k, a in self.claims[v]):
                    made = s
                    break
            if made is None:
                self.bad.append(f"base version {v} was made by no one operation the run knows of: "
                                f"{self.claims.get(v)}")
                return states
            states[v] = made
        return states

    def compare(self, where, doc, tiles, states, refs):
        base = int(doc["baseVersion"])
        if base not in states:
            self.bad.append(f"{where}: document pins base version {base}, which the model does not have")
            return
        if base not in refs:
            refs[base] = reference_pyramid(base_tiles(states[base]))
        for z, got in tiles.items():
            d = differences(refs[base][z], got)
            if d:
                self.bad.append(f"{where}: zoom {z} version {doc['levelVersions'][str(z)]} (base version {base}) "
                                f"differs from a full rebuild: {d[:6]}")


def apply(state, kind, arg):
    if kind == "create":
        return dict(arg)
    out = dict(state)
    if kind == "append":
        out.update(arg)
    else:
        c0, r0, c1, r1 = arg
        for k in [k for k in out if c0 <= k[0] <= c1 and r0 <= k[1] <= r1]:
            del out[k]
    return out


def test_pyramid_updates_race_appends_deletes_and_vacuums(spark, tmp_path):
    seed = int(os.environ.get("SFCLAYER_PYRAMID_RACE_SEED") or random.randrange(10**9))
    print(f"pyramid race seed {seed} (replay: SFCLAYER_PYRAMID_RACE_SEED={seed})")
    run = Run(spark, str(tmp_path / "base"), seed)
    started = time.monotonic()
    run.create()
    threads = [threading.Thread(target=run.worker, args=(t, time.monotonic() + SECONDS)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    path = run.path
    try:
        assert not os.path.exists(os.path.join(path, "_pyramid", ".lease")), "a pyramid run left its lease"
        # two runs at once after a change: one builds, the other is refused by the lease (ConcurrentUpdate)
        op = run.next_id()
        v = run.append({(0, 0): op * 100}, "rewrite")
        run.claim(v, op, "append", {(0, 0): op * 100})
        gate, outcomes = threading.Barrier(2), []

        def racer():
            gate.wait()
            try:
                outcomes.append(("built", sfclayer.pyramid(spark, path, quiet=True)))
            except ConcurrentUpdate as e:
                outcomes.append(("refused", str(e)))
        pair = [threading.Thread(target=racer) for _ in range(2)]
        for t in pair:
            t.start()
        for t in pair:
            t.join()
        kinds = sorted(k for k, _ in outcomes)
        assert kinds == ["built", "refused"], f"two pyramid runs at once: {outcomes}"
        # a last update, alone: the pyramid of the newest base version
        sfclayer.pyramid(spark, path, quiet=True)
        states = run.model()
        newest_base = max(run.claims)
        refs = {}
        docs = documents(path)
        newest = max(docs)
        assert int(docs[newest]["baseVersion"]) == newest_base, f"the last update built from {docs[newest]}"
        for number, doc in sorted(docs.items()):
            tiles = {}
            for z, lv in sorted(doc["levelVersions"].items()):
                try:
                    tiles[int(z)] = read_tiles(spark, level_dir(path, z), int(lv))
                except SfcLayerError as e:
                    if number == newest or not vacuumed(e):
                        run.bad.append(f"document {number}: zoom {z} version {lv}: {type(e).__name__}: {e}")
            run.compare(f"document {number} at the end", doc, tiles, states, refs)
            if number == newest:
                for z, lv in sorted(doc["levelVersions"].items()):
                    report = sfclayer.verify(spark, level_dir(path, z), version=int(lv), quiet=True)
                    assert report.clean, f"zoom {z} version {lv}: {report}"
        for where, number, doc, tiles in run.snapshots:
            run.compare(f"{where} (document {number})", doc, tiles, states, refs)
        want = base_tiles(states[newest_base])
        d = differences(want, read_tiles(spark, path, newest_base))
        assert not d, f"base version {newest_base} differs from the model: {d[:6]}"
        assert sfclayer.verify(spark, path, quiet=True).clean
        assert sum(1 for o in run.ops if o[2] == "pyramid" and o[3] == "built") + 2 >= 2
    except AssertionError as e:
        run.bad.append(str(e))
    counts = {}
    for _, _, kind, outcome, _ in run.ops:
        counts[f"{kind} {outcome}"] = counts.get(f"{kind} {outcome}", 0) + 1
    summary = (f"pyramid race seed {seed}: {len(run.ops)} operations by {THREADS} threads in "
               f"{time.monotonic() - started:.0f} s, {counts}, {len(run.snapshots)} snapshots of the newest document "
               f"checked, {len(documents(path))} documents left")
    print(summary)
    if os.environ.get("SFCLAYER_PYRAMID_RACE_VERBOSE"):
        print("\n".join(f"   op {o} thread {t} {k}: {out} {d}" for o, t, k, out, d in sorted(run.ops)))
    if run.bad:
        history = "\n".join(f"   op {o} thread {t} {k}: {out} {d}" for o, t, k, out, d in sorted(run.ops))
        pytest.fail(f"{summary}\n{len(run.bad)} violations (replay: SFCLAYER_PYRAMID_RACE_SEED={seed}):\n - "
                    + "\n - ".join(run.bad) + f"\nhistory:\n{history}")


def test_vacuum_keeps_the_level_versions_the_newest_pyramid_document_pins(spark, tmp_path):
    """Regression (issue 35, found by the race above): a pyramid run appends to a level before it publishes
    the next document, so while it runs (or after it died) the level's newest version is not the one the
    newest document pins. Vacuum dropped every level version but the newest: reads of that zoom then failed
    with LayerNotFound, and the next update could not resume from the pinned version (a full rebuild). Now
    the pinned version is kept whatever the retention, and the update resumes from it."""
    path = str(tmp_path / "base")
    run = Run(spark, path, 0)
    run.create()
    _, doc = pyramids._numbered_document(spark, path)
    pinned = {int(z): int(v) for z, v in doc["levelVersions"].items()}
    before = {z: read_tiles(spark, level_dir(path, z), v) for z, v in pinned.items()}
    # what a run that stopped half way leaves: a newer version of level 2 than the document pins
    assert append_tiles(spark, level_dir(path, 2), {(0, 0): 7}) == pinned[2] + 1
    sfclayer.vacuum(spark, path, retain=0, enforce_retention=False, quiet=True)
    for z, v in pinned.items():
        assert not differences(before[z], read_tiles(spark, level_dir(path, z), v)), f"zoom {z} version {v}"
    rows = sfclayer.read(spark, path, zoom=2).select("col", "row", *raster.COLUMNS).collect()
    assert not differences(before[2], {(x["col"], x["row"]): np.array(raster.to_numpy(x)) for x in rows})
    # the next update resumes from the pinned versions (incremental), and equals a full rebuild
    append_tiles(spark, path, {(5, 1): 8}, "delta")  # a delta file: few changed files, an incremental update
    notes = []
    assert sfclayer.pyramid(spark, path, note=notes.append, quiet=True) == [1, 2]
    assert "full" not in notes[0], notes
    _, doc = pyramids._numbered_document(spark, path)
    state = apply(run.claims[1][0][2], "append", {(5, 1): 8})
    want = reference_pyramid(base_tiles(state))
    for z, v in doc["levelVersions"].items():
        assert not differences(want[int(z)], read_tiles(spark, level_dir(path, z), int(v))), f"zoom {z}"
