package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Times and durations as people write them, in epoch microseconds: the one parser of the JVM side,
 * below everything that reads a time (write options, read options, commands, version documents'
 * {@code createdAt}, a vacuum's retention). {@link TimeBounds#formatMicros} prints them back.
 */
public final class TimeText {
    private TimeText() {
    }

    private static final Pattern DURATION = Pattern.compile(
        "(\\d+)\\s*(us|micros?|microseconds?|ms|millis?|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?|w|weeks?)",
        Pattern.CASE_INSENSITIVE);

    /** Epoch micros, and an offset at the end: compiled once (every version document's createdAt is parsed). */
    private static final Pattern INTEGER = Pattern.compile("-?\\d+");
    private static final Pattern OFFSET_AT_END = Pattern.compile(".*[+-]\\d\\d:\\d\\d$");

    /** A positive duration option: "1 day", "6 hours", "15m", "1d", or ISO-8601 "PT1H". */
    public static long parseDurationMicros(String name, String v) {
        long micros = parseDurationMicros(name, v, "option ");
        if (micros <= 0) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v + "' must be positive");
        }
        return micros;
    }

    /**
     * The same durations, zero allowed (a vacuum's retention), named in errors as {@code kind + name}:
     * {@code "option "} or {@code "argument "} (a SQL procedure's).
     */
    public static long parseDurationMicros(String name, String v, String kind) {
        String s = v.trim();
        long micros;
        if (s.toUpperCase(Locale.ROOT).startsWith("P")) {
            try {
                micros = java.time.Duration.parse(s).toNanos() / 1000;
            } catch (DateTimeParseException | ArithmeticException e) {
                throw new SfcLayerException.InvalidArgument(kind + name + ": '" + v + "' is not an ISO-8601 duration");
            }
        } else {
            Matcher m = DURATION.matcher(s);
            if (!m.matches()) {
                throw new SfcLayerException.InvalidArgument(kind + name + ": '" + v
                    + "' is not a duration (e.g. '1 day', '6 hours', '15 minutes', 'PT1H')");
            }
            long n = Long.parseLong(m.group(1));
            String unit = m.group(2).toLowerCase(Locale.ROOT);
            long per;
            if (unit.startsWith("us") || unit.startsWith("micro")) per = 1;
            else if (unit.equals("ms") || unit.startsWith("milli")) per = 1_000;
            else if (unit.startsWith("s")) per = 1_000_000;
            else if (unit.equals("m") || unit.startsWith("min")) per = 60_000_000L;
            else if (unit.startsWith("h")) per = 3_600_000_000L;
            else if (unit.startsWith("d")) per = 86_400_000_000L;
            else per = 7 * 86_400_000_000L;
            micros = Math.multiplyExact(n, per);
        }
        if (micros < 0) {
            throw new SfcLayerException.InvalidArgument(kind + name + ": '" + v + "' must not be negative");
        }
        return micros;
    }

    /**
     * The one instant parser of the JVM side (options, commands, version documents' createdAt):
     * "2020-01-01", "2020-01-01T06:00:00", "2020-01-01T06:00:00Z" or "+hh:mm" (no zone means UTC; a space
     * may stand for the T), or epoch micros. Python's twin is {@code sfclayer.curves.to_micros}.
     */
    public static long parseInstantMicros(String name, String v) {
        try {
            if (INTEGER.matcher(v).matches()) {
                return Long.parseLong(v);
            }
            Instant t;
            if (v.length() == 10) {
                t = LocalDate.parse(v).atStartOfDay(ZoneOffset.UTC).toInstant();
            } else if (v.endsWith("Z") || OFFSET_AT_END.matcher(v).matches()) {
                t = java.time.OffsetDateTime.parse(v.replace(' ', 'T')).toInstant();
            } else {
                t = LocalDateTime.parse(v.replace(' ', 'T')).toInstant(ZoneOffset.UTC);
            }
            return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
        } catch (DateTimeParseException | ArithmeticException e) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v
                + "' is not an instant (e.g. 2020-01-01 or 2020-01-01T00:00:00Z)");
        }
    }
}
