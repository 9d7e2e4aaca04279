package io.sfclayer.format;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TreeSet;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

/**
 * What a reader takes from the writers' copy of the newest document and from a listing that starts
 * after a key (docs/FORMAT.md section 6): the copy's version, and whether names longer than it may sort
 * before the listing's start. The counted requests on S3 are integration/test_s3_open.py's.
 */
public class LogDirectoryTest {
    private static long versionOf(String json) {
        return LogDirectory.versionOf(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    public void aCopysVersionIsItsTopLevelFieldAndAnythingElseIsNone() {
        assertEquals(10_000, versionOf("{\"format\":\"sfclayer\",\"version\":10000,\"checksum\":\"00000000\"}"));
        assertEquals(100_000_001L, versionOf("{\"version\": 100000001}"));
        for (String bad : List.of("", "junk", "\u0000{", "[1,2]", "{\"version\":\"7\"}", "{\"version\":1.5}",
                "{\"version\":-3}", "{\"versions\":7}", "{\"version\":99999999999999999999999}")) {
            assertEquals(bad, 0, versionOf(bad));
        }
    }

    @Test
    public void longerNamesMayBeMissedOnlyWhenTheLastNameOfTheLengthIsListed() {
        // v100000000.json sorts before v99999999.json: a listing after v<n-1>.json of an 8-digit n shows it
        // only by its leading digits, so listing v99999999.json means the whole log must be listed
        assertTrue("v100000000.json".compareTo("v99999999.json") < 0);
        assertFalse(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(9_999L, 10_000L)), 9_999));
        assertFalse(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(99_999_997L, 99_999_998L)), 99_999_997));
        assertTrue(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(99_999_998L, 99_999_999L)), 99_999_998));
        assertTrue(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(99_999_999L)), 99_999_999));
        assertFalse(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(100_000_000L, 100_000_001L)), 100_000_000));
        assertTrue(LogDirectory.mayMissLongerNames(new TreeSet<>(List.of(999_999_999L)), 999_999_998));
    }

    @Test
    public void onlyS3AHasTheListingFromAKey() throws Exception {
        assertNull(S3AListing.of(FileSystem.getLocal(new Configuration())));
    }
}
