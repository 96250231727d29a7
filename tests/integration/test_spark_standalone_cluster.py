"""The nightly jobs on a real Spark standalone cluster: a master and two workers started from
pyspark's own launcher (``bin/spark-class``) on this machine, the ``omdp analytics`` command
line pointed at it with ``--master spark://...``; the second night regresses, so ``nightly``
exits with status 1; the backtest job runs its day x bucket tasks on both workers. Slow:
three JVM daemons and several drivers."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ops.spark.common.data_layout import DataLayout
from ops.spark.latency.synthetic_runs import DEFAULT_HOP_MEDIANS_NS, SyntheticRun, write_synthetic_run
from ops.synth.generator import SynthConfig, synthesize

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NIGHT0, NIGHT1 = "2008-02-03", "2008-02-04"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _state(webui: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as r:
        return json.loads(r.read())


def _wait(what: str, ok, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if ok():
                return
        except OSError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"standalone cluster: {what} not up after {timeout:.0f} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for a Spark standalone cluster")
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    spark_class = str(Path(home) / "bin" / "spark-class")
    logs = tmp_path_factory.mktemp("spark-cluster")
    port, master_ui = _free_port(), _free_port()
    # Executors inherit the worker's environment: its PYTHONPATH (tests/conftest.py puts the
    # package under test first) is how they import the same omdp as this process.
    env = {**os.environ, "SPARK_HOME": home}
    procs = []
    try:
        with open(logs / "master.log", "w") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(master_ui)], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait("master", lambda: "url" in _state(master_ui))
        for w in (1, 2):
            with open(logs / f"worker{w}.log", "w") as log:
                procs.append(subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
                     "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir",
                     str(logs / f"work{w}")],
                    stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait("workers", lambda: _state(master_ui)["aliveworkers"] == 2)
        yield f"spark://127.0.0.1:{port}", master_ui, logs
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _omdp(*args: str) -> subprocess.CompletedProcess:
    # -P: the checkout (no compiled module when the package is installed) stays off the path.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-P", "-c", "from ops.cli.main import main; main()", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def _runs(layout: DataLayout, date: str, de_scale: float) -> None:
    hops = dict(DEFAULT_HOP_MEDIANS_NS, de=DEFAULT_HOP_MEDIANS_NS["de"] * de_scale)
    for i, rate in enumerate((1.0, 2.0)):
        write_synthetic_run(layout.runs(date), SyntheticRun(f"run-{rate:g}x", date, rate, duration_s=0.3, sweep_id="sweep",
                                                            sample_every=50, hop_medians_ns=hops, seed=i))


def test_nightly_on_a_standalone_cluster_exits_1_on_a_regression(cluster, tmp_path) -> None:
    url, master_ui, _ = cluster
    layout = DataLayout(tmp_path)
    synthesize(SynthConfig(data=tmp_path, date=dt.date.fromisoformat(NIGHT1), seconds=0.3, rate=0.3, seed=2, num_lines=2,
                           progress=False))
    _runs(layout, NIGHT0, 1.0)
    _runs(layout, NIGHT1, 3.0)
    first = _omdp("analytics", "latency", "--date", NIGHT0, "--data", str(tmp_path), "--master", url)
    assert first.returncode == 0, first.stderr[-3000:]
    second = _omdp("analytics", "nightly", "--date", NIGHT1, "--data", str(tmp_path), "--master", url)
    assert second.returncode == 1, second.stderr[-3000:]
    assert "regressions flagged: 0" not in second.stdout and "regressions flagged:" in second.stdout
    assert (layout.reports(NIGHT1) / "index.html").is_file()
    assert (layout.ticks() / f"date={NIGHT1}" / "line=1" / "line01.parquet").is_file()
    assert (layout.tick_windows() / f"date={NIGHT1}" / "line=1" / "line01.parquet").is_file()  # written by a worker
    apps = {a["name"]: a["state"] for a in _state(master_ui)["completedapps"]}
    assert apps["omdp-latency"] == "FINISHED" and apps["omdp-nightly"] == "FINISHED"


def test_backtest_on_a_standalone_cluster_uses_both_workers(cluster, tmp_path) -> None:
    url, master_ui, logs = cluster
    synthesize(SynthConfig(data=tmp_path, date=dt.date.fromisoformat(NIGHT1), seconds=0.3, rate=0.3, seed=4, num_lines=2,
                           b_copy=True, progress=False))
    out = tmp_path / "backtest.json"
    done = _omdp("analytics", "backtest", "--date", NIGHT1, "--data", str(tmp_path), "--master", url, "--buckets", "4",
                 "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    decode = [t for t in doc["tasks"] if t["stage"] == "decode"]      # day x line
    engines = [t for t in doc["tasks"] if t["stage"] == "engines"]    # day x bucket
    assert [t["line"] for t in decode] == [1, 2] and [t["bucket"] for t in engines] == [0, 1, 2, 3]
    assert doc["messages"] > 0 and sum(t["messages"] for t in engines) == sum(t["messages"] for t in decode) == doc["messages"]
    day = tmp_path / "backtest" / f"date={NIGHT1}" / "config=default" / "signals"
    assert sorted(p.name for p in day.glob("part-*.parquet")) == [f"part-b{b:03d}.parquet" for b in range(4)]
    (app,) = [a for a in _state(master_ui)["completedapps"] if a["name"] == "omdp-backtest"]
    assert app["state"] == "FINISHED"
    # each worker ran an executor of the backtest (a worker keeps its executors' folders per app)
    assert (logs / "work1" / app["id"]).is_dir() and (logs / "work2" / app["id"]).is_dir()
