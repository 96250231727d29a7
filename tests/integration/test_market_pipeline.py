"""Market statistics in a real pipeline (opra_fused_market): the feed handler's ports fan out
to market_stats fused in its partition, the deltas cross a vega-shm ring to the leader, the
sink writes market_windows.parquet. Over one lap of a FAST capture the shared-state run and
the re-partitioning baseline's run give the same windows key for key, every window is
complete, and the windows' message counts and per-exchange aggregates equal the sequential
oracle over the capture's decoded messages (the underlying and series keys need the feed
handler's routing, which the two runs share)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from feedhandlers.opra_fast import decode_packet
from ops.dashboard.app import create_app
from ops.dashboard.finished_source import FinishedRunSource
from ops.market.oracle import oracle_windows
from pipeline_support import CAPTURE_DATE, line_packets, make_capture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(data: Path, *extra: str) -> tuple[Path, dict[tuple[int, str, int], tuple[int, ...]]]:
    before = set(data.glob("runs/*/*"))
    report = data / f"report{len(before)}.json"
    r = subprocess.run([sys.executable, "-P", "-m", "ops.cli.main", "run", "opra_fused_market", "--data", str(data),
                        "--capture-date", CAPTURE_DATE, "--rate", "4x", "--no-loop", "--json", str(report), *extra],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = set(data.glob("runs/*/*")) - before
    rows = pq.read_table(run_dir / "market_windows.parquet").to_pylist()
    ends = [r for r in rows if r["kind"] == "end"]
    assert ends and not any(e["incomplete"] or e["overflow"] or e["late"] for e in ends)
    live = json.loads((run_dir / "market_live.json").read_text())
    assert len(live["windows"]) == len(ends) and all(w["complete"] for w in live["windows"])
    out = {(r["window"], r["dim"], r["key"]): (r["quotes"], r["trades"], r["contracts"], r["notional"], r["nbbo"],
                                               r["max_trade"]) for r in rows if r["kind"] == "agg"}
    out.update({(e["window"], "messages", 0): (e["messages"],) for e in ends})
    # the run's JSON report carries the windows' summary, its counts those of the file
    market = json.loads(report.read_text())["market"]
    assert market["windows"] == market["complete"] == len({e["window"] for e in ends}) and market["incomplete"] == 0
    assert market["messages"] == sum(n for (_, d, _), (n, *_) in out.items() if d == "messages")
    assert market["keys"] == {d: sum(k[1] == d for k in out) for d in ("underlying", "series", "exchange")}
    assert abs(sum(market["exchange_quote_share"].values()) - 1.0) < 1e-9 and len(market["top_underlyings"]) == 5
    assert f"market windows: {market['windows']:,} ({market['windows']:,} complete" in r.stdout
    return run_dir, out


def test_shared_state_equals_the_baseline_and_the_oracle(tmp_path: Path) -> None:
    capture = make_capture(tmp_path, seconds=1.5, lines=4)
    run_dir, shared = _run(tmp_path)
    _, routed = _run(tmp_path, "--set", 'operators.ms.params.mode="route"')
    assert shared == routed
    msgs = np.concatenate([decode_packet(p).records for lp in line_packets(capture).values() for p in lp.payloads])
    want, counts = oracle_windows(msgs)
    assert {w: n for (w, d, _), (n,) in ((k, v) for k, v in shared.items() if k[1] == "messages")} == counts
    assert {(w, k): v for (w, d, k), v in shared.items() if d == "exchange"} == \
           {(w, k): v for (w, d, k), v in want.items() if d == 2}

    # what people see: /api/v1/market and the Prometheus gauges of the newest window
    client = TestClient(create_app(FinishedRunSource(run_dir)))
    market = client.get("/api/v1/market", params={"windows": 60}).json()
    newest = max(counts)
    assert market["available"] and market["windows"][0]["window"] == newest
    assert [w["messages"] for w in market["windows"]] == [counts[w] for w in sorted(counts, reverse=True)]
    shares = {e["exchange"]: e["quote_share"] for e in market["windows"][0]["exchanges"]}
    assert abs(sum(shares.values()) - 1.0) < 1e-9
    gauges = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    assert gauges["omdp_market_window_messages"].samples[0].value == counts[newest]
    assert {s.labels["exchange"] for s in gauges["omdp_market_exchange_quote_share"].samples} == set(shares)
