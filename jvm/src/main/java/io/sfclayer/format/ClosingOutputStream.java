package io.sfclayer.format;

import java.io.IOException;
import java.io.OutputStream;

/**
 * An output stream that passes writes to another and does something of its own around closing it, once:
 * {@code before} (an hsync, a test's fault) and then, the stream closed, {@code after} (forcing the file to
 * disk). The stream counts as closed only once {@code before} succeeded, so a close that failed there
 * can be tried again. One class for {@link Durable} and the tests' faulty filesystems.
 */
public final class ClosingOutputStream extends OutputStream {
    /** A step around the close. */
    @FunctionalInterface
    public interface Step {
        void run() throws IOException;
    }

    private static final Step NOTHING = () -> { };

    private final OutputStream out;
    private final Step before;
    private final Step after;
    private boolean closed;

    public ClosingOutputStream(OutputStream out, Step before, Step after) {
        this.out = out;
        this.before = before == null ? NOTHING : before;
        this.after = after == null ? NOTHING : after;
    }

    @Override
    public void write(int b) throws IOException {
        out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
        out.flush();
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        before.run();
        closed = true;
        out.close();
        after.run();
    }
}
