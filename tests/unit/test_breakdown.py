"""The breakdown table (the paper's Figure 6 as text) and ``omdp runs show``: values, n/a
tails, missed ratio and rates, rebuilt from a run directory exactly as the live collector
reported them."""
from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from omdp.metrics.breakdown import Breakdown, format_breakdown
from omdp.metrics.ingest_collector import IngestCollector
from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.run_files import write_meta
from omdp.record import STAMPS_DTYPE
from omdp.units import fmt_us
from ops.cli.main import cli

META = {
    "run_id": "r1", "sweep_id": "", "date": "2026-01-02", "capture_date": "2008-02-01", "topology": "fused-2core",
    "config": "fused", "knobs_json": "{}", "target_pps": 240_000.0, "achieved_pps": 239_999.0, "rate_x": 10.0,
    "messages_per_packet": 5.2, "packets_sent": 7_200_000, "messages_sent": 37_440_000,
    "messages_processed": 37_440_000, "messages_missed": 0, "sample_every": 1600, "started_ns": 1, "ended_ns": 2,
    "host": "h", "cpu_model": "c", "clock_offset_error_ns": 0,
}

T0 = 1_800_000_000 * 1_000_000_000


def stamps(n: int, seed: int = 1) -> np.ndarray:
    r = np.random.default_rng(seed)
    s = np.zeros(n, dtype=STAMPS_DTYPE)
    s["intended"] = T0
    s["fh_in"] = T0 + r.integers(500, 1_500, n)
    s["fh_out"] = s["fh_in"] + r.integers(300, 700, n)
    s["de_in"] = s["fh_out"] + r.integers(1_000, 3_000, n)
    s["de_out"] = s["de_in"] + r.integers(50, 150, n)
    s["mc_in"] = s["de_out"] + r.integers(1_000, 2_000, n)
    return s


def make_run(tmp_path, method: str = "all", n: int = 2_000, meta: dict | None = None) -> LatencyCollector:
    c = LatencyCollector(method=method, collect=1_500, report=1_000)
    c.collect_rows(stamps(n))
    c.write_samples(tmp_path)
    write_meta(tmp_path, {**META, **(meta or {})})
    return c


def test_table_shows_every_hop_and_the_run_figures(tmp_path) -> None:
    c = make_run(tmp_path, meta={"messages_sent": 3_200_000, "messages_missed": 32})
    text = format_breakdown(Breakdown.from_run_dir(tmp_path))
    lines = text.splitlines()
    assert lines[0].startswith("run r1 (fused-2core, fused, capture 2008-02-01)")
    assert lines[1].startswith("latency end to end, from intended: p50 ")  # the headline: from intended first
    assert "| from fh_in: p50 " in lines[1] and "queueing before the feed handler" in lines[2]
    assert "1 in 1,600 messages sampled; 2,000 samples reported, all samples" in lines[3]
    for label in ("FH", "to DE", "DE", "to MC", "end to end (from fh_in)", "end to end (from intended)"):
        assert any(line.startswith(label + " ") for line in lines), label
    e2e = next(line for line in lines if line.startswith("end to end (from fh_in)"))
    cells = re.findall(r"n/a|[\d.,]+(?: (?:ns|us|ms|s)\b)?", e2e[len("end to end (from fh_in)"):])
    summary = c.summary()["e2e"]
    assert cells[0] == "2,000" and cells[1] == fmt_us(summary["mean_us"])  # every latency in the unit that reads best
    assert cells[4] != "n/a" and cells[5:7] == ["n/a", "n/a"]  # p99 with 2,000; p99.9 and p99.99 too few
    assert cells[7] == fmt_us(summary["max_us"])
    assert "missed: 32 of 3,200,000 messages (0.0010%)" in text
    assert "target 240,000 packets/s (10.00x), achieved 239,999 packets/s (100.000% of the target's mean)" in text
    assert "1,247,995 messages/s at 5.20 messages/packet" in text
    assert "clocks: every stamp from one clock (no cross-host error)" in text


def test_cross_host_runs_state_their_clock_error(tmp_path) -> None:
    make_run(tmp_path, meta={"clock_offset_error_ns": 25_513})
    b = Breakdown.from_run_dir(tmp_path)
    assert b.clock_offset_error_ns == 25_513 and b.to_dict()["clock_offset_error_ns"] == 25_513
    assert "a cross-host hop carries up to +-25.5 us of clock offset error" in format_breakdown(b)


def test_rebuilt_breakdown_equals_the_live_report(tmp_path) -> None:
    for method in ("all", "middle"):
        d = tmp_path / method
        c = make_run(d, method=method)
        b = Breakdown.from_run_dir(d)
        assert b.hops == c.summary(), method
        assert b.method == method
    assert Breakdown.from_run_dir(tmp_path / "middle").hops["fh"]["count"] == 1_000
    assert "middle samples of the collection" in format_breakdown(Breakdown.from_run_dir(tmp_path / "middle"))


