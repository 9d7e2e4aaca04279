# Each target does all of its own set-up, so `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
JAR := python/sfclayer/jars/sfclayer.jar
JAVA_SRC := $(shell find jvm/src/main -type f 2>/dev/null)
GRADLE := gradle --quiet --console=plain

.PHONY: setup jar test test-jvm test-py test-hdfs demo bench bench-ingest clean hdfs-jars

setup: $(VENV)/.installed $(JAR)

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,demo]'
	touch $@

gradle-installed:
	@command -v gradle >/dev/null || { echo "installing gradle and junit4 from Debian"; \
	  (apt-get update -qq && apt-get install -y -qq gradle junit4) >/dev/null; }

$(JAR): $(VENV)/.installed $(JAVA_SRC) build.gradle | gradle-installed
	$(GRADLE) jar
	mkdir -p $(dir $(JAR)) && cp build/libs/sfclayer.jar $(JAR)

jar: $(JAR)

hdfs-jars: | gradle-installed
	bash integration/fetch-jars.sh

test-jvm: setup
	$(GRADLE) test

test-py: setup hdfs-jars
	$(PY) -m pytest -q tests integration

test: test-jvm test-py

test-hdfs: setup hdfs-jars
	$(PY) -m pytest -q -m hdfs tests integration

demo: setup
	$(VENV)/bin/sfclayer demo

bench: setup
	$(PY) bench/run.py

bench-ingest: setup
	$(PY) bench/ingest.py

clean:
	rm -rf build .gradle $(JAR) integration/target
