"""A pyramid update starts from the level versions its document pins (issue 35, item 4): a run that
fails part way (an IOException writing level 1) and is rerun after the base changed again gives the
levels a full rebuild gives; and the document is published as numbered documents, never replaced
(item 5): a reader checking while another process publishes many times never finds it missing."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import sfclayer
from sfclayer import pyramids

from .test_pyramid_update import assert_same_as_scratch, scratch_pyramid, tile_pixels, tiles_df, write_base

pytest.importorskip("morecantile")


def _fail_writing_level(monkeypatch, zoom):
    """Make the next write of pyramid level ``zoom`` fail as a filesystem would (an IOException)."""
    real = pyramids._layer.write

    def write(df, path, *args, **kwargs):
        if path.rstrip("/").endswith(f"/_pyramid/{zoom}"):
            raise OSError(f"injected IOException writing {path}")
        return real(df, path, *args, **kwargs)

    monkeypatch.setattr(pyramids._layer, "write", write)


def _documents(path):
    return sorted(f for f in os.listdir(os.path.join(path, "_pyramid")) if f.startswith("pyramid-"))


@pytest.mark.parametrize("first_run", ["incremental", "full"])
def test_an_interrupted_update_rerun_after_more_changes_equals_a_full_rebuild(spark, tmp_path, monkeypatch, first_run):
    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(10 * c + r)) for c in range(4) for r in range(4)], block_size="128k")
    assert sfclayer.pyramid(spark, path, min_zoom=1) == [1, 2]
    doc = pyramids._document(spark, path)
    assert doc["levelVersions"] == {"1": 1, "2": 1} and doc["baseVersion"] == 1

    # Version 2 inserts (6, 2) where there was no tile; the run carrying it up fails writing level 1,
    # after level 2 took the parent (3, 1) computed from it.
    sfclayer.write(tiles_df(spark, [((6, 2), tile_pixels(77))]), path, mode="append")
    with monkeypatch.context() as m:
        _fail_writing_level(m, 1)
        with pytest.raises(OSError, match="injected"):
            sfclayer.pyramid(spark, path, full=first_run == "full")
    assert pyramids._document(spark, path)["baseVersion"] == 1  # the run published nothing
    assert sfclayer.history(spark, os.path.join(path, "_pyramid", "2"))[-1].version == 2  # but level 2 changed

    # Version 3 deletes (6, 2) again and version 4 replaces (2, 2): from version 1, only (2, 2) changed.
    sfclayer.delete(spark, path, keys=(6, 2, 6, 2))
    sfclayer.write(tiles_df(spark, [((2, 2), tile_pixels(5))]), path, mode="append")
    messages = []
    assert sfclayer.pyramid(spark, path, note=messages.append) == [1, 2]
    assert messages[0].startswith("incremental update from version 1 to 4 of the base: 1 changed tiles"), messages

    scratch = str(tmp_path / "scratch")
    scratch_pyramid(spark, path, scratch, min_zoom=1)
    assert_same_as_scratch(spark, path, scratch, (1, 2))  # every level, so they agree with each other too
    level2 = {v.operation for v in sfclayer.history(spark, os.path.join(path, "_pyramid", "2"))}
    assert "restore" in level2  # the interrupted run's append was restored away, not rewritten
    assert pyramids._document(spark, path)["baseVersion"] == 4


def test_a_vacuumed_pinned_level_version_falls_back_to_a_full_rebuild(spark, tmp_path, monkeypatch):
    import datetime as dt

    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(c + 8 * r)) for c in range(4) for r in range(4)], block_size="128k")
    sfclayer.pyramid(spark, path, min_zoom=1)
    sfclayer.write(tiles_df(spark, [((1, 1), tile_pixels(99))]), path, mode="append")
    with monkeypatch.context() as m:
        _fail_writing_level(m, 1)
        with pytest.raises(OSError, match="injected"):
            sfclayer.pyramid(spark, path)
    # A zero-retention vacuum of level 2 alone drops its pinned version 1 (the base keeps its versions).
    level2 = os.path.join(path, "_pyramid", "2")
    sfclayer.vacuum(spark, level2, retain=dt.timedelta(0), enforce_retention=False)
    sfclayer.write(tiles_df(spark, [((2, 2), tile_pixels(98))]), path, mode="append")
    messages = []
    sfclayer.pyramid(spark, path, note=messages.append)
    assert messages[0].startswith("full rebuild: level 2 holds changes of an interrupted run after its version 1"), \
        messages
    assert "removed by vacuum" in messages[0]
    scratch = str(tmp_path / "scratch")
    scratch_pyramid(spark, path, scratch, min_zoom=1)
    assert_same_as_scratch(spark, path, scratch, (1, 2))


def test_the_document_is_a_new_numbered_file_per_change_and_the_old_one_still_reads(spark, tmp_path):
    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(c + r)) for c in range(4) for r in range(4)])
    sfclayer.pyramid(spark, path, min_zoom=1)
    assert _documents(path) == ["pyramid-00000001.json"]
    first = json.loads((tmp_path / "base" / "_pyramid" / "pyramid-00000001.json").read_text())
    assert first["formatVersion"] == 4 and first["baseVersion"] == 1
    for i in range(2, 11):
        sfclayer.write(tiles_df(spark, [((0, 0), tile_pixels(i))]), path, mode="append")
        sfclayer.pyramid(spark, path)
    # One document per change; the publisher keeps the newest 8.
    assert _documents(path) == [f"pyramid-{n:08d}.json" for n in range(3, 11)]
    assert pyramids._document(spark, path)["baseVersion"] == 10
    assert sfclayer.pyramid_levels(spark, path) == [1, 2, 3]

    # A layer of an earlier sfclayer has the single pyramid.json (format 3): read as it is, and replaced by
    # numbered documents at the next update (an older reader then finds no pyramid, not a wrong one).
    legacy = dict(pyramids._document(spark, path), formatVersion=3)
    legacy["sha256"] = pyramids._checksum(legacy)
    for name in _documents(path):
        os.remove(os.path.join(path, "_pyramid", name))
        crc = os.path.join(path, "_pyramid", f".{name}.crc")
        if os.path.exists(crc):
            os.remove(crc)
    (tmp_path / "base" / "_pyramid" / "pyramid.json").write_text(json.dumps(legacy))
    assert pyramids._document(spark, path) == legacy
    assert sfclayer.pyramid_levels(spark, path) == [1, 2, 3]
    sfclayer.write(tiles_df(spark, [((0, 0), tile_pixels(50))]), path, mode="append")
    sfclayer.pyramid(spark, path)
    assert _documents(path) == ["pyramid-00000001.json"]
    assert not os.path.exists(os.path.join(path, "_pyramid", "pyramid.json"))
    # version 11, the tenth delta version, and the compaction it started (compactAfterDeltas=10): 12
    assert pyramids._document(spark, path)["baseVersion"] == 12


PUBLISHER = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from sfclayer import _jvm, pyramids
    spark = SparkSession.builder.master("local[1]").config("spark.jars", sys.argv[3]).getOrCreate()
    doc = json.load(open(sys.argv[2]))
    for n in range(2, 2 + int(sys.argv[4])):
        doc["createdAt"] = f"publish {n}"
        doc["sha256"] = pyramids._checksum(doc)
        assert _jvm.publish_pyramid_document(spark, sys.argv[1], n, json.dumps(doc))
    print("published", flush=True)
""")


