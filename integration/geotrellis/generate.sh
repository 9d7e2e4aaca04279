#!/usr/bin/env bash
# GeoTrellis' side of sfclayer's GeoTrellis support, in its own JVM (GeoTrellis 3.7.1 on Spark 3.5 from
# Maven Central; needs mvn and a JDK 17 on PATH, and the network the first time).
#
#   integration/geotrellis/generate.sh            rewrites tests/data/geotrellis/{catalog,expected}
#   integration/geotrellis/generate.sh run ARGS   runs the JVM with ARGS (bench/geotrellis.py uses it)
#
# The catalog is written under /tmp/sfclayer-geotrellis-fixtures first: GeoTrellis records each layer's
# absolute path in its header, so a fixed place keeps regenerated headers identical (and the committed
# catalog is then a moved one, as after a distcp: readers must find layers under the catalog itself).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd -P)"
repo="$(cd "$here/../.." && pwd -P)"
build="$repo/integration/target/geotrellis-build"
log="$repo/integration/target/geotrellis-build.log"

if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
    echo "generate.sh: needs Maven (mvn) and a JDK 17 on PATH" >&2
    exit 1
fi
mkdir -p "$build"
if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" package dependency:build-classpath \
        -Dmdep.outputFile="$build/classpath.txt" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "generate.sh: Maven failed (whole log: $log)" >&2
    exit 1
fi

# Spark 3.5 on Java 17 needs these opened (the list spark-submit's launcher adds).
opens=()
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util \
         java.util.concurrent java.util.concurrent.atomic sun.nio.ch sun.nio.cs sun.security.action \
         sun.util.calendar; do
    opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
jvm() {
    java -Xmx${GT_XMX:-2g} -Xss${GT_XSS:-64m} "${opens[@]}" -Dlog4j2.level=warn \
        -cp "$build/classes:$(cat "$build/classpath.txt")" io.sfclayer.gtfixtures.Main "$@"
}

if [[ "${1:-}" == run ]]; then
    shift
    jvm "$@"
    exit
fi

tmp=/tmp/sfclayer-geotrellis-fixtures
rm -rf "$tmp"
mkdir -p "$tmp"
jvm fixtures "$tmp"
out="$repo/tests/data/geotrellis"
rm -rf "$out/catalog" "$out/expected"
mkdir -p "$out"
cp -r "$tmp/catalog" "$tmp/expected" "$out/"
echo "generate.sh: wrote $(du -sh "$out" | cut -f1) under ${out#"$repo"/}" >&2
