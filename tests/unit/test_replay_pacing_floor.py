"""The queueing floor of a schedule (ops.replay.pacing_floor) against the recursion it stands
for, and the benchmark verdicts built on it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ops.bench.replay import PACING_TARGET_NS, pacing_verdict, targets_of
from ops.replay.pacing_floor import (
    FLOOR_MARGIN_NS,
    floor_percentiles,
    lindley_errors,
    run_intended_ns,
    within_floor,
)
from ops.replay.rates import PAPER_1X_PPS
from ops.replay.schedule import Schedule


def _recursion(t: list[float], cost: float) -> list[float]:
    """The sender of the model, one packet at a time."""
    out, free = [], -np.inf
    for ti in t:
        start = max(ti, free)
        out.append(start - ti)
        free = start + cost
    return out


@settings(max_examples=200, deadline=None)
@given(gaps=hs.lists(hs.integers(0, 5_000), min_size=1, max_size=300), cost=hs.floats(0, 3_000))
def test_vectorized_floor_is_the_recursion(gaps: list[int], cost: float) -> None:
    t = np.cumsum(np.asarray(gaps, dtype=np.float64)) + 1e9
    got = lindley_errors(t, cost)
    want = _recursion(t.tolist(), cost)
    assert np.allclose(got, want, atol=1e-3)
    assert np.all(got >= -1e-6)


def test_bursts_queue_and_gaps_drain() -> None:
    # a burst of 5 packets at once, then a gap long enough to drain it, then one alone
    t = np.array([0, 0, 0, 0, 0, 10_000, 20_000], dtype=np.float64)
    assert lindley_errors(t, 100.0).tolist() == [0, 100, 200, 300, 400, 0, 0]
    assert floor_percentiles(t, 100.0, (0.5, 1.0)) == [100.0, 400.0]
    assert lindley_errors(np.zeros(0), 5.0).shape == (0,)


def _schedule() -> Schedule:
    pk = np.zeros(4, dtype=[("off", "<i8"), ("line", "<u2")])
    pk["off"] = [0, 0, 10, 30]
    pk["line"] = [1, 2, 1, 2]
    return Schedule(pkts=pk, sources=[], control_buf=b"", lap_span=40, recorded_timing=True, recorded_pps=1.0,
                    data_offsets=pk["off"][1:], line_packets={1: 2, 2: 2})


def test_intended_times_follow_the_laps() -> None:
    s = _schedule()
    assert run_intended_ns(s, 2.0, 10, loop=True).tolist() == [0, 0, 20, 60, 80, 80, 100, 140, 160, 160]
    assert run_intended_ns(s, 1.0, 10, loop=False).tolist() == [0, 0, 10, 30]
    assert run_intended_ns(s, 1.0, 3, loop=True, lines=[2]).tolist() == [0, 30, 40]
    assert run_intended_ns(s, 1.0, 0, loop=True).shape == (0,)


def test_margin() -> None:
    assert within_floor(1_000 + FLOOR_MARGIN_NS, 1_000) and not within_floor(1_001 + FLOOR_MARGIN_NS, 1_000)
    assert within_floor(1_250_000, 1_000_000) and not within_floor(1_260_000, 1_000_000)
    assert within_floor(None, 5.0) is None and within_floor(5.0, None) is None


def _pacing_row(target: str, x: float, p99: float | None, floor: float | None, **kw: object) -> dict[str, object]:
    row = {"kind": "pacing", "target": target, "copies": "A", "target_pps": x * PAPER_1X_PPS, "pacing_p99_ns": p99,
           "floor_p99_ns": floor, "floor_cost_ns": 3_100.0, "within_floor": within_floor(p99, floor),
           "sender_preemptions": 3, "ring_full_waits": 0, "sender_forced_rests": 0}
    row.update(kw)
    return row


@pytest.mark.parametrize("p99,floor,word", [
    (20_000.0, 5_000.0, "met: p99"),
    (1_500_000.0, 1_400_000.0, "within the schedule's floor"),
    (900_000.0, 5_000.0, "the sender was late"),
    (None, 5_000.0, "not measured"),
])
def testpacing_verdicts(p99: float | None, floor: float, word: str) -> None:
    assert word in pacing_verdict(_pacing_row("ring", 10.0, p99, floor))


def test_targets_pick_their_rows() -> None:
    rows = [
        {"kind": "max_rate", "target": "ring", "copies": "A", "achieved_pps": 2_500_000.0},
        _pacing_row("ring", 5.0, 90_000.0, 1_000.0),
        _pacing_row("ring", 10.0, 12_000.0, 4_000.0),
        _pacing_row("multicast", 5.0, 1_600_000.0, 1_500_000.0),
    ]
    got = {t["target"]: t for t in targets_of(rows)}
    assert len(got) == 3
    assert got[">= 1,000,000 packets/s into a ring from one core"]["met"]
    ring = next(t for name, t in got.items() if "ring A at 10x" in name)
    assert ring["met"] and ring["measured"] == 12_000.0 <= PACING_TARGET_NS
    mc = next(t for name, t in got.items() if "multicast A at 5x" in name)
    assert not mc["met"] and mc["within_floor"] and "microbursts" in mc["verdict"]


def test_af_xdp_targets_against_the_udp_socket_on_the_same_path() -> None:
    """AF_XDP's targets: its packets per sender CPU-s against the UDP socket's flat out (per
    copies), and its pacing at 20x (not the UDP socket's)."""
    flat = [{"kind": "max_rate", "target": "multicast", "copies": c, "multicast_sender": s, "path": "veth",
             "packets_per_cpu_s": pps} for c, s, pps in (("A", "udp", 400_000.0), ("A", "xdp", 2_400_000.0),
                                                         ("A,B", "udp", 200_000.0), ("A,B", "xdp", 500_000.0))]
    rows = [*flat, _pacing_row("multicast", 20.0, 40_000.0, 10_000.0, multicast_sender="xdp", path="veth"),
            _pacing_row("multicast", 20.0, 9_000_000.0, 10_000.0, multicast_sender="udp", path="veth")]
    got = {t["target"]: t for t in targets_of(rows)}
    send_a = next(t for name, t in got.items() if "packets per sender CPU-s" in name and name.endswith("copies A"))
    send_ab = next(t for name, t in got.items() if "packets per sender CPU-s" in name and name.endswith("A,B"))
    assert send_a["met"] and send_a["measured"] == 6.0 and "6.00x" in send_a["verdict"]
    assert not send_ab["met"] and send_ab["measured"] == 2.5
    paced = [t for name, t in got.items() if "at 20x" in name]
    assert len(paced) == 1 and "AF_XDP, veth" in paced[0]["target"] and paced[0]["met"]
