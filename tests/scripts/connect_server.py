"""The test run's Spark Connect server (the ``connect`` fixture in conftest.py).

    python connect_server.py PORT CONF_JSON

Starts pyspark's own local Connect server the way a user would, ``sfclayer.configure(
SparkSession.builder.remote("local[2]"))`` (the connector jar, ``$SFCLAYER_JAR``, and the catalog on
the server side), listening on loopback at PORT with the token in ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``.
Prints ``ready`` once it serves, then runs until its standard input closes (the fixture's end).
"""

import json
import sys


def main():
    port, conf = sys.argv[1], json.loads(sys.argv[2])
    from pyspark.sql import SparkSession

    import sfclayer

    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    # remote("local") has its client dial the default port, 15002; this server listens on a port of
    # its own, so runs side by side do not meet
    DefaultChannelBuilder.default_port = staticmethod(lambda: int(port))
    builder = SparkSession.builder.remote("local[2]").appName("sfclayer-connect-tests")
    conf.update({"spark.connect.grpc.binding.port": port, "spark.connect.grpc.binding.address": "127.0.0.1"})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = sfclayer.configure(builder).getOrCreate()
    spark.range(1).count()  # the server answers
    print("ready", flush=True)
    sys.stdin.read()
    spark.stop()


if __name__ == "__main__":
    main()
