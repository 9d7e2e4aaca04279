"""Commits on S3 that never lose a version: true races, lost answers, stores without conditional writes.

The race and the lost answer run on S3Proxy (its transient-nio2 backend decides ``If-None-Match: *``
atomically; moto checks then writes without a lock, so it cannot referee a race) behind the
FaultProxy of integration/s3.py, which holds the writers' PUTs of a version document until both are
in flight, or loses the answer to one that succeeded.
"""

import threading

import pytest
from pyspark.sql import functions as F

import sfclayer

pytestmark = pytest.mark.s3

COLS, ROWS = 16, 4
VERSION_DOC = r"/_sfclayer/v\d{8}\.json$"
ROUNDS = 6


def tile_df(spark, keys, bump=0):
    return (spark.createDataFrame(keys, "col int, row int")
            .withColumn("v", F.col("col") * 100 + F.col("row") + F.lit(bump)))


def values(spark, path):
    return {(r.col, r.row): r.v for r in sfclayer.read(spark, path).select("col", "row", "v").collect()}


def new_layer(spark, bucket, name):
    """A layer holding row 0 only: later appends insert tiles into rows 1..3."""
    path = bucket.path(name)
    sfclayer.write(tile_df(spark, [(c, 0) for c in range(COLS)]), path, bounds=(0, 0, COLS - 1, ROWS - 1),
                   partitions=1)
    return path


def append_in_threads(spark, path, keys):
    """Appends each key's tile from a thread of its own, all at once; per key: None or the exception."""
    outcome = {}

    def run(key):
        try:
            # no automatic compaction: its own versions would be counted here as lost commits' numbers
            sfclayer.write(tile_df(spark, [key]), path, mode="append", compact_after_deltas=0)
            outcome[key] = None
        except Exception as e:  # judged by the caller
            outcome[key] = e

    threads = [threading.Thread(target=run, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "an append did not finish"
    return outcome


def test_two_commits_in_flight_for_one_version_never_lose_one(spark, s3_race):
    """Each round two writers append one tile each; the proxy holds the first PUT of a version
    document until the other writer's PUT of the same document is in flight, so both reach the
    server at once. Exactly one wins that version; the other rebases and commits the next one, or
    fails with ConcurrentUpdate. Every success is in the layer and every version is someone's."""
    proxy = s3_race.proxy
    path = new_layer(spark, s3_race, "race")
    expected = {(c, 0): c * 100 for c in range(COLS)}
    versions = 1
    raced = 0
    for i in range(ROUNDS):
        proxy.clear()
        proxy.hold(VERSION_DOC, n=2, timeout=20)
        keys = [(2 * i, 1 + i % 3), (2 * i + 1, 1 + i % 3)]
        outcome = append_in_threads(spark, path, keys)
        held = [p for p, gen in proxy.held if gen == 0]
        if len(held) == 2 and held[0] == held[1]:
            raced += 1  # both writers' PUTs of the same version were at the server together
        for key, error in outcome.items():
            if error is None:
                expected[key] = key[0] * 100 + key[1]
                versions += 1
            else:
                assert isinstance(error, sfclayer.ConcurrentUpdate), repr(error)
        assert any(e is None for e in outcome.values()), f"round {i}: neither append committed: {outcome}"
        history = sfclayer.history(spark, path)
        assert [v.version for v in history] == list(range(1, versions + 1)), \
            f"round {i}: {outcome}: a success without its own version (a lost commit)"
        assert values(spark, path) == expected, f"round {i}: {outcome}: a committed tile is missing"
    proxy.clear()
    assert raced >= ROUNDS - 1, f"only {raced} of {ROUNDS} rounds had both PUTs in flight together"


def test_a_lost_answer_to_our_commit_is_recognised_as_our_commit(spark, s3_race):
    """The PUT of the version document succeeds at the server, the client sees a 500 (and its retry,
    the 412 of the object now present): the write reports success, the version is its own, once."""
    proxy = s3_race.proxy
    path = new_layer(spark, s3_race, "lost-ack")
    proxy.clear()
    proxy.lose_answer(VERSION_DOC)
    sfclayer.write(tile_df(spark, [(3, 2)]), path, mode="append")
    lost = list(proxy.lost)
    puts = [(p, status) for m, p, status in proxy.log if m == "PUT" and p.endswith("/_sfclayer/v00000002.json")]
    proxy.clear()
    assert lost and lost[0][1] == 200, f"no answer was lost: {lost}"
    assert puts[0][1] == 200 and all(status == 412 for _, status in puts[1:]), puts
    history = sfclayer.history(spark, path)
    assert [v.operation for v in history] == ["write", "append"]
    assert values(spark, path) == {**{(c, 0): c * 100 for c in range(COLS)}, (3, 2): 302}
    assert sfclayer.verify(spark, path).clean


def test_a_store_without_conditional_writes_is_refused_unless_one_writer_is_declared(spark, s3):
    """S3A with conditional writes off (an S3-compatible store without If-None-Match): a commit there
    could be lost, so the write is refused naming the setting; declared single-writer, it works."""
    from integration import s3 as s3_helpers

    bucket = "sfclayer-noconditional"
    s3.server.create_bucket(bucket)
    settings = s3_helpers.s3a_settings(bucket, s3.server.endpoint)
    settings[f"fs.s3a.bucket.{bucket}.create.conditional.enabled"] = "false"
    s3_helpers.configure_spark(spark, settings)
    path = f"s3a://{bucket}/{s3.run}/layer"
    df = tile_df(spark, [(c, 0) for c in range(COLS)])
    with pytest.raises(sfclayer.InvalidArgument, match=r"fs\.s3a\.create\.conditional\.enabled.*singleWriter"):
        sfclayer.write(df, path, bounds=(0, 0, COLS - 1, ROWS - 1))
    with pytest.raises(sfclayer.LayerNotFound):
        sfclayer.read(spark, path).count()  # nothing was published
    sfclayer.write(df, path, bounds=(0, 0, COLS - 1, ROWS - 1), singleWriter="true")
    sfclayer.write(tile_df(spark, [(2, 3)]), path, mode="append", singleWriter="true")
    assert values(spark, path) == {**{(c, 0): c * 100 for c in range(COLS)}, (2, 3): 203}
    assert [v.operation for v in sfclayer.history(spark, path)] == ["write", "append"]
