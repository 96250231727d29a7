"""The decision engine's signals against the ground truth of a real synthetic capture:
``omdp synth`` writes pcaps + manifest + ground truth; they are decoded, routed by underlying
with the manifest, run through one engine with its pricing refreshed every 100 ms of capture
time (tests/engine_capture_support.py), and scored (ops/spark/backtest/signal_score.py): precision >= 0.9 and recall >= 0.9."""
from __future__ import annotations

from pathlib import Path

import pytest

from decision_engines.engine_config import EngineConfig
from engine_capture_support import run_capture
from ops.spark.backtest.signal_score import score
from ops.synth.generator import SynthConfig, synthesize

ANOMALIES = {"locked": 8.0, "crossed": 8.0, "off_smile": 16.0, "parity": 8.0}
WARMUP_MS = 1000  # nothing to measure a quote against before the engine has seen the market


def synth_capture(root: Path, seed: int, seconds: float, underlyings: int, lines: int) -> Path:
    res = synthesize(SynthConfig(data=root, seconds=seconds, rate=0.5, seed=seed, progress=False,
                                 underlyings=underlyings, num_lines=lines, anomalies_per_second=dict(ANOMALIES)))
    return res.directory


def check(capture: Path) -> None:
    run = run_capture(capture, EngineConfig(max_series=1 << 17, max_groups=1 << 13))
    c = run.counters
    assert c["processed"] == run.messages and c["bad_record"] == c["table_full"] == 0
    assert c["bbo_bid_mismatch"] + c["bbo_offer_mismatch"] <= 1e-4 * c["bbo_checked"]
    s = score(run, capture / "ground_truth.parquet", warmup_ms=WARMUP_MS)
    assert s.events >= 20, "too few anomalies to score"
    assert s.precision >= 0.9, (s.precision, s.false_positive_kinds)
    assert s.recall >= 0.9, (s.recall, s.per_kind)


@pytest.mark.full  # synth and score 4 s of feed
def test_signals_score_against_ground_truth(tmp_path: Path) -> None:
    check(synth_capture(tmp_path, seed=11, seconds=4.0, underlyings=400, lines=4))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [21, 22])
def test_signals_score_against_ground_truth_longer(tmp_path: Path, seed: int) -> None:
    check(synth_capture(tmp_path, seed=seed, seconds=10.0, underlyings=800, lines=8))
