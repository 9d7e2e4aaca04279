package io.sfclayer;

import java.net.URL;
import java.util.List;

import org.apache.spark.ErrorClassesJsonReader;

/**
 * sfclayer's error conditions ({@code SFCLAYER_...}): the jar's {@code io/sfclayer/error-conditions.json},
 * in the format of Spark's own {@code error/error-conditions.json} and read by Spark's reader of it, so
 * the table says each condition's SQLSTATE in one place (Spark's global table cannot take entries from
 * a connector).
 */
final class ErrorConditions {
    private static final String TABLE = "/io/sfclayer/error-conditions.json";
    private static volatile ErrorClassesJsonReader reader;

    private ErrorConditions() {}

    private static ErrorClassesJsonReader reader() {
        ErrorClassesJsonReader r = reader;
        if (r == null) {
            URL url = ErrorConditions.class.getResource(TABLE);
            if (url == null) {
                throw new IllegalStateException("sfclayer's jar has no " + TABLE);
            }
            r = new ErrorClassesJsonReader(scala.jdk.javaapi.CollectionConverters.asScala(List.of(url)).toList());
            reader = r;
        }
        return r;
    }

    static String sqlState(String condition) {
        return reader().getSqlState(condition);
    }

    static String template(String condition) {
        return reader().getMessageTemplate(condition);
    }
}
