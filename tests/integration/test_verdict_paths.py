"""One run, one verdict: a live fused ``omdp run`` judges its rate sustainable or not, and
``omdp runs show``, the dashboard of the finished run and the nightly latency job judge the
same run directory with the same rule (omdp.metrics.definitions) and reach the same verdict
for the same reasons. A second copy of the run, its samples made to grow over the run,
must be judged unsustainable by every reader alike."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_test_session import local_spark

from omdp.metrics.run_files import read_meta, write_meta
from ops.dashboard import figures
from ops.dashboard.finished_source import FinishedRunSource
from ops.spark.common.data_layout import DataLayout
from ops.spark.latency.latency_job import run_latency
from ops.synth.generator import SynthConfig, synthesize

pytestmark = pytest.mark.full  # a live run and a Spark session

ROOT = Path(__file__).resolve().parents[2]
CAPTURE_DATE = "2008-02-04"


def _omdp(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-P", "-c", "from ops.cli.main import main; main()", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def _grown(run_dir: Path, out: Path) -> Path:
    """A copy of ``run_dir`` (its own run id) whose last third of samples to arrive came
    later by twice the run's longest latency from intended plus 2 ms: latency grows
    whatever the first third's was."""
    shutil.copytree(run_dir, out)
    write_meta(out, {**read_meta(run_dir), "run_id": out.name})
    path = out / "samples.parquet"
    t = pq.read_table(path)
    mc_in = t.column("mc_in").to_numpy().copy()
    intended = t.column("intended").to_numpy()
    stamped = (mc_in > 0) & (intended > 0)
    rank = np.argsort(np.argsort(np.where(stamped, mc_in, -1), kind="stable"), kind="stable")
    late = stamped & (rank >= len(mc_in) - np.count_nonzero(stamped) // 3)
    mc_in[late] += 2 * int((mc_in - intended)[stamped].max()) + 2_000_000
    t = t.set_column(t.schema.get_field_index("mc_in"), "mc_in", pa.array(mc_in, type=pa.int64()))
    pq.write_table(t.replace_schema_metadata(pq.read_schema(path).metadata), path)
    return out


def _readers(run_dir: Path) -> dict[str, tuple[bool, list[str]]]:
    """The verdict of ``omdp runs show`` and of the dashboard of the finished run."""
    shown = _omdp("runs", "show", str(run_dir), "--json")
    assert shown.returncode == 0, shown.stderr[-2000:]
    doc = json.loads(shown.stdout)
    status = figures.run(FinishedRunSource(run_dir), replay_control=False)
    return {"runs show": (doc["sustainable"], doc["reasons"]),
            "dashboard": (status.sustainable, status.sustainable_reasons)}


def test_every_reader_of_a_run_reaches_the_live_verdict(tmp_path: Path) -> None:
    synthesize(SynthConfig(data=tmp_path, date=dt.date.fromisoformat(CAPTURE_DATE), seconds=1.0, num_lines=2, seed=3,
                           progress=False))
    report = tmp_path / "report.json"
    live = _omdp("run", str(ROOT / "ops/topologies/opra_fused.toml"), "--data", str(tmp_path), "--capture-date",
                 CAPTURE_DATE, "--rate", "1x", "--no-loop", "--seconds", "10", "--sample-every", "100",
                 "--json", str(report))
    assert live.returncode in (0, 1), live.stderr[-3000:]
    doc = json.loads(report.read_text())
    (run_dir,) = tmp_path.glob("runs/*/*/meta.parquet")
    run_dir = run_dir.parent
    grown = _grown(run_dir, run_dir.parent / f"{run_dir.name}-grown")

    got = {run_dir: {"live": (doc["sustainable"], doc["reasons"]), **_readers(run_dir)}, grown: _readers(grown)}
    with local_spark("test-verdict-paths") as spark:
        result = run_latency(spark, DataLayout(tmp_path), run_dir.parent.name)
    assert result.runs == 2
    rows = {r["run_id"]: r for r in pq.read_table(DataLayout(tmp_path).reports(run_dir.parent.name)
                                                   / "latency_runs.parquet").to_pylist()}
    for d in (run_dir, grown):
        row = rows[read_meta(d)["run_id"]]
        got[d]["nightly"] = (row["sustainable"], row["reasons"].split("; ") if row["reasons"] else [])

    verdicts = {d.name: {path: (s, list(r)) for path, (s, r) in v.items()} for d, v in got.items()}
    assert len({json.dumps(v) for v in verdicts[run_dir.name].values()}) == 1, verdicts
    assert len({json.dumps(v) for v in verdicts[grown.name].values()}) == 1, verdicts
    sustainable, reasons = verdicts[grown.name]["runs show"]
    assert sustainable is False and any("grew" in r for r in reasons), reasons
