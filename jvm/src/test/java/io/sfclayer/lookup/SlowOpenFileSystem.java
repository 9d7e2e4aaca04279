package io.sfclayer.lookup;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The local file system under the scheme {@code slowopen:}, where opening a file inside a directory
 * named {@link #slowDir} waits for {@link #gate}: a cold open that takes as long as a test wants.
 * Register with {@code fs.slowopen.impl} and {@code fs.slowopen.impl.disable.cache=true}.
 */
public final class SlowOpenFileSystem extends FilterFileSystem {
    public static final URI URI_ = URI.create("slowopen:///");
    static volatile String slowDir;
    static volatile CountDownLatch gate = new CountDownLatch(0);
    /** Counted down when an open starts waiting at the gate. */
    static volatile CountDownLatch waiting = new CountDownLatch(1);
    /** Thrown by opens in {@link #slowDir} when set. */
    static volatile IOException failWith;
    static final AtomicInteger opens = new AtomicInteger();

    public SlowOpenFileSystem() {
        // The delay sits in the wrapped file system: FilterFileSystem hands openFile() builders
        // (what SequenceFile.Reader uses) straight to it.
        super(new RawLocalFileSystem() {
            @Override
            public URI getUri() {
                return URI_;
            }

            @Override
            public FSDataInputStream open(Path f, int bufferSize) throws IOException {
                gate(f);
                return super.open(f, bufferSize);
            }
        });
    }

    @Override
    public String getScheme() {
        return "slowopen";
    }

    @Override
    public URI getUri() {
        return URI_;
    }

    private static void gate(Path f) throws IOException {
        opens.incrementAndGet();
        Path parent = f.getParent();
        if (parent != null && parent.getName().equals(slowDir)) {
            if (failWith != null) {
                throw failWith;
            }
            waiting.countDown();
            try {
                if (!gate.await(30, TimeUnit.SECONDS)) {
                    throw new IOException("test gate never opened for " + f);
                }
            } catch (InterruptedException e) {
                throw new InterruptedIOException("interrupted at the test gate: " + f);
            }
        }
    }
}
