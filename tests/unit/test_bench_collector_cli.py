"""``omdp bench collector`` runs end to end on a tiny workload and writes its JSON (the
figures themselves are benchmark output, not test assertions)."""
from __future__ import annotations

import json
import os

from click.testing import CliRunner

from ops.cli.main import cli


def test_bench_collector_writes_json(tmp_path) -> None:
    out = tmp_path / "collector.json"
    res = CliRunner().invoke(cli, ["bench", "collector", "--batches", "5", "--batch-records", "64", "--repeats", "3",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert d["benchmark"] == "collector"
    assert d["collector_all_sampled_no_stats"]["samples"] == 5 * 64
    assert d["collector_1_in_1600"]["samples"] == 5
    assert set(d["stats_reader_us"]) >= {"latency_window_10s", "latency_history_60s", "operators_64"}
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"omdp-bench-{os.getpid()}-")]
