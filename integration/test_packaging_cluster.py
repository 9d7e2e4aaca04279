"""The connector as a Maven artifact on a cluster (issue 36): ``make maven-repo``'s file repository,
``spark-submit --packages io.sfclayer:sfclayer-spark_2.13:<version> --repositories file://...`` on the
suite's standalone cluster, with workers whose Python has the libraries but not sfclayer: the job
(integration/packaging_job.py) writes, reads and ingests, its Python code reaching the executors in the
zip ``sfclayer.configure`` ships.
"""

import json
import os
import subprocess
import sys
import sysconfig

import pytest

import sfclayer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.fixture(scope="module")
def maven_repo(tmp_path_factory):
    import pyspark

    repo = tmp_path_factory.mktemp("maven")
    env = dict(os.environ, PYSPARK_JARS=os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    proc = subprocess.run(["gradle", "--quiet", "--console=plain", "publishMavenRepo", f"-PmavenRepoDir={repo}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return repo


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with this suite's libraries (numpy, pyarrow, rasterio...) but without sfclayer: a
    virtualenv whose .pth file names the suite's site-packages (whose own .pth files, the editable
    sfclayer's among them, Python does not read from there)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "suite-libraries.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    check = subprocess.run([python, "-c", "import rasterio, pyarrow, numpy\nimport sfclayer"], capture_output=True,
                           text=True, cwd=str(venv), env={"PATH": os.environ["PATH"]})
    assert "No module named 'sfclayer'" in check.stderr, check.stderr
    return python


@pytest.mark.packaging
def test_spark_submit_packages_on_workers_without_sfclayer(standalone, maven_repo, bare_python, tmp_path):
    import pyspark

    spark_submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    coordinates = f"io.sfclayer:sfclayer-spark_2.13:{sfclayer.__version__}"
    conf = {"spark.jars.ivy": str(tmp_path / "ivy"), "spark.pyspark.python": bare_python,
            "spark.pyspark.driver.python": sys.executable, "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.memory": "512m", "spark.executor.memory": "512m",
            "spark.executor.cores": "1", "spark.cores.max": "2", "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.task.maxFailures": "1"}
    cmd = [spark_submit, "--master", standalone.url, "--packages", coordinates, "--repositories", maven_repo.as_uri()]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SFCLAYER_JAR", "PYSPARK_PYTHON", "PYSPARK_SUBMIT_ARGS")}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")  # the driver's sfclayer: this tree (its own jar unused)
    proc = subprocess.run(cmd + [os.path.join(HERE, "packaging_job.py"), str(work)], capture_output=True, text=True,
                          timeout=900, env=env, cwd=str(tmp_path))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"spark-submit failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
    found = json.loads(lines[-1])
    assert found["master"] == standalone.url
    version, where = found["connector"]
    assert version == sfclayer.__version__
    assert f"sfclayer-spark_2.13-{sfclayer.__version__}.jar" in where  # from the repository, by Ivy
    assert "python/sfclayer/jars" not in found["spark.jars"]  # configure left the package's jar out
    assert found["count"] == 256
    refused = found["refused"]  # the probe: a module the workers' Python lacks, named with the Python and the fix
    assert refused and "lacks sfclayer_absent_module (" in refused and bare_python in refused, refused  # only it:
    assert "pip install 'sfclayer[geo]'" in refused, refused  # sfclayer itself reached them (shipped)
    assert found["bbox"] == sorted(r * 16 + c for c in range(10, 13) for r in range(3, 6))
    assert {python for python, _ in found["executors"]} == {bare_python}
    assert all(".zip" in mine for _, mine in found["executors"]), found["executors"]  # the shipped package
    assert found["ingested"] == 6 and found["tile_equal"] is True