def test_missed_ratio_falls_back_to_ingest(tmp_path) -> None:
    make_run(tmp_path, meta={"messages_sent": 0, "messages_missed": 0})
    ing = IngestCollector()
    ing.update(0, messages_received=900, messages_missed=100)
    ing.snapshot(1)
    ing.update(0, messages_received=1_990, messages_missed=10)
    ing.snapshot(2)
    ing.write(tmp_path)
    b = Breakdown.from_run_dir(tmp_path)
    assert (b.messages_sent, b.messages_missed) == (2_000, 10)
    assert b.missed_ratio == pytest.approx(0.005)


def test_empty_and_unknown_figures_print_cleanly() -> None:
    b = Breakdown.from_histograms(LatencyCollector().live_histograms())
    text = format_breakdown(b)
    assert "0 samples reported" in text and "missed: unknown" in text and "rate: unknown" in text
    assert text.count("n/a") >= 6 * 7


def test_runs_show_cli(tmp_path) -> None:
    make_run(tmp_path)
    runner = CliRunner()
    res = runner.invoke(cli, ["runs", "show", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "end to end (from intended)" in res.output
    as_json = json.loads(runner.invoke(cli, ["runs", "show", str(tmp_path), "--output", "json"]).output)
    assert as_json == json.loads(runner.invoke(cli, ["runs", "show", str(tmp_path), "--json"]).output)
    rows = list(csv.DictReader(io.StringIO(runner.invoke(cli, ["runs", "show", str(tmp_path), "-o", "csv"]).output)))
    assert [r["hop"] for r in rows] == list(as_json["hops"])
    assert float(rows[-1]["p50_us"]) == pytest.approx(as_json["hops"][rows[-1]["hop"]]["p50_us"])
    both = runner.invoke(cli, ["runs", "show", str(tmp_path), "--json", "-o", "csv"])
    assert both.exit_code == 2 and "--json is --output json" in both.output
    res = runner.invoke(cli, ["runs", "show", "--json", str(tmp_path)])
    d = json.loads(res.output)
    assert d["hops"]["e2e"]["count"] == 2_000 and d["missed_ratio"] == 0
    (tmp_path / "meta.parquet").unlink()
    res = runner.invoke(cli, ["runs", "show", str(tmp_path)])
    assert res.exit_code != 0 and "meta.parquet: no such file" in res.output


def test_a_seconds_long_latency_prints_in_seconds(tmp_path) -> None:
    """A run whose messages waited 4.3 s behind their intended send time: the headline and
    the table say seconds, not 4,311,744 us."""
    s = stamps(2_000)
    s["intended"] = s["fh_in"] - 4_311_744_000
    c = LatencyCollector(method="all", collect=1_500, report=1_000)
    c.collect_rows(s)
    c.write_samples(tmp_path)
    write_meta(tmp_path, META)
    text = format_breakdown(Breakdown.from_run_dir(tmp_path))
    headline = text.splitlines()[1]
    assert re.search(r"from intended: p50 4\.3\d s, p99 4\.3\d s \| from fh_in: p50 [\d.]+ us", headline), headline
    row = next(line for line in text.splitlines() if line.startswith("end to end (from intended)"))
    assert "4,311" not in text and row.count(" s ") >= 4, row


def test_runs_show_judges_the_rate_from_the_runs_files(tmp_path) -> None:
    """The verdict of docs/architecture.md from the run directory: the feed senders' final
    status (their share of the schedule) over the packet rates of meta.parquet, run.json's
    failure, the same reasons the live report gives."""
    make_run(tmp_path)
    runner = CliRunner()
    res = runner.invoke(cli, ["runs", "show", str(tmp_path)])
    assert res.exit_code == 0 and res.output.rstrip().endswith("sustainable: yes"), res.output
    status = tmp_path / "replay-fs0" / "status.json"
    status.parent.mkdir()
    status.write_text(json.dumps({"achieved_fraction": 0.99}))
    (tmp_path / "run.json").write_text(json.dumps({"status": "failed"}))
    d = json.loads(runner.invoke(cli, ["runs", "show", "--json", str(tmp_path)]).output)
    assert d["sustainable"] is False
    assert d["reasons"] == ["the run failed", "replayer kept 99.0000% of its schedule (needs >= 99.99%)"]
    status.write_text("{")
    res = runner.invoke(cli, ["runs", "show", str(tmp_path)])
    assert res.exit_code != 0 and "replay-fs0/status.json: unreadable replayer status" in res.output, res.output
    assert "Traceback" not in res.output
