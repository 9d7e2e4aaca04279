"""Warnings sfclayer keeps out of ordinary use, each known to be harmless (issue 37).

* pyspark 4.3's ``FutureWarning`` "PySpark does not yet fully support pandas >= 3.0.0", printed twice
  a session (pyspark.sql.pandas and Spark Connect's utils check the version on import): sfclayer's
  pandas use (zonal statistics' ``mapInPandas``) is tested on the pandas it installs, and a user of
  pandas elsewhere still gets pyspark's other pandas warnings.
* Spark's start-up log lines on a local session: "Your hostname ... resolves to a loopback address"
  (a local master binds to loopback anyway: SPARK_LOCAL_IP=127.0.0.1 is set when unset), "Unable to load
  native-hadoop library" (Hadoop's pure-Java code is used, as everywhere pyspark runs from a wheel), and
  the "Using Spark's default log4j profile" / "Setting default log level" lines (sfclayer's log4j
  configuration below: Spark's defaults at WARN, the native-library notice at ERROR).
A user's own ``spark.driver.extraJavaOptions`` or ``SPARK_LOCAL_IP`` is left alone. The JVM's own
"WARNING: Using incubator modules: jdk.incubator.vector" (Spark 4 asks for the module) cannot be
filtered from Python.
"""

import hashlib
import os
import tempfile
import warnings

__all__ = ["filter_warnings", "spark_conf"]

_LOG4J = """\
# sfclayer's Spark log configuration: Spark's defaults (org/apache/spark/log4j2-defaults.properties) at
# WARN, without the notice that Hadoop's native library is not there (its Java code is used instead).
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.metastore.name = org.apache.hadoop.hive.metastore.RetryingHMSHandler
logger.metastore.level = fatal
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
"""


def filter_warnings():
    """Ignore pyspark's pandas-3 FutureWarning (see the module's docstring)."""
    warnings.filterwarnings("ignore", message=r"PySpark does not yet fully support pandas >= 3",
                            category=FutureWarning)


def _log4j_file():
    name = f"sfclayer-log4j2-{hashlib.sha1(_LOG4J.encode()).hexdigest()[:12]}.properties"
    path = os.path.join(tempfile.gettempdir(), name)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(_LOG4J)
        os.replace(tmp, path)
    return path


def spark_conf(master, conf):
    """Settings :func:`sfclayer.session` adds to ``conf`` (not replacing the user's) for a quiet start."""
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "spark.driver.extraJavaOptions" in conf:
        return {}
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log4j_file()}"}
