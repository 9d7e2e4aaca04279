"""sfclayer.session(..., s3=...): which Spark settings put the S3A connector on the class path."""

import pytest

from sfclayer import _s3a
from sfclayer.errors import InvalidArgument


def test_a_directory_of_jars_becomes_spark_jars(tmp_path):
    for name in ("hadoop-aws-3.5.0.jar", "s3-2.35.4.jar", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    conf = _s3a.spark_conf(str(tmp_path))
    assert conf == {"spark.jars": f"{tmp_path / 'hadoop-aws-3.5.0.jar'},{tmp_path / 's3-2.35.4.jar'}"}


def test_a_directory_without_hadoop_aws_is_refused_naming_it(tmp_path):
    with pytest.raises(InvalidArgument, match=r"no hadoop-aws-\*\.jar in .*make s3-jars"):
        _s3a.spark_conf(str(tmp_path))


def test_true_without_local_jars_asks_spark_for_the_packages_without_the_bundle(monkeypatch, tmp_path):
    monkeypatch.delenv("SFCLAYER_S3A_JARS", raising=False)
    monkeypatch.setattr(_s3a, "_CHECKOUT", str(tmp_path / "none"))
    assert _s3a.spark_conf(True) == {
        "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.5.0,software.amazon.awssdk:s3:2.35.4,"
                               "software.amazon.awssdk:s3-transfer-manager:2.35.4",
        "spark.jars.excludes": "software.amazon.awssdk:bundle"}
    assert _s3a.spark_conf(False) == {} and _s3a.spark_conf(None) == {}


def test_true_prefers_the_directory_named_by_the_environment(monkeypatch, tmp_path):
    (tmp_path / "hadoop-aws-3.5.0.jar").write_bytes(b"")
    monkeypatch.setenv("SFCLAYER_S3A_JARS", str(tmp_path))
    assert _s3a.spark_conf(True) == {"spark.jars": str(tmp_path / "hadoop-aws-3.5.0.jar")}
