package io.sfclayer.format;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * Two S3 requests Hadoop's FileSystem API cannot make, sent through S3A's own S3 client and request
 * factory (its bucket or access point, encryption headers, requester-pays): a LIST from a key (S3's
 * {@code start-after}; Hadoop lists a directory only from its start) and a GET of a whole object of
 * unknown length (S3A's {@code open} asks a HEAD first). Opening a layer's newest version needs both to
 * cost 2 requests however long its log is (docs/FORMAT.md section 6, "How readers find the newest
 * version").
 *
 * <p>Reached by reflection: the connector compiles against Hadoop's client API only, and hadoop-aws
 * with the AWS SDK is on the class path only where S3 is used. {@link #of} returns null for any other
 * filesystem, or where S3A's classes lack these methods (a Hadoop before 3.4); callers then list the
 * directory through Hadoop.
 */
public final class S3AListing {
    private static final String S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem";

    /** An object listed: its name in the directory listed, its length and its ETag (unquoted, "" if none). */
    public static final class Entry {
        public final String name;
        public final long length;
        public final String etag;

        Entry(String name, long length, String etag) {
            this.name = name;
            this.length = length;
            this.etag = etag;
        }
    }

    private final FileSystem fs;
    private final Object client;
    private final Object requests;
    private final Method pathToKey;
    private final Method newGet;
    private final Method newList;
    private final Method getBuild;
    private final Method listStartAfter;
    private final Method listToken;
    private final Method listBuild;
    private final Method getObjectAsBytes;
    private final Method listObjectsV2;

    private S3AListing(FileSystem fs, ClassLoader loader) throws ReflectiveOperationException {
        this.fs = fs;
        Class<?> s3a = Class.forName(S3A, false, loader);
        Class<?> internals = Class.forName("org.apache.hadoop.fs.s3a.S3AInternals", false, loader);
        Class<?> factory = Class.forName("org.apache.hadoop.fs.s3a.api.RequestFactory", false, loader);
        Class<?> s3Client = Class.forName("software.amazon.awssdk.services.s3.S3Client", false, loader);
        Class<?> getRequest = Class.forName("software.amazon.awssdk.services.s3.model.GetObjectRequest", false, loader);
        Class<?> getBuilder = Class.forName("software.amazon.awssdk.services.s3.model.GetObjectRequest$Builder", false, loader);
        Class<?> listRequest = Class.forName("software.amazon.awssdk.services.s3.model.ListObjectsV2Request", false, loader);
        Class<?> listBuilder = Class.forName("software.amazon.awssdk.services.s3.model.ListObjectsV2Request$Builder", false, loader);
        Object in = s3a.getMethod("getS3AInternals").invoke(fs);
        this.client = internals.getMethod("getAmazonS3Client", String.class).invoke(in, "sfclayer: list the log from a key");
        this.requests = s3a.getMethod("getRequestFactory").invoke(fs);
        this.pathToKey = s3a.getMethod("pathToKey", Path.class);
        this.newGet = factory.getMethod("newGetObjectRequestBuilder", String.class);
        this.newList = factory.getMethod("newListObjectsV2RequestBuilder", String.class, String.class, int.class);
        this.getBuild = getBuilder.getMethod("build");
        this.listStartAfter = listBuilder.getMethod("startAfter", String.class);
        this.listToken = listBuilder.getMethod("continuationToken", String.class);
        this.listBuild = listBuilder.getMethod("build");
        this.getObjectAsBytes = s3Client.getMethod("getObjectAsBytes", getRequest);
        this.listObjectsV2 = s3Client.getMethod("listObjectsV2", listRequest);
    }

    /** The requests for {@code fs} when it is S3A (of Hadoop 3.4 or later), else null. */
    public static S3AListing of(FileSystem fs) {
        for (Class<?> c = fs.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(S3A)) {
                try {
                    return new S3AListing(fs, c.getClassLoader());
                } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
                    return null; // another S3A than the one this was written against: Hadoop's listing
                }
            }
        }
        return null;
    }

    private String key(Path p) throws ReflectiveOperationException {
        return (String) pathToKey.invoke(fs, fs.makeQualified(p));
    }

    /** The whole object at {@code p} in one GET; null when there is none. */
    public byte[] get(Path p) throws IOException {
        try {
            Object request = getBuild.invoke(newGet.invoke(requests, key(p)));
            Object bytes = getObjectAsBytes.invoke(client, request);
            return (byte[]) bytes.getClass().getMethod("asByteArray").invoke(bytes);
        } catch (InvocationTargetException e) {
            if (status(e.getCause()) == 404) {
                return null;
            }
            throw failed("GET " + p, e.getCause());
        } catch (ReflectiveOperationException e) {
            throw failed("GET " + p, e);
        }
    }

    /**
     * The objects directly in the directory {@code dir} whose names sort after {@code startAfter}
     * (byte order, as S3 sorts keys), in that order: one LIST a 1,000 objects.
     */
    public List<Entry> listAfter(Path dir, String startAfter) throws IOException {
        List<Entry> out = new ArrayList<>();
        try {
            String prefix = key(dir) + "/";
            String token = null;
            do {
                Object builder = newList.invoke(requests, prefix, "/", 1000);
                listStartAfter.invoke(builder, prefix + startAfter);
                if (token != null) {
                    listToken.invoke(builder, token);
                }
                Object page = listObjectsV2.invoke(client, listBuild.invoke(builder));
                for (Object o : (List<?>) page.getClass().getMethod("contents").invoke(page)) {
                    String k = (String) o.getClass().getMethod("key").invoke(o);
                    Long size = (Long) o.getClass().getMethod("size").invoke(o);
                    String etag = (String) o.getClass().getMethod("eTag").invoke(o);
                    out.add(new Entry(k.substring(prefix.length()), size == null ? -1 : size,
                        etag == null ? "" : etag.replace("\"", "")));
                }
                Boolean more = (Boolean) page.getClass().getMethod("isTruncated").invoke(page);
                token = Boolean.TRUE.equals(more) ? (String) page.getClass().getMethod("nextContinuationToken").invoke(page) : null;
            } while (token != null);
        } catch (InvocationTargetException e) {
            throw failed("LIST " + dir + " after " + startAfter, e.getCause());
        } catch (ReflectiveOperationException e) {
            throw failed("LIST " + dir + " after " + startAfter, e);
        }
        return out;
    }

    /** The HTTP status of an AWS SDK service error, else 0. */
    private static int status(Throwable t) {
        try {
            Object s = t.getClass().getMethod("statusCode").invoke(t);
            return s instanceof Integer ? (Integer) s : 0;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return 0;
        }
    }

    private static IOException failed(String what, Throwable cause) {
        return cause instanceof IOException ? (IOException) cause
            : new IOException(what + " failed: " + cause, cause);
    }
}
