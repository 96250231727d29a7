"""The engine's BBO on today's feed: a small ``omdp synth --market today`` capture (OBI v6,
eighteen participant exchanges) decoded, routed and run through one engine as the signal
score's reference run does (tests/engine_capture_support.py). Every quote carries a BBO
indicator the generator computed over all participants; the engine's book, which holds
every participant of OPRA's table, agrees with each of them."""
from __future__ import annotations

from pathlib import Path

import pytest

from decision_engines.engine_config import EngineConfig
from engine_capture_support import run_capture
from ops.synth.today.generator import TodayConfig, synthesize_today


@pytest.mark.full  # synth and run about 38,000 messages
def test_the_engines_bbo_agrees_with_every_indicator_of_a_today_capture(tmp_path: Path) -> None:
    capture = synthesize_today(TodayConfig(data=tmp_path, seconds=0.5, rate=0.005, underlyings=150, series=12_000,
                                           progress=False)).directory
    run = run_capture(capture, EngineConfig(max_series=1 << 15, max_groups=1 << 12))
    c = run.counters
    assert c["processed"] == run.messages and c["quotes"] > 10_000
    assert c["bbo_checked"] == c["quotes"] and c["bad_participant"] == c["unrouted"] == c["table_full"] == 0
    assert c["bbo_bid_mismatch"] == c["bbo_offer_mismatch"] == c["bbo_bad_indicator"] == 0