def test_a_reader_never_finds_the_document_missing_while_another_process_publishes(spark, tmp_path):
    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(c + r)) for c in range(4) for r in range(4)])
    sfclayer.pyramid(spark, path, min_zoom=2)
    text = tmp_path / "doc.json"
    text.write_text((tmp_path / "base" / "_pyramid" / "pyramid-00000001.json").read_text())
    script = tmp_path / "publish.py"
    script.write_text(PUBLISHER)
    jar = os.path.join(os.path.dirname(sfclayer.__file__), "jars", "sfclayer.jar")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, str(script), os.path.join(path, "_pyramid"), str(text), jar, "300"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checks = missing = 0
    seen = set()
    try:
        while proc.poll() is None or checks < 50:
            doc = pyramids._document(spark, path)
            checks += 1
            missing += doc is None
            seen.add(None if doc is None else doc["createdAt"])
    finally:
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "published" in out, err[-2000:]
    assert missing == 0 and checks >= 50, (missing, checks)
    assert len({s for s in seen if s and s.startswith("publish ")}) > 1, seen  # it read while they were published
    assert _documents(path)[-1] == "pyramid-00000301.json"


def test_a_restore_of_the_base_makes_the_pyramid_stale_until_an_update_says_so(spark, tmp_path, capsys):
    from sfclayer import cli

    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(c + 4 * r)) for c in range(4) for r in range(4)], block_size="128k")
    sfclayer.write(tiles_df(spark, [((1, 1), tile_pixels(90))]), path, mode="append")
    sfclayer.pyramid(spark, path, min_zoom=2)
    assert sfclayer.pyramid_levels(spark, path) == [2, 3]
    assert cli.main(["restore", path, "--version", "1"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f"the pyramid of {path} was built from version 2: it is stale (not read) until "
                        f"`sfclayer pyramid {path}` updates it\n"), out
    assert sfclayer.pyramid_levels(spark, path) == [3]  # the stale level is not read
    with pytest.raises(sfclayer.LayerNotFound, match="built from version 2 and the layer is at version 3"):
        sfclayer.read(spark, path, zoom=2)
    assert cli.main(["pyramid", path]) == 0
    out = capsys.readouterr().out
    assert "incremental update from version 2 to 3 of the base: 1 changed tiles" in out
    assert "(version 3 restored an earlier version)" in out
    scratch = str(tmp_path / "scratch")
    scratch_pyramid(spark, path, scratch, min_zoom=2)
    assert_same_as_scratch(spark, path, scratch, (2,))


@pytest.mark.s3
def test_on_s3_a_reader_never_finds_the_document_missing_while_another_thread_publishes(spark, s3_race):
    import threading

    from sfclayer import _jvm

    path = s3_race.path("pyramid-documents")
    directory = path + "/_pyramid"

    def text(n):
        doc = {"format": "sfclayer-pyramid", "formatVersion": 4, "levels": [], "baseVersion": 1,
               "createdAt": f"publish {n}"}
        doc["sha256"] = pyramids._checksum(doc)
        return json.dumps(doc)

    assert _jvm.publish_pyramid_document(spark, directory, 1, text(1))
    failures = []

    def publish():
        try:
            for n in range(2, 62):
                assert _jvm.publish_pyramid_document(spark, directory, n, text(n))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)

    publisher = threading.Thread(target=publish)
    publisher.start()
    checks = missing = 0
    seen = set()
    while publisher.is_alive() or checks < 20:
        doc = pyramids._document(spark, path)
        checks += 1
        missing += doc is None
        seen.add(None if doc is None else doc["createdAt"])
    publisher.join()
    assert not failures and missing == 0, (failures, missing, checks)
    assert len(seen) > 1, seen
    assert pyramids._document(spark, path)["createdAt"] == "publish 61"
    assert not _jvm.publish_pyramid_document(spark, directory, 61, text(99))  # taken: another run published it
