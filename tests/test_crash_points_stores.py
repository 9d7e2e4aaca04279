"""Crash points on HDFS and S3 (issue 35): a seeded sample of the JUnit CrashPointsTest's points (an operation, one
of its filesystem calls, and a failure: an IOException, a java.lang.Error, or every call from it on, as a process
killed there leaves the store) run on the MiniHdfs fixture and on S3Proxy through io.sfclayer.testing.StoreCrashPoints
(test jar), each on a fresh copy of a pristine layer: after each the layer reads as before or as after, every
version verifies clean, and a next write and a vacuum work. CrashPointsTest runs every point on local files; here
a sample fits a CI run. The seed is printed; SFCLAYER_CRASH_SEED replays it, SFCLAYER_CRASH_POINTS=N runs N a store
(``make crash-points``)."""

import os

import pytest

from tests import helpers

pytestmark = pytest.mark.usefixtures("spark")


def _run(spark, root, points=2):
    crash_points, seed = helpers.seeded_test_jar_run(spark, "StoreCrashPoints", "SFCLAYER_CRASH_SEED", "crash-point")
    points = int(os.environ.get("SFCLAYER_CRASH_POINTS") or points)
    print(crash_points.run(spark._jsparkSession, root, seed, points))


@pytest.mark.hdfs
def test_crash_points_on_hdfs_leave_the_layer_before_or_after(spark, hdfs):
    _run(spark, hdfs.path("crash-points"))


@pytest.mark.s3
def test_crash_points_on_s3_leave_the_layer_before_or_after(spark, s3_race):
    _run(spark, s3_race.path("crash-points"))
