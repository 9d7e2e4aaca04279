"""The Python API checks its arguments before any Spark work (issue 12), and ``sfclayer.session``
makes Python workers run the driver's interpreter."""

import os
import sys

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sfclayer
from sfclayer.errors import InvalidArgument


@pytest.fixture(scope="module")
def layer_path(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("args") / "layer")
    df = spark.createDataFrame([(c, r, c + r) for c in range(3) for r in range(3)], "col int, row int, v int")
    sfclayer.write(df, path, bounds=(0, 0, 2, 2), extent=(0, 0, 3, 3))
    return path


def _jobs(spark):
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


@pytest.mark.parametrize("bbox, message", [
    ((1, 2, 3), r"bbox: \(1, 2, 3\) must be four numbers"),
    ("1,2,3", "bbox: '1,2,3' must be four numbers"),
    ((0, 0, "x", 1), "bbox: 'x' in .* is not a number"),
    ((0, 0, float("nan"), 1), "is not a finite number"),
    ((2, 0, 1, 1), "has a minimum above its maximum"),
    (5, "bbox: 5 must be four numbers"),
])
def test_a_bad_bbox_is_invalid_before_any_spark_job(spark, layer_path, bbox, message):
    before = _jobs(spark)
    with pytest.raises(InvalidArgument, match=message):
        sfclayer.read(spark, layer_path, bbox=bbox)
    assert _jobs(spark) == before


@pytest.mark.parametrize("kwargs, message", [
    ({"keys": (0, 0, 1)}, "keys: .* must be four numbers"),
    ({"keys": (0, 0, 1.5, 2)}, r"keys: 1\.5 in .* is not an integer"),
    ({"keys": (3, 0, 1, 2)}, "has a minimum above its maximum"),
    ({"time": (1, 2, 3)}, r"time: .* must be a pair \(start, end\)"),
    ({"time": (5, 2)}, "time: start 5 is after end 2"),
    ({"time": (object(), 2)}, "not a time"),
])
def test_bad_keys_and_times_are_invalid(spark, layer_path, kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        sfclayer.read(spark, layer_path, **kwargs)


@pytest.mark.parametrize("path", [None, "", "  ", 42])
def test_a_bad_path_is_invalid(spark, path):
    with pytest.raises(InvalidArgument, match="is not a layer path"):
        sfclayer.read(spark, path)


def test_good_arguments_still_read(spark, layer_path, tmp_path):
    assert sfclayer.read(spark, layer_path, bbox=[0.5, 0.5, 1.2, 1.2]).count() == 4
    assert sfclayer.read(spark, layer_path, bbox="0.5, 0.5, 1.2, 1.2").count() == 4
    assert sfclayer.read(spark, layer_path, keys=(1, 1, 2, 2)).count() == 4
    import pathlib

    assert sfclayer.read(spark, pathlib.Path(layer_path)).count() == 9


def test_session_makes_python_workers_run_this_interpreter(spark):
    """The suite's session comes from sfclayer.session(): its UDFs run in sys.executable."""
    if os.environ.get("PYSPARK_PYTHON") not in (None, sys.executable):
        pytest.skip("PYSPARK_PYTHON was set before the session started: session() leaves the choice to it")
    assert spark.sparkContext.pythonExec == sys.executable
    where = F.udf(lambda _: sys.executable, T.StringType())
    assert spark.range(1).select(where("id")).first()[0] == sys.executable
    # a UDF can import sfclayer from this interpreter's environment
    version = F.udf(lambda _: __import__("sfclayer").__version__, T.StringType())
    assert spark.range(1).select(version("id")).first()[0] == sfclayer.__version__
