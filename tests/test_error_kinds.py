"""What went wrong is told by the exception's class, never by its message's words (issue 26): a file
system that fails is a StorageError, a missing file InvalidInput, whatever the message says."""

import pytest

from integration.s3 import free_port  # a port nothing listens on
from sfclayer import InvalidInput, StorageError, _jvm


@pytest.fixture
def no_ipc_retries(spark):
    """The Hadoop client gives up on a refused connection at once (it retries for seconds by default)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    keys = ("ipc.client.connect.max.retries", "ipc.client.connect.max.retries.on.timeouts")
    old = {k: conf.get(k) for k in keys}
    for k in keys:
        conf.set(k, "0")
    yield
    for k, v in old.items():
        conf.unset(k) if v is None else conf.set(k, v)


def test_a_file_system_that_fails_is_a_storage_error_not_a_missing_file(spark, no_ipc_retries):
    path = f"hdfs://127.0.0.1:{free_port()}/dem.tif"
    with pytest.raises(StorageError, match="cannot open hdfs://127.0.0.1:.*/dem.tif") as e:
        _jvm.hadoop_file_status(spark, path)
    assert not isinstance(e.value, InvalidInput)


def test_a_missing_file_is_invalid_input(spark, tmp_path):
    with pytest.raises(InvalidInput, match="cannot open file:.*/missing.tif: no such file"):
        _jvm.hadoop_file_status(spark, f"file:{tmp_path}/missing.tif")
