"""One engine over a whole synthetic capture, the reference the signal score is checked on
(tests/integration/test_engine_signal_scoring.py): the capture decoded (the A copy of every
line, feedhandlers' batch decoder), each message routed to its underlying with the
manifest's root -> underlying map, and fed to one engine in packet order across lines,
100 ms of capture time at a time; after each stretch the pricing refreshes, as the
refresher thread would in a run. The nightly backtest runs the same engine on Spark
(docs/analytics.md "Backtest"); both score with ops/spark/backtest/signal_score.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig, PricingConfig
from decision_engines.pricing.refresher import PricingRefresher
from ops.bench.capture_records import read_capture_records
from ops.spark.backtest.signal_score import QUOTE_KEY_DTYPE, CaptureRun

REFRESH_NS = 100_000_000


def run_capture(capture_dir: Path, engine_config: EngineConfig | None = None,
                pricing_config: PricingConfig | None = None, refresh_ns: int = REFRESH_NS) -> CaptureRun:
    """Decode, route and run one capture directory (manifest.json beside the pcaps)."""
    cap = read_capture_records(capture_dir)
    records, ts, manifest = cap.records, cap.ts_ns, cap.manifest
    engine = DecisionEngine(engine_config or EngineConfig())
    refresher = PricingRefresher(engine, pricing_config or PricingConfig(as_of=manifest["date"]))
    edges = np.searchsorted(ts, np.arange(ts[0], ts[-1] + refresh_ns, refresh_ns), side="left") if len(ts) else []
    out_signals = []
    refreshes = 0
    bounds = list(edges[1:]) + [len(records)]
    start = 0
    for end in bounds:
        if end > start:
            out_signals.append(engine.process(records[start:end], batch=4096).signals)
            start = end
            if refresher.refresh() is not None:
                refreshes += 1
    signals = np.concatenate(out_signals) if out_signals else np.zeros(0)
    quotes = np.empty(len(records), dtype=QUOTE_KEY_DTYPE)
    for name in QUOTE_KEY_DTYPE.names:
        quotes[name] = records[name]
    first_time = int(records["time"][0]) if len(records) else 0
    return CaptureRun(signals, engine.counters(), len(records), refreshes, quotes, first_time)
