package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.TimeText;
import org.junit.Test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** Vacuum's one 7-day rule and the duration parser both the retention and timeResolution use. */
public class RetentionTest {
    private static final long DAY_MICROS = 86_400_000_000L;

    @Test
    public void retentionsParseWithZeroAllowed() {
        assertEquals(7 * DAY_MICROS, TimeText.parseDurationMicros("retain", "7d", "argument "));
        assertEquals(7 * DAY_MICROS, TimeText.parseDurationMicros("retain", "P7D", "argument "));
        assertEquals(12 * 3_600_000_000L, TimeText.parseDurationMicros("retain", "12 hours", "argument "));
        assertEquals(0, TimeText.parseDurationMicros("retain", "0s", "argument "));
        assertEquals(0, TimeText.parseDurationMicros("retain", "PT0S", "argument "));
    }

    @Test
    public void badDurationsNameTheArgumentOrTheOption() {
        String m = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> TimeText.parseDurationMicros("retain", "-1d", "argument ")).reason();
        assertTrue(m, m.startsWith("argument retain: '-1d' is not a duration"));
        m = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> TimeText.parseDurationMicros("retain", "PT-1H", "argument ")).reason();
        assertEquals("argument retain: 'PT-1H' must not be negative", m);
        // an option's duration (a time bin) must stay positive
        m = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> TimeText.parseDurationMicros("timeResolution", "0s")).reason();
        assertEquals("option timeResolution: '0s' must be positive", m);
    }

    @Test
    public void underSevenDaysIsRefusedUnlessForced() {
        Vacuum.checkRetention(Vacuum.DEFAULT_RETAIN_MILLIS, true, "x", "y"); // exactly 7 days passes
        Vacuum.checkRetention(0, false, "x", "y");                            // the check turned off
        String m = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> Vacuum.checkRetention(Vacuum.DEFAULT_RETAIN_MILLIS - 1, true, "argument retain: '6d'",
                "pass force => true")).reason();
        assertTrue(m, m.startsWith("argument retain: '6d' is under the 7-day minimum: "));
        assertTrue(m, m.endsWith("; to do it anyway, pass force => true"));
    }
}
