package io.sfclayer.gtfixtures

import org.apache.spark.SparkContext

object Bench {
  def write(sc: SparkContext, catalog: String): Unit = ???
  def read(sc: SparkContext, catalog: String, options: List[String]): Unit = ???
}
