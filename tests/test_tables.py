"""The Python tables of options and errors are the JVM's: read from the connector jar, so neither
side can gain or lose an option or an error class without the other."""

import inspect
import re
import zipfile

import pytest

import sfclayer
from sfclayer import geotrellis
from sfclayer import _java_errors, _jvm, errors, layer


def test_error_table_is_the_jars_exception_classes():
    with zipfile.ZipFile(sfclayer.jar_path()) as jar:
        java = {n[:-len(".class")].replace("/", ".") for n in jar.namelist()
                if re.fullmatch(r"io/sfclayer/SfcLayerException(\$\w+)?\.class", n)}
    assert java == set(_java_errors._JAVA_ERRORS)
    # each Java class has the Python class of the same name, and every Python error is in the table
    for name, cls in _java_errors._JAVA_ERRORS.items():
        assert name.rsplit("$", 1)[-1] in (cls.__name__, "io.sfclayer.SfcLayerException"), name
    python = {c for c in vars(errors).values() if inspect.isclass(c) and issubclass(c, errors.SfcLayerError)}
    assert python == set(_java_errors._JAVA_ERRORS.values())
    assert set(errors.__all__) == {c.__name__ for c in python}
    assert set(errors.__all__) <= set(sfclayer.__all__)


def _java_read_options(jvm):
    read = jvm.io.sfclayer.spark.ReadOptions
    try:
        return {str(k) for k in read.KNOWN.keySet()}
    except Exception:  # a connector before the read-option table: the names its classes read
        builder, table = jvm.io.sfclayer.spark.SfcLayerScanBuilder, jvm.io.sfclayer.spark.SfcLayerTable
        return {"path", str(builder.OPTION_BBOX), str(builder.OPTION_MAX_RANGES), str(table.OPTION_VERSION_AS_OF),
                str(table.OPTION_TIMESTAMP_AS_OF)}


def test_option_table_is_the_jvms(spark):
    jvm = spark.sparkContext._jvm
    java = {str(n) for n in jvm.io.sfclayer.layer.LayerWriteOptions.KNOWN} | _java_read_options(jvm)
    python = set(layer._OPTION_NAMES.values()) | set(layer._READ_ARGUMENTS.values()) | {"path", geotrellis.OPTION}
    assert python == java, (f"only in Python: {sorted(python - java)}; only in the JVM: {sorted(java - python)}")


def test_write_options_passes_connector_names_through():
    assert layer.write_options(keyIndex="z", key_index=None) == {"keyIndex": "z"}


@pytest.mark.parametrize("name", sorted(layer._OPTION_NAMES))
def test_every_keyword_is_snake_case_of_its_option(name):
    option = layer._OPTION_NAMES[name]
    assert re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), option) == name


# One pattern for bad options, on both sides: "option <name>: '<value>' <why, and what is allowed>".
BAD_WRITE_OPTIONS = [
    ("keyIndex", "quadtree", "choose z, hilbert or rowmajor"),
    ("bounds", "0,0,9", "must be colMin,rowMin,colMax,rowMax"),
    ("blockSize", "12q", "is not a size"),
    ("timeResolution", "soon", "is not a duration"),
    ("extent", "0,0,1", "must be four numbers"),
    ("indexInterval", "0", "is not an integer in 1.."),
]


@pytest.fixture(scope="module")
def small_layer(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tables") / "layer")
    df = spark.range(4).selectExpr("int(id % 2) AS col", "int(id DIV 2) AS row", "id AS v")
    sfclayer.write(df, path, bounds=(0, 0, 1, 1), extent=(0, 0, 2, 2))
    return path, df


@pytest.mark.parametrize("name, value, allowed", BAD_WRITE_OPTIONS, ids=[b[0] for b in BAD_WRITE_OPTIONS])
def test_bad_write_option_messages_follow_the_pattern(spark, small_layer, tmp_path, name, value, allowed):
    _, df = small_layer
    options = {"bounds": "0,0,1,1", name: value}
    with pytest.raises(sfclayer.InvalidArgument, match=rf"^option {name}: .*{re.escape(value)}.*{re.escape(allowed)}"):
        with _jvm.translated():
            df.write.format("sfclayer").options(**options).save(str(tmp_path / "bad"))


@pytest.mark.parametrize("name, value, allowed", [
    ("bbox", "0,0,1", "must be four numbers"),
    ("maxRanges", "-1", "must be a whole number >= 0"),
    ("versionAsOf", "first", "is not a version number"),
])
def test_bad_read_option_messages_follow_the_pattern(spark, small_layer, name, value, allowed):
    path, _ = small_layer
    with pytest.raises(sfclayer.InvalidArgument, match=rf"^option {name}: .*{re.escape(value)}.*{re.escape(allowed)}"):
        with _jvm.translated():
            spark.read.format("sfclayer").option(name, value).load(path).count()


# The SQL procedures' arguments (CALL sfclayer.system.<name>(...)) are the Python functions' keywords.
def procedure_parameters(spark, name):
    """The argument names, in order, as Spark describes the procedure ("IN <name> <type> ...")."""
    lines = [r[0] for r in spark.sql(f"DESCRIBE PROCEDURE sfclayer.system.{name}").collect()]
    return [line.split()[1] for line in (l.replace("Parameters:", "") for l in lines) if line.split()[:1] == ["IN"]]


# force is enforce_retention turned over
PYTHON_NAMES = {"force": "enforce_retention"}


def test_procedure_arguments_are_the_python_functions(spark):
    names = [r.procedure_name for r in spark.sql("SHOW PROCEDURES IN sfclayer.system").collect()]
    assert names == ["compact", "delete", "history", "restore", "vacuum"]
    for name in names:  # each procedure is the Python function of its name
        # quiet: the progress bar, a Python-side display option with no SQL meaning
        python = [p for p in inspect.signature(getattr(sfclayer, name)).parameters if p not in ("spark", "quiet")]
        assert [PYTHON_NAMES.get(p, p) for p in procedure_parameters(spark, name)] == python, name
