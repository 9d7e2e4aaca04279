"""The race model on HDFS and S3 (issue 35): the harness of the JUnit RacesTest (io.sfclayer.testing.RaceHarness,
in the benchmark/test jar) run through the session's Spark on the MiniHdfs fixture and on S3Proxy. Threads run random
appends (copy-on-write and delta files), deletes, compactions, zero-retention vacuums, restores and repairs on one
layer, delays injected at filesystem
calls and an IOException at 1 % of them (io.sfclayer.testing.DelayFs around the store's own filesystem); every
committed version is checked against a dict model, an operation failed by a fault wholly in or out (see RaceChecker). A sample of 12 s each; the seed is printed, and SFCLAYER_RACE_SEED replays it,
SFCLAYER_RACE_SECONDS makes the run longer (``make races``)."""

import os

import pytest

from tests import helpers

pytestmark = pytest.mark.usefixtures("spark")


def _run(spark, path, seconds=12, threads=4, delay_probability=0.3, delay_max_millis=20, fail_probability=0.01):
    """As many operations as fit in ``seconds`` (at least one a thread), then the check."""
    harness, seed = helpers.seeded_test_jar_run(spark, "RaceHarness", "SFCLAYER_RACE_SEED", "race")
    seconds = int(os.environ.get("SFCLAYER_RACE_SECONDS") or seconds)
    summary = harness.run(spark._jsparkSession, path, seed, threads, 10**6,
                          seconds * 1000, delay_probability, delay_max_millis, fail_probability)
    print(summary)
    assert "FAILED=0" in summary
    return summary


@pytest.mark.hdfs
def test_races_on_hdfs_agree_with_the_model(spark, hdfs):
    _run(spark, hdfs.path("races"))


@pytest.mark.s3
def test_races_on_s3_agree_with_the_model(spark, s3_race):
    _run(spark, s3_race.path("races"))
