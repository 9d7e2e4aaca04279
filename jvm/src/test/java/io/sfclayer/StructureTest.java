package io.sfclayer;

import org.junit.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * Every arrow points down (curve ← codec ← format ← commit ← layer ← lookup, spark on top) and the
 * core is Spark-free (issue 26): a Spark Connect plugin or another engine calls the look-up and query
 * core without a SparkSession. The floors (issue 39): {@code codec} the tile record encoding on
 * Catalyst's row model, {@code format} the on-disk structures, {@code commit} the protocol that
 * publishes versions. Read from the sources, not the bytecode: javac inlines constants, so a class that
 * only borrows a constant from above leaves no trace in its class file.
 */
public class StructureTest {
    /** The packages in order, lowest first; each may use only those before it. */
    private static final List<String> ORDER = List.of("curve", "codec", "format", "commit", "layer", "lookup", "spark");
    /** The GeoTrellis reader (issue 22), a package beside format. */
    private static final String GEOTRELLIS = "geotrellis";
    /** Spark in {@code codec} and {@code format}: the row model tile records decode into, and nothing else. */
    private static final List<String> ROW_MODEL = List.of(
        "org.apache.spark.sql.catalyst.", "org.apache.spark.sql.types.", "org.apache.spark.unsafe.");
    /** The packages that read and write Spark rows (the tile codec; a file's stats and raster layout). */
    private static final List<String> ROWS = List.of("codec", "format");
    private static final Pattern NAME = Pattern.compile("\\b(org\\.apache\\.spark\\.[\\w.]+|io\\.sfclayer\\.\\w+)");

    private static Path sources() {
        return Paths.get(System.getProperty("sfclayer.sources", "jvm/src/main/java"), "io", "sfclayer");
    }

    /** Each file of a package and the qualified names its code (comments and strings left out) uses. */
    private static Map<String, TreeSet<String>> names(String pkg) throws IOException {
        try (Stream<Path> files = Files.walk(sources().resolve(pkg))) {
            return files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toMap(
                p -> sources().relativize(p).toString(), p -> {
                    try {
                        TreeSet<String> out = new TreeSet<>();
                        Matcher m = NAME.matcher(code(Files.readString(p, StandardCharsets.UTF_8)));
                        while (m.find()) {
                            out.add(m.group(1));
                        }
                        return out;
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }));
        }
    }

    /** Java text without its comments and string and char literals. */
    static String code(String s) {
        StringBuilder out = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (s.startsWith("//", i)) {
                i = s.indexOf('\n', i);
                i = i < 0 ? s.length() : i;
            } else if (s.startsWith("/*", i)) {
                int end = s.indexOf("*/", i + 2);
                i = end < 0 ? s.length() : end + 2;
                out.append(' ');
            } else if (c == '"' || c == '\'') {
                boolean block = s.startsWith("\"\"\"", i);
                String close = block ? "\"\"\"" : String.valueOf(c);
                int j = i + close.length();
                while (j < s.length() && !s.startsWith(close, j)) {
                    j += s.charAt(j) == '\\' ? 2 : 1;
                }
                i = Math.min(s.length(), j + close.length());
                out.append("\"\"");
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static List<String> violations(String pkg, java.util.function.Predicate<String> allowed) throws IOException {
        List<String> out = new ArrayList<>();
        names(pkg).forEach((file, used) -> {
            for (String n : used) {
                if (!allowed.test(n)) {
                    out.add(file + " uses " + n);
                }
            }
        });
        out.sort(null);
        return out;
    }

    private static boolean below(String pkg, String name) {
        if (!name.startsWith("io.sfclayer.")) {
            return true;
        }
        String other = name.substring("io.sfclayer.".length());
        // geotrellis sits beside format: it may use what format may and format itself, and layer and above may use it
        int at = other.equals(GEOTRELLIS) ? ORDER.indexOf("format") : ORDER.indexOf(other);
        return at < 0 ? !other.equals(other.toLowerCase()) // a class of the root package (SfcLayerException)
            : at <= ORDER.indexOf(pkg);
    }

    @Test
    public void everyPackageUsesOnlyThoseBelowIt() throws IOException {
        for (String pkg : ORDER) {
            assertEquals(pkg, List.of(), violations(pkg, n -> below(pkg, n)));
        }
    }

    @Test
    public void geotrellisUsesOnlyWhatFormatMayAndNoSpark() throws IOException {
        assertEquals(List.of(), violations(GEOTRELLIS, n -> below("format", n)));
        assertEquals(List.of(), violations(GEOTRELLIS, n -> !n.startsWith("org.apache.spark.")));
    }

    @Test
    public void theCoreUsesNoSparkAndCodecAndFormatOnlyItsRowModel() throws IOException {
        for (String pkg : ORDER.subList(0, ORDER.indexOf("spark"))) {
            if (!ROWS.contains(pkg)) {
                assertEquals(pkg, List.of(), violations(pkg, n -> !n.startsWith("org.apache.spark.")));
            }
        }
        for (String pkg : ROWS) {
            assertEquals(pkg, List.of(), violations(pkg,
                n -> !n.startsWith("org.apache.spark.") || ROW_MODEL.stream().anyMatch(n::startsWith)));
        }
    }

    @Test
    public void theCheckSeesWhatItLooksFor() throws IOException {
        // it reads real sources (the spark package does use Spark), and skips comments and strings
        assertTrue(violations("spark", n -> !n.startsWith("org.apache.spark.")).size() > 10);
        String c = code("import /* io.sfclayer.spark.X */ a; class A { String s = \"io.sfclayer.spark.Y\"; char q = '\\''; }"
            + " // org.apache.spark.Z\nclass B { }");
        assertTrue(c, !c.contains("sfclayer") && !c.contains("spark") && c.contains("class A") && c.contains("class B"));
        assertTrue(below("format", "io.sfclayer.curve") && below("format", "io.sfclayer.SfcLayerException"));
        assertTrue(!below("format", "io.sfclayer.layer") && !below("lookup", "io.sfclayer.spark"));
        assertTrue(below("format", "io.sfclayer.codec") && !below("codec", "io.sfclayer.format"));
        assertTrue(below("commit", "io.sfclayer.format") && !below("format", "io.sfclayer.commit"));
    }
}
