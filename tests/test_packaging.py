"""The distribution (issue 36): the sdist and the wheel as ``python -m build`` makes them from this tree,
the wheel installed into a fresh virtualenv outside the repository and used there (write, read, get,
ingest, serve one tile), the jar's version checked against the package's, and a build without a JDK
refused in one line. The wheel is built once per run (Gradle compiles the jar: a minute or two).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import sfclayer
from sfclayer import _deploy
from sfclayer.errors import SfcLayerError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE = os.path.join(ROOT, "tests", "scripts", "packaging_smoke.py")


def _pyproject_version():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        return re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read()).group(1)


def _pyspark_jars():
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def _clean_env(**more):
    """The environment of a user's shell: nothing pointing into this repository or its virtualenv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SFCLAYER_JAR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME",
                        "VIRTUAL_ENV", "PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
    env.update(more)
    return env


def _run(cmd, timeout=1200, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """``python -m build`` of this tree: the sdist, then the wheel built from it (the jar compiled by
    Gradle in the unpacked sdist). Spark's jars given as $PYSPARK_JARS spare the build environment a
    pyspark install (without it the backend asks for pyspark==4.3.0: README "Install")."""
    given = os.environ.get("SFCLAYER_TEST_DIST")  # a directory `make dist` filled: spares the build when iterating
    if given:
        return __import__("pathlib").Path(given), sorted(os.listdir(given))
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), ROOT],
         env=_clean_env(PYSPARK_JARS=_pyspark_jars()), cwd=str(out))
    files = sorted(os.listdir(out))
    return out, files


def test_the_jar_package_and_project_have_one_version():
    assert sfclayer.__version__ == _pyproject_version() == _deploy.jar_version(sfclayer.jar_path())


