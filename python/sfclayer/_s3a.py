"""The S3A connector's jars for :func:`sfclayer.session` (``s3=...``): Spark settings that put
hadoop-aws and the AWS SDK v2 modules it was built with on the class path.

pyspark 4.3 ships Hadoop 3.5.0's client without S3A. S3A is ``org.apache.hadoop:hadoop-aws:3.5.0``
plus the AWS SDK v2 it was built against, 2.35.4; it depends on the SDK's ``bundle`` (558 MB, every
AWS service) where it needs only ``s3`` and ``s3-transfer-manager`` (about 13 MB with their
dependencies, less what Spark ships already: netty, Apache HttpClient, SLF4J, commons-codec).
"""

import glob
import os

__all__ = ["HADOOP_AWS", "AWS_SDK", "PACKAGES", "EXCLUDES", "spark_conf"]

HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"
"""The S3A connector, the same Hadoop version as pyspark 4.3's client jars."""
AWS_SDK = "2.35.4"
"""The AWS SDK v2 version hadoop-aws 3.5.0 was built and tested with."""
PACKAGES = (HADOOP_AWS, f"software.amazon.awssdk:s3:{AWS_SDK}", f"software.amazon.awssdk:s3-transfer-manager:{AWS_SDK}")
"""Maven coordinates for ``spark.jars.packages``."""
EXCLUDES = ("software.amazon.awssdk:bundle",)
"""What ``spark.jars.excludes`` leaves out: the SDK's all-services bundle."""

_ENV = "SFCLAYER_S3A_JARS"
# a source checkout's `make s3-jars` (integration/fetch-s3-jars.sh) puts them here
_CHECKOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                         "integration", "target", "s3-jars")


def spark_conf(s3):
    """Spark settings for ``sfclayer.session(..., s3=s3)``.

    Parameters
    ----------
    s3 : bool or str
        A directory holding the jars (as ``make s3-jars`` leaves them in
        ``integration/target/s3-jars``); or True: the directory named by ``SFCLAYER_S3A_JARS``, else a
        source checkout's ``integration/target/s3-jars`` when it is complete, else
        ``spark.jars.packages`` (Spark fetches :data:`PACKAGES` from Maven Central once, into
        ``~/.ivy2``); False or None: nothing.

    Returns
    -------
    dict
        ``spark.jars`` (a list of jar files) or ``spark.jars.packages`` and ``spark.jars.excludes``.

    Raises
    ------
    sfclayer.errors.InvalidArgument
        If the directory named holds no ``hadoop-aws-*.jar``.
    """
    from .errors import InvalidArgument

    if not s3:
        return {}
    directory = s3 if isinstance(s3, (str, os.PathLike)) else os.environ.get(_ENV)
    if directory is None and os.path.exists(os.path.join(_CHECKOUT, ".done")):
        directory = _CHECKOUT
    if directory is None:
        return {"spark.jars.packages": ",".join(PACKAGES), "spark.jars.excludes": ",".join(EXCLUDES)}
    jars = sorted(glob.glob(os.path.join(os.fspath(directory), "*.jar")))
    if not any(os.path.basename(j).startswith("hadoop-aws-") for j in jars):
        raise InvalidArgument(f"s3={s3!r}: no hadoop-aws-*.jar in {os.path.abspath(directory)} "
                              "(`make s3-jars` fetches them; s3=True fetches them through spark.jars.packages)")
    return {"spark.jars": ",".join(os.path.abspath(j) for j in jars)}
