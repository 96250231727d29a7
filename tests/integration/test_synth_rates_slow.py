"""Longer captures (slow tier): the rate lands on target at 1x and 0.5x over 20 s, the
statistics agree with the manifest, and bursts show in the 10 ms peaks."""
from __future__ import annotations

from pathlib import Path

import pytest

from ops.capture.stats import capture_stats
from ops.synth.generator import SynthConfig, synthesize


@pytest.mark.slow
@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_rate_over_twenty_seconds(tmp_path: Path, rate: float) -> None:
    res = synthesize(SynthConfig(data=tmp_path, seconds=20.0, rate=rate, seed=11, progress=False))
    r = res.manifest.rate
    assert r.packets_per_second == pytest.approx(rate * 24_000, rel=0.03)
    assert r.messages_per_packet == pytest.approx(14.0, abs=0.5)
    st = capture_stats(res.directory)
    t = st.total
    assert (t.packets, t.messages) == (r.packets, r.messages)
    assert t.packets_per_s == pytest.approx(r.packets_per_second, rel=0.01)
    assert t.categories["k"] / t.messages >= 0.999
    assert t.peak_messages_per_s["10ms"] > 2 * t.messages_per_s
    assert t.peak_messages_per_s["100ms"] > t.messages_per_s
    assert t.bad_packets == 0 and t.bytes_per_packet["max"] <= 1456
