#!/usr/bin/env bash
# Copies the S3A connector (hadoop-aws 3.5.0 and the AWS SDK v2 2.35.4 modules it needs, not the
# SDK's 558 MB bundle) into integration/target/s3-jars/ and S3Proxy's jar into
# integration/target/s3proxy/, from Maven Central (integration/s3/pom.xml says what and why).
# The test suite's S3 tests put s3-jars on Spark's class path; users can too:
# sfclayer.session(..., s3="integration/target/s3-jars") (README, "Layers on S3").
# Idempotent: when target/s3-jars/.done records the sha256 of the current pom it does nothing, and
# reruns after a change come from ~/.m2 without the network.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd -P)"
. "$here/maven.sh"
out="$here/target/s3-jars"
pom="$here/s3/pom.xml"

want="$(sha256sum "$pom" | cut -d' ' -f1)"
if [[ -f "$out/.done" && "$(cat "$out/.done")" == "$want" && -f "$here/target/s3proxy/s3proxy.jar" ]]; then
    exit 0
fi

need_maven fetch-s3-jars

echo "fetch-s3-jars: copying hadoop-aws, the AWS SDK's s3 modules and S3Proxy into ${here#"$PWD"/}/target" >&2
start=$SECONDS
rm -rf "$out" "$here/target/s3proxy"
mkdir -p "$here/target"
maven_package fetch-s3-jars "$pom" "$here/target/fetch-s3-jars.log"
test -n "$(find "$out" -name 'hadoop-aws-*.jar' -print -quit)"
test -n "$(find "$out" -name 's3-2*.jar' -print -quit)"
test -f "$here/target/s3proxy/s3proxy.jar"
echo "$want" >"$out/.done"
echo "fetch-s3-jars: done in $((SECONDS - start)) s ($(ls "$out"/*.jar | wc -l) jars, $(du -sh "$out" | cut -f1))" >&2
