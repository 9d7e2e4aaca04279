package io.sfclayer;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.lang.reflect.Constructor;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.SparkThrowable;
import org.junit.Test;

/**
 * Every sfclayer error is a SparkThrowable with its own SFCLAYER_ condition and a SQLSTATE, so Spark
 * Connect clients and SQL users can tell them apart without the Java class (issue 21).
 */
public class ErrorConditionsTest {

    private static SfcLayerException make(Class<?> cls) throws Exception {
        for (Constructor<?> c : cls.getConstructors()) {
            if (c.getParameterCount() == 1) {
                return (SfcLayerException) c.newInstance("the message");
            }
        }
        return (SfcLayerException) cls.getConstructor(String.class, Throwable.class)
            .newInstance("the message", new java.io.IOException("cause"));
    }

    @Test
    public void eachClassHasItsOwnConditionAndAValidSqlState() throws Exception {
        Map<String, String> seen = new HashMap<>();
        Map<Class<?>, SfcLayerException> all = new HashMap<>();
        all.put(SfcLayerException.class, make(SfcLayerException.class));
        for (Class<?> cls : SfcLayerException.class.getClasses()) {
            if (SfcLayerException.class.isAssignableFrom(cls)) {
                all.put(cls, make(cls));
            }
        }
        assertTrue(all.size() >= 12);
        for (Map.Entry<Class<?>, SfcLayerException> e : all.entrySet()) {
            SparkThrowable t = e.getValue();
            String condition = t.getCondition();
            assertTrue(condition, condition.matches("SFCLAYER_[A-Z_]+"));
            assertEquals(condition, condition, t.getErrorClass());
            String previous = seen.put(condition, e.getKey().getName());
            assertNull(condition + " used by " + previous + " and " + e.getKey().getName(), previous);
            assertTrue(t.getSqlState(), t.getSqlState().matches("[0-9A-Z]{5}"));
            // Spark's own table has no SFCLAYER_ entries: these must not consult it
            assertTrue(t.getMessageParameters().isEmpty());
            assertNull(t.getBreakingChangeInfo());
            assertFalse(t.isInternalError());
            assertEquals("the message", e.getValue().reason());
            assertEquals("[" + condition + "] the message", e.getValue().getMessage());
        }
        assertEquals("SFCLAYER_KEY_NOT_FOUND", new SfcLayerException.KeyNotFound("k").getCondition());
        assertEquals("42P01", new SfcLayerException.LayerNotFound("p").getSqlState());
    }
}
