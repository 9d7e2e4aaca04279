#!/usr/bin/env bash
# The dependency ranges at their ends (issue 36; `make test-ranges` runs both; `make test` runs the lowest, in
# tests/test_packaging.py, the suite's own virtualenv being the newest; each end is a fresh virtualenv
# with its own pyspark): the wheel with [spark,geo] and the lowest ends (pyspark 4.0.0,
# numpy 1.x, pandas 2.x, pyarrow 11: the newest pyarrow imports only with numpy 2, without saying so to pip), then the newest (pyspark 4.x newest, numpy 2.x, pandas 3.x), each running
# tests/scripts/packaging_smoke.py --zonal outside the repository and checking its findings.
#   bash tests/scripts/ranges.sh dist/sfclayer-<v>-py3-none-any.whl [lowest|newest|all]
set -euo pipefail
wheel="$(realpath "$1")"
only="${2:-all}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d -t sfclayer-ranges-XXXXXX)"
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH SFCLAYER_JAR PYSPARK_PYTHON SPARK_HOME VIRTUAL_ENV
status=0
for ends in "lowest:pyspark==4.0.0 numpy<2 pandas<3 pyarrow==11.0.0" "newest:pyspark<5 numpy>=2 pandas>=3"; do
    name="${ends%%:*}"; pins="${ends#*:}"
    if [ "$only" != all ] && [ "$only" != "$name" ]; then continue; fi
    python3 -m venv "$work/$name"
    # shellcheck disable=SC2086  # $pins: one requirement a word
    "$work/$name/bin/pip" install --quiet "$wheel[spark,geo]" $pins
    mkdir -p "$work/$name-run"
    cp "$here/packaging_smoke.py" "$work/$name-run/"
    if out="$(cd "$work/$name-run" && "$work/$name/bin/python" packaging_smoke.py "$work/$name-run" --zonal 2>"$work/$name.err" | tail -1)" \
       && python3 - "$out" <<'PY'
import json, sys
f = json.loads(sys.argv[1])
ok = (f["read"] == [18, 19, 20, 26, 27, 28] and f["get"] == 19 and f["ingested"] == 16 and f["tile_equal"] is True
      and f["tile_png"] is True and f["zonal"] == {"in": 2800, "off": 0})
print(("ok  " if ok else "BAD ") + json.dumps({k: f[k] for k in ("pyspark", "numpy", "pandas")}))
sys.exit(0 if ok else 1)
PY
    then :; else echo "$name: failed; $work/$name.err:"; tail -20 "$work/$name.err"; status=1; fi
done
exit $status