def test_configure_refuses_a_jar_of_another_version(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    jar = tmp_path / "old.jar"
    with zipfile.ZipFile(sfclayer.jar_path()) as src, zipfile.ZipFile(jar, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "META-INF/MANIFEST.MF":
                data = re.sub(rb"Implementation-Version: \S+", b"Implementation-Version: 0.0.9", data)
            dst.writestr(item, data)
    monkeypatch.setenv("SFCLAYER_JAR", str(jar))
    with pytest.raises(SfcLayerError, match=rf"{re.escape(str(jar))} is version 0\.0\.9, the Python package is "
                                            rf"{re.escape(sfclayer.__version__)}"):
        sfclayer.configure(SparkSession.builder.master("local[1]"))


@pytest.mark.packaging
def test_sdist_has_the_sources_and_the_wheel_the_jar(dist):
    out, files = dist
    version = _pyproject_version()
    assert files == [f"sfclayer-{version}-py3-none-any.whl", f"sfclayer-{version}.tar.gz"]
    with tarfile.open(out / files[1]) as t:
        names = t.getnames()
    assert f"sfclayer-{version}/build.gradle" in names
    assert f"sfclayer-{version}/jvm/src/main/java/io/sfclayer/SfcLayerException.java" in names
    assert f"sfclayer-{version}/build_support/backend.py" in names
    assert not [n for n in names if n.endswith(".jar")]  # the jar is built per wheel, never shipped stale
    with zipfile.ZipFile(out / files[0]) as w:
        assert "sfclayer/jars/sfclayer.jar" in w.namelist()
        jar = out / "sfclayer.jar"
        jar.write_bytes(w.read("sfclayer/jars/sfclayer.jar"))
        metadata = w.read(f"sfclayer-{version}.dist-info/METADATA").decode()
    assert _deploy.jar_version(str(jar)) == version
    with zipfile.ZipFile(jar) as j:
        assert "io/sfclayer/spark/SfcLayerCatalog.class" in j.namelist()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    base = [r for r in requires if "extra ==" not in r]
    assert not [r for r in base if "pyspark" in r]  # the base package leaves Spark to the extras
    assert any(re.match(r"Requires-Dist: pyspark<5,>=4\.0; extra == \"spark\"", r) for r in requires), requires
    assert any(r.startswith("Requires-Dist: pyspark-client") and 'extra == "connect"' in r for r in requires)


@pytest.mark.packaging
def test_a_build_without_a_jdk_fails_naming_what_it_needs(dist, tmp_path):
    out, files = dist
    empty = tmp_path / "bin"
    empty.mkdir()
    env = _clean_env(PATH=str(empty))
    env.pop("JAVA_HOME", None)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(tmp_path / "w"),
                           str(out / files[1])], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode != 0
    assert not (tmp_path / "w").exists() or not os.listdir(tmp_path / "w")
    assert ("error: no JDK (javac) found: building sfclayer's connector jar needs a JDK 17+ (javac on PATH or "
            "$JAVA_HOME/bin), Gradle (gradle on PATH or $GRADLE) and pyspark's jars") in proc.stdout + proc.stderr


@pytest.mark.packaging
def test_the_wheel_in_a_fresh_virtualenv(dist, tmp_path_factory):
    """pip install 'sfclayer[spark]' from the wheel into a new virtualenv (pip's cache reused; no
    --system-site-packages), then write, read, get, ingest and serve one tile there, outside the tree."""
    out, files = dist
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    wheel = str(out / files[0])
    # the base package alone does not bring pyspark
    report = _run([python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", wheel],
                  env=_clean_env()).stdout
    names = {i["metadata"]["name"].lower() for i in json.loads(report)["install"]}
    assert "sfclayer" in names and "numpy" in names and not names & {"pyspark", "py4j", "pyspark-client"}
    _run([python, "-m", "pip", "install", "--quiet", f"{wheel}[spark]"], env=_clean_env())
    work = tmp_path_factory.mktemp("smoke")
    script = shutil.copy(SMOKE, work / "smoke.py")
    proc = _run([python, str(script), str(work)], env=_clean_env(), cwd=str(work), timeout=900)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    site = str(venv)
    assert found["sfclayer"].startswith(site) and found["jar"].startswith(site), found
    assert found["version"] == _pyproject_version()
    assert found["read"] == [18, 19, 20, 26, 27, 28]
    assert found["get"] == 19
    assert found["ingested"] == 16 and found["tile_equal"] is True
    assert found["tile_png"] is True


def test_cli_spark_options_reach_the_builder():
    from sfclayer import cli

    args = cli.build_parser().parse_args(["--master", "spark://h:7077", "--conf", "spark.executor.memory=4g",
                                          "--conf", "spark.a=b=c", "--packages", "g:a:1", "info", "/x"])
    options = cli._builder(args)._options
    assert options["spark.master"] == "spark://h:7077"
    assert options["spark.executor.memory"] == "4g" and options["spark.a"] == "b=c"
    assert options["spark.jars.packages"] == "g:a:1"
    assert "spark.driver.host" not in options  # executors elsewhere must reach the driver
    remote = cli._builder(cli.build_parser().parse_args(["--remote", "sc://h:15002", "info", "/x"]))._options
    assert remote["spark.remote"] == "sc://h:15002" and "spark.jars" not in remote


def test_cli_without_the_s3a_jars_says_so_in_one_line(tmp_path):
    env = _clean_env(PYTHONPATH=os.path.join(ROOT, "python"), SFCLAYER_JAR=sfclayer.jar_path())
    proc = subprocess.run([sys.executable, "-m", "sfclayer", "--conf", "spark.sql.shuffle.partitions=2", "info",
                           "s3a://bucket/layers/dem"], capture_output=True, text=True, timeout=600, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith('sfclayer: error: no Hadoop filesystem for scheme "s3a" (org.apache.hadoop.fs.s3a.'
                           "S3AFileSystem not found) on the class path: S3A needs its jars (--packages "
                           "org.apache.hadoop:hadoop-aws:"), proc.stderr[-3000:]
    assert "sfclayer.session(s3=True)" in last


def test_configure_sets_the_workers_python_for_a_local_connect_server(monkeypatch):
    # remote("local[2]") starts a Connect server whose Python workers (zonal_stats' mapInPandas) must
    # run this interpreter, with its pyarrow, as sfclayer.session's do
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (make setup)")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    sfclayer.configure(ConnectSession.builder.remote("local[2]"))
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


@pytest.mark.packaging
def test_the_connect_extra_without_pyspark_or_java(dist, connect_url, tmp_path_factory):
    """pip install 'sfclayer[connect]' (pyspark-client, no pyspark) into a fresh virtualenv, then the
    facade there, with no java on PATH, against the run's Connect server (tests/scripts/thin_client.py)."""
    out, files = dist
    venv = tmp_path_factory.mktemp("thin") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "--quiet", f"{out / files[0]}[connect]"], env=_clean_env())
    listed = _run([python, "-m", "pip", "list", "--format", "json"], env=_clean_env()).stdout
    names = {p["name"].lower() for p in json.loads(listed)}
    assert "pyspark-client" in names and "pyspark" not in names and "py4j" not in names
    work = tmp_path_factory.mktemp("thin-work")
    script = shutil.copy(os.path.join(ROOT, "tests", "scripts", "thin_client.py"), work / "thin_client.py")
    env = _clean_env(PATH=str(venv / "bin"), JAVA_HOME=str(work / "no-java"))
    proc = _run([python, str(script), connect_url, str(work)], env=env, cwd=str(work), timeout=600)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found == {"read": 16, "get": 30, "get_many": [27, None], "query": [0, 3, 24, 27], "count": 9,
                     "missing": "KeyNotFound", "history": ["write", "append"], "vacuumed": [1], "verified": True,
                     "gateway": False, "connect": "pyspark.sql.connect.session"}


@pytest.mark.packaging
def test_the_lowest_ends_of_the_dependency_ranges(dist):
    """The wheel with [spark,geo] in a fresh virtualenv at the ranges' lowest ends (pyspark 4.0.0, numpy 1.x,
    pandas 2.x, pyarrow 11): write, read, get, ingest, a PNG tile and zonal statistics give the answers of
    the suite's own virtualenv, which is the newest end (pyspark 4.3, numpy 2, pandas 3)."""
    out, files = dist
    wheel = next(f for f in files if f.endswith(".whl"))
    proc = subprocess.run(["bash", os.path.join(ROOT, "tests", "scripts", "ranges.sh"), str(out / wheel), "lowest"],
                          capture_output=True, text=True, timeout=1500, env=_clean_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1].split(" ", 1)[1])
    assert found["pyspark"] == "4.0.0" and found["numpy"].startswith("1.") and found["pandas"].startswith("2."), found
