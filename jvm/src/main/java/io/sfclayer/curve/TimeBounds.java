package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * Inclusive time bounds of a space-time layer, in epoch microseconds, cut into bins of
 * {@code resolutionMicros}: time {@code t} falls in bin {@code floor((t - minMicros) / resolutionMicros)}.
 * Prints as {@code "times 2020-01-01T00:00:00Z..2020-01-31T23:00:00Z, resolution 3600000000 us"}.
 */
public final class TimeBounds implements Serializable {
    private static final long serialVersionUID = 1L;

    public final long minMicros, maxMicros, resolutionMicros;

    /**
     * @throws SfcLayerException.InvalidArgument if {@code minMicros > maxMicros}, {@code resolutionMicros <= 0}
     *     or {@code maxMicros - minMicros} does not fit in a signed 64-bit long
     */
    public TimeBounds(long minMicros, long maxMicros, long resolutionMicros) {
        if (resolutionMicros <= 0) {
            throw new SfcLayerException.InvalidArgument(
                "time resolution: " + resolutionMicros + " us is not positive (> 0 us)");
        }
        if (minMicros > maxMicros) {
            throw new SfcLayerException.InvalidArgument("time bounds: times " + formatMicros(minMicros)
                + ".." + formatMicros(maxMicros) + " is empty (min <= max)");
        }
        if (maxMicros - minMicros < 0) { // overflowed
            throw new SfcLayerException.InvalidArgument("time bounds: times " + formatMicros(minMicros)
                + ".." + formatMicros(maxMicros) + " span too long (at most 2^63-1 us)");
        }
        this.minMicros = minMicros;
        this.maxMicros = maxMicros;
        this.resolutionMicros = resolutionMicros;
    }

    public boolean contains(long tMicros) {
        return tMicros >= minMicros && tMicros <= maxMicros;
    }

    /**
     * The bin of time {@code tMicros}, {@code floor((t - minMicros) / resolutionMicros)}.
     *
     * @throws SfcLayerException.KeyOutOfBounds if the time is outside the bounds
     */
    public long bin(long tMicros) {
        if (!contains(tMicros)) {
            throw new SfcLayerException.KeyOutOfBounds(
                "time: " + formatMicros(tMicros) + " is outside the layer's time bounds (" + this + ")");
        }
        return (tMicros - minMicros) / resolutionMicros;
    }

    /** Number of bins, {@code bin(maxMicros) + 1}. */
    public long bins() {
        return (maxMicros - minMicros) / resolutionMicros + 1;
    }

    /** First microsecond of bin {@code bin} (may be past {@code maxMicros}'s bin only if you ask for it). */
    public long binStart(long bin) {
        return minMicros + bin * resolutionMicros;
    }

    /**
     * Epoch microseconds as an ISO-8601 instant, exactly as {@link Instant#toString()} prints it
     * ({@code 2020-01-01T00:00:00Z}, {@code 2020-01-01T00:00:00.123Z}, {@code 2020-01-01T00:00:00.000001Z}).
     * The Python side ({@code sfclayer.curves.format_micros}) prints the same text.
     */
    public static String formatMicros(long micros) {
        return Instant.EPOCH.plus(micros, ChronoUnit.MICROS).toString();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof TimeBounds)) return false;
        TimeBounds t = (TimeBounds) o;
        return minMicros == t.minMicros && maxMicros == t.maxMicros && resolutionMicros == t.resolutionMicros;
    }

    @Override
    public int hashCode() {
        return (Long.hashCode(minMicros) * 31 + Long.hashCode(maxMicros)) * 31 + Long.hashCode(resolutionMicros);
    }

    @Override
    public String toString() {
        return "times " + formatMicros(minMicros) + ".." + formatMicros(maxMicros)
            + ", resolution " + resolutionMicros + " us";
    }
}
