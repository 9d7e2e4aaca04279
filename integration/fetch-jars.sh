#!/usr/bin/env bash
# Builds MiniHdfs (integration/hdfs) and copies it with the Hadoop jars it runs on into
# integration/target/hdfs-jars/, for the test suite's throw-away HDFS (see integration/README.md).
# Idempotent: when hdfs-jars/.done records the sha256 of the current pom and sources it does
# nothing, and reruns after a change come from ~/.m2 without the network.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd -P)"
. "$here/maven.sh"
out="$here/target/hdfs-jars"
pom="$here/hdfs/pom.xml"

stamp() {
    (cd "$here" && cat hdfs/pom.xml && find hdfs/src -type f -name '*.java' | LC_ALL=C sort | xargs cat) \
        | sha256sum | cut -d' ' -f1
}

want="$(stamp)"
if [[ -f "$out/.done" && "$(cat "$out/.done")" == "$want" ]]; then
    exit 0
fi

need_maven fetch-jars javac

echo "fetch-jars: building MiniHdfs and copying Hadoop's jars into ${out#"$PWD"/}" >&2
start=$SECONDS
rm -rf "$out"
mkdir -p "$out"
maven_package fetch-jars "$pom" "$here/target/fetch-jars.log"
test -f "$out/sfclayer-minihdfs.jar"
test -n "$(find "$out" -name 'hadoop-hdfs-*-tests.jar' -print -quit)"

# A class-data-sharing archive of one MiniHdfs start and stop: later starts load classes from it,
# about twice as fast. integration/hdfs.py passes it to the JVM when present. This step is optional.
cds_dir="$(mktemp -d)"
if (for _ in $(seq 1500); do [[ -f "$cds_dir/cluster/ready.json" ]] && break; sleep 0.2; done; echo shutdown) \
    | timeout 300 java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true \
        -XX:ArchiveClassesAtExit="$out/minihdfs.jsa" -cp "$out/*" io.sfclayer.it.MiniHdfs "$cds_dir/cluster" \
        >/dev/null 2>"$here/target/minihdfs-cds.log" && [[ -f "$out/minihdfs.jsa" ]]; then
    :
else
    echo "fetch-jars: no class-data-sharing archive (see target/minihdfs-cds.log); MiniHdfs starts slower" >&2
    rm -f "$out/minihdfs.jsa"
fi
rm -rf "$cds_dir"
echo "$want" >"$out/.done"
echo "fetch-jars: done in $((SECONDS - start)) s ($(ls "$out"/*.jar | wc -l) jars)" >&2
