"""Progress in a real Jupyter notebook (issue 37): a kernel (ipykernel, run by nbclient as Jupyter runs
one) whose code writes a layer through a Spark Connect session, sfclayer's default ``quiet=None``: inside a
kernel the bar shows without being asked for, as a tqdm notebook widget (ipywidgets), and it ends at its
total. The widget's last state is what the notebook saves (``store_widget_state``), as a user reopening it
would see it."""

import json
import os
import sys

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbclient and ipykernel (make setup)")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient and ipykernel (make setup)")
pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (make setup)")
pytest.importorskip("ipywidgets", reason="the notebook's bar is a widget with ipywidgets (make setup)")

_PYTHON_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")


def test_a_notebook_shows_a_widget_bar_by_default_that_reaches_its_total(connect_url, tmp_path, monkeypatch):
    path = str(tmp_path / "nb-layer")
    code = f"""
import sfclayer
from pyspark.sql.connect.session import SparkSession as ConnectSession
spark = sfclayer.configure(ConnectSession.builder.remote({connect_url!r})).create()
# eight tasks of 0.7 s: longer than the server's progress reports (every 2 s) and the bar's 1 s delay
df = spark.range(0, 8, 1, 8).selectExpr("int(id) AS col", "0 AS row",
                                        "reflect('java.lang.Thread', 'sleep', bigint(700)) AS v")
sfclayer.write(df, {path!r}, bounds=(0, 0, 7, 0))
print("rows", spark.read.format("sfclayer").load({path!r}).count())
"""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(code))
    monkeypatch.setenv("PYTHONPATH", _PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("SFCLAYER_QUIET", raising=False)
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME  # this interpreter, whatever kernels are installed

    client.kernel_name = NATIVE_KERNEL_NAME
    client.kernel_manager_class.kernel_cmd = None
    client.execute()
    outputs = nb.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "rows 8" in text, outputs
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    # the bar: a widget displayed in the cell (not text on stderr, as in a terminal)
    views = [o for o in outputs if o.output_type == "display_data"
             and "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, outputs
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    bars = [m["state"] for m in state.values() if m["model_name"] in ("FloatProgressModel", "IntProgressModel")]
    # tqdm.notebook's labels space with U+2007 (a figure space), so their width does not jump
    labels = [m["state"].get("value", "").replace("\u2007", " ") for m in state.values()
              if m["model_name"] == "HTMLModel"]
    assert len(bars) == 1, json.dumps(state)[:2000]
    assert bars[0]["value"] == bars[0]["max"] >= 8, bars
    assert any(f"write {path}: 100%" in label for label in labels), labels
    assert sys.executable  # the kernel ran this interpreter (NATIVE_KERNEL_NAME)
