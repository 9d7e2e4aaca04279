# Shell functions shared by fetch-jars.sh and fetch-s3-jars.sh (sourced, not run): Maven on PATH,
# and one quiet `mvn package` whose log is shown only when it fails.

# need_maven NAME [javac]: makes sure mvn (and javac, if asked) are on PATH: installs Maven and a
# JDK 17 from Debian when running as root with apt-get, else fails saying what is missing.
need_maven() {
    local name="$1" tools="mvn${2:+ $2}" tool missing=""
    for tool in $tools; do
        command -v "$tool" >/dev/null || missing=1
    done
    [[ -z "$missing" ]] && return 0
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        echo "$name: installing Maven and a JDK from Debian" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven openjdk-17-jdk-headless) >/dev/null
    else
        echo "$name: needs Maven (mvn)${2:+ and a JDK 17 ($2)} on PATH" >&2
        exit 1
    fi
}

# maven_package NAME POM LOG: `mvn package` of POM, its output in LOG; on failure the log's tail and exit 1.
maven_package() {
    local name="$1" pom="$2" log="$3"
    if ! mvn -q -B -Dstyle.color=never -f "$pom" package >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "$name: Maven failed (whole log: ${log#"$PWD"/})" >&2
        exit 1
    fi
}
