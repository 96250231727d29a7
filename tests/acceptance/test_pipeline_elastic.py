"""The OPRA pipeline with the elastic engine partition (ops/topologies/opra_fused_elastic.toml)
beside the static fused one on the same capture, one lap each: every message accounted for,
the same crossed/locked signals (pricing-driven signals depend on when each refresh lands,
so they are not compared), the feed's BBO agreeing with the books, and the control loop's
record and counters in the run directory. Pricing is kept out of the lap in both runs (no
refresh within it): a quote off its band reports off_smile instead of crossed or locked, so
a refresh landing mid-lap in one run and not the other changed the book signals compared."""
from __future__ import annotations

import json
from pathlib import Path

from pipeline_support import CAPTURE_DATE, line_packets

from omdp.metrics.run_files import read_run_file
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

SAMPLE_EVERY = 64


def one_lap(topology: str, data: Path, *overrides: str) -> object:
    pp = plan_pipeline(topology_path(topology), data, CAPTURE_DATE,
                       RunOptions(rate="4x", seconds=None, loop=False, sample_every=SAMPLE_EVERY), overrides)
    return run_pipeline(pp, data)


def book_signals(run_dir: Path) -> list[tuple]:
    t = read_run_file(run_dir, "signals.parquet").to_pandas()
    t = t[t["kind"].isin(["crossed", "locked"])]
    return sorted(zip(t["line"], t["msg_seq"], t["underlying_id"], t["kind"]))


NO_REFRESH_IN_LAP = "operators.de.params.pricing_period_s=600"


def test_elastic_pipeline_matches_the_static_one(data_dir: Path) -> None:
    static = one_lap("opra_fused", data_dir, NO_REFRESH_IN_LAP)
    elastic = one_lap("opra_fused_elastic", data_dir, "operators.de.params.period_s=0.2",
                      "operators.de.params.elastic=false", "operators.de.params.level=2", NO_REFRESH_IN_LAP)
    assert static.result.ok and elastic.result.ok, (static.result.failure, elastic.result.failure)
    lines = line_packets(data_dir / "captures" / CAPTURE_DATE)
    in_capture = sum(int(lp.counts.sum()) for lp in lines.values())
    a = elastic.accounting
    assert a.messages_received == a.routed == a.processed == in_capture
    assert a.messages_missed == 0 and a.collected == a.sampled > 0
    assert a.bbo_checked > 0 and a.bbo_mismatches == 0
    got, want = book_signals(elastic.run_dir), book_signals(static.run_dir)
    assert got == want and len(got) > 0

    record = json.loads((elastic.run_dir / "elastic-de.json").read_text())
    assert record["counters"]["processed"] == in_capture and record["counters"]["level"] == 2
    # worker 0 runs inline: its buckets' records ran in place, worker 1's went through rings
    assert 0 < record["counters"]["inplace"] < in_capture
    report = json.loads((elastic.run_dir / "run.json").read_text())
    assert '"level_changes"' in json.dumps(report), "run.json keeps the partition's counters"


def test_rate_schedule_steps_the_offered_rate_and_the_control_loop_sees_it(data_dir: Path) -> None:
    pp = plan_pipeline(topology_path("opra_fused_elastic"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="1x", seconds=4.0, rate_schedule="1x:2s,4x:2s"),
                       ("operators.de.params.period_s=0.25",))
    run = run_pipeline(pp, data_dir)
    assert run.result.ok, run.result.failure
    periods = json.loads((run.run_dir / "elastic-de.json").read_text())["periods"]
    first = [p["rate"] for p in periods if 0.5 <= p["t_s"] <= 1.75]
    second = [p["rate"] for p in periods if 2.75 <= p["t_s"] <= 3.75]
    assert first and second
    assert sum(second) / len(second) > 2.5 * sum(first) / len(first)


def test_a_killed_elastic_partition_fails_the_run_cleanly(data_dir: Path) -> None:
    """A worker thread cannot die alone (a fatal signal takes its whole process), so a killed
    worker is a killed partition: reported like a dead static engine's, nothing left behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from pipeline_support import alive, descendants, leftovers

    cli = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
    earlier = set(data_dir.glob("runs/*/*/processes.json"))  # runs of the module's other tests
    proc = subprocess.Popen([*cli, "run", str(topology_path("opra_fused_elastic")), "--data", str(data_dir),
                             "--capture-date", CAPTURE_DATE, "--rate", "1x", "--seconds", "60",
                             "--set", "operators.de.params.level=2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        run_dir = None
        while time.monotonic() < deadline and run_dir is None:
            found = [p for p in data_dir.glob("runs/*/*/processes.json") if p not in earlier]
            run_dir = found[0].parent if found else None
            time.sleep(0.1)
        assert run_dir is not None, "the run never started"
        procs = json.loads((run_dir / "processes.json").read_text())
        while time.monotonic() < deadline and not (run_dir / "replay-fs0").exists():
            time.sleep(0.1)
        time.sleep(1.0)  # the replay is sending, the second worker running
        everyone = [p["pid"] for p in procs.values()]
        everyone += [d for p in everyone for d in descendants(p)]
        os.kill(procs["app"]["pid"], signal.SIGKILL)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    assert "partition app died: killed by SIGKILL" in err
    assert not [p for p in everyone if alive(p)]
    assert not leftovers(run_dir.name)
