package io.sfclayer.geotrellis;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.curve.IndexRange;
import org.junit.Assume;
import org.junit.Test;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * Our key indexes against GeoTrellis' own: tests/data/geotrellis/expected/index/*.csv hold GeoTrellis
 * 3.7.1's toIndex for every key of several key bounds (integration/geotrellis writes them), next to the
 * index as its attribute store stores it (*.json). Every value must be bit-identical, and every key's
 * index must lie in the ranges of a box around it.
 */
public class GtKeyIndexDumpsTest {
    private static final File DIR = new File("tests/data/geotrellis/expected/index");

    @Test
    public void everyKeyIndexesAsInGeoTrellis() throws Exception {
        File[] csvs = DIR.listFiles((d, n) -> n.endsWith(".csv"));
        Assume.assumeTrue("no index dumps in " + DIR.getAbsolutePath(), csvs != null && csvs.length > 0);
        int cases = 0;
        long keys = 0;
        for (File csv : csvs) {
            File json = new File(DIR, csv.getName().replace(".csv", ".json"));
            List<String> lines = Files.readAllLines(csv.toPath(), StandardCharsets.UTF_8);
            boolean spaceTime = lines.get(0).contains("millis");
            GtKeyIndex index = GtKeyIndex.fromJson(new ObjectMapper().readTree(json), spaceTime, json.getName());
            for (String line : lines.subList(1, lines.size())) {
                if (line.isBlank()) continue;
                String[] v = line.split(",");
                int col = Integer.parseInt(v[0]), row = Integer.parseInt(v[1]);
                long millis = spaceTime ? Long.parseLong(v[2]) : 0;
                long want = Long.parseLong(v[v.length - 1]);
                assertEquals(csv.getName() + ": " + line, want, index.toIndex(col, row, millis));
                keys++;
            }
            cases++;
        }
        assertTrue(cases >= 10);
        assertTrue(keys > 1000);
    }

    @Test
    public void rangesHoldEveryKeyOfTheirBox() throws Exception {
        File[] csvs = DIR.listFiles((d, n) -> n.endsWith(".csv"));
        Assume.assumeTrue(csvs != null && csvs.length > 0);
        for (File csv : csvs) {
            File json = new File(DIR, csv.getName().replace(".csv", ".json"));
            List<String> lines = Files.readAllLines(csv.toPath(), StandardCharsets.UTF_8);
            boolean spaceTime = lines.get(0).contains("millis");
            GtKeyIndex index = GtKeyIndex.fromJson(new ObjectMapper().readTree(json), spaceTime, json.getName());
            int c0 = index.colMin + (index.colMax - index.colMin) / 4, c1 = index.colMax - (index.colMax - index.colMin) / 3;
            int r0 = index.rowMin + (index.rowMax - index.rowMin) / 3, r1 = index.rowMax;
            List<IndexRange> ranges = index.ranges(c0, r0, c1, r1, Long.MIN_VALUE, Long.MAX_VALUE);
            for (String line : lines.subList(1, lines.size())) {
                if (line.isBlank()) continue;
                String[] v = line.split(",");
                int col = Integer.parseInt(v[0]), row = Integer.parseInt(v[1]);
                if (col < c0 || col > c1 || row < r0 || row > r1) continue;
                long i = Long.parseLong(v[v.length - 1]);
                boolean in = false;
                for (IndexRange r : ranges) in |= r.contains(i);
                assertTrue(csv.getName() + ": " + line + " not in " + ranges, in);
            }
        }
    }
}
