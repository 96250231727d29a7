"""The capacity planner's queueing model (ops/pipeline/latency_model.py): the closed form of
the Lindley recursion equals the recursion, intended times follow the replay's schedule, lines
go to partitions as the pipeline deals them, and the cost and rate it solves for sit on the
bound."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ops.capture.stats import LinePackets
from ops.pipeline.assemble import deal_blocks
from ops.pipeline.latency_model import (
    Arrivals,
    latency_outlook,
    max_cost_for_bound,
    max_rate_for_bound,
    project,
    sojourn_ns,
)
from ops.replay.rates import PAPER_1X_PPS, RateSpec
from ops.replay.schedule import build_schedule


def lindley(t: list[float], s: list[float]) -> list[float]:
    """The recursion packet by packet: start = max(due, previous end)."""
    out, free = [], -np.inf
    for due, cost in zip(t, s):
        start = max(due, free)
        free = start + cost
        out.append(free - due)
    return out


@pytest.mark.full
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 3_000)), min_size=1, max_size=60))
def test_the_closed_form_is_the_recursion(pairs: list[tuple[int, int]]) -> None:
    gaps, costs = zip(*pairs)
    t = np.cumsum(np.asarray(gaps, dtype=np.float64))
    s = np.asarray(costs, dtype=np.float64)
    assert sojourn_ns(t, s).tolist() == pytest.approx(lindley(t.tolist(), s.tolist()), abs=1e-6)


def packets(lines: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, LinePackets]:
    return {ln: LinePackets(ts.astype(np.int64), m.astype(np.int64), np.full(ts.shape[0], 100, np.int64), {}, 0, [])
            for ln, (ts, m) in lines.items()}


def even(n: int, gap_ns: int, msgs: int = 10, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.int64) * gap_ns + start, np.full(n, msgs)


def test_a_partition_faster_than_the_gaps_never_queues() -> None:
    arr = Arrivals.of(packets({1: even(1000, 1_000_000)}))  # 1,000 packets/s recorded
    rate = 1.0  # 24,000 packets/s: a gap of 41.7 us
    p = project(arr, rate, 20_000.0)
    assert p.p50_ns == pytest.approx(20_000.0) and p.p99_ns == pytest.approx(20_000.0)
    slow = project(arr, rate, 50_000.0)  # more than the gap: the queue grows over the lap
    assert slow.max_ns > 100 * 50_000.0


def test_intended_times_follow_the_replay_schedule() -> None:
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(0, 2_000_000_000, 500)).astype(np.int64)
    arr = Arrivals.of(packets({1: (ts, np.full(500, 7))}))

    class Cap:  # what build_schedule reads of a capture
        offsets = np.zeros(500, dtype=np.int64)
        lengths = np.full(500, 100, dtype=np.int64)
        ts_ns = ts

        def __len__(self) -> int:
            return 500

    sched = build_schedule({1: [Cap()]}, {1: [None]}, recorded_timing=True)
    scale = sched.scale_for(RateSpec.parse(rate="7.5x"))
    assert arr.intended_ns(7.5) == pytest.approx(sched.pkts["off"].astype(np.float64) * scale, rel=1e-12)
    lap = arr.intended_ns(7.5)[-1] + arr.lap_span_ns / 499 * scale  # one mean gap closes the lap
    assert 500 / (lap / 1e9) == pytest.approx(7.5 * PAPER_1X_PPS, rel=1e-3)


def test_partitions_take_the_lines_the_pipeline_deals_them() -> None:
    lines = {ln: even(10, 1_000_000, start=ln * 1000) for ln in (1, 2, 3, 5, 8)}
    arr = Arrivals.of(packets(lines))
    masks = arr.partitions(2)
    deal = deal_blocks([1, 2, 3, 5, 8], 2)
    for h, mask in enumerate(masks):
        assert sorted(set(arr.line[mask].tolist())) == [ln for ln, k in deal.items() if k == h]
    assert len(arr.partitions(9)) == 5  # never more partitions than lines


def test_two_partitions_halve_a_burst() -> None:
    burst = np.zeros(100, dtype=np.int64)  # 100 packets at once on each of two lines
    arr = Arrivals.of(packets({1: (burst, np.full(100, 10)), 2: (burst, np.full(100, 10))}))
    one, two = project(arr, 1.0, 1_000.0, 1), project(arr, 1.0, 1_000.0, 2)
    assert one.max_ns == pytest.approx(200 * 1_000.0) and two.max_ns == pytest.approx(100 * 1_000.0)


def test_messages_weigh_the_percentiles_and_the_service() -> None:
    # a packet of 90 messages after 9 of one (9.9 a packet): at 9.9 ns per packet of the mean,
    # a message costs 1 ns, the big packet 90
    arr = Arrivals.of(packets({1: (np.arange(10, dtype=np.int64) * 10**9, np.array([1] * 9 + [90]))}))
    p = project(arr, 0.001, 9.9)
    assert p.p50_ns == pytest.approx(90.0)  # 90 of 99 messages are in the big packet
    assert p.max_ns == pytest.approx(90.0) and p.p99_ns == pytest.approx(90.0)
    assert project(arr, 0.001, 9.9).p50_ns != project(arr, 0.001, 9.9 * 2).p50_ns


def test_the_cost_and_the_rate_solved_for_sit_on_the_bound() -> None:
    rng = np.random.default_rng(7)
    ts = np.sort(rng.exponential(40_000, 20_000).cumsum()).astype(np.int64)
    arr = Arrivals.of(packets({1: (ts, rng.integers(1, 30, ts.shape[0]))}))
    bound = 200_000.0
    c = max_cost_for_bound(arr, 10.0, bound)
    assert project(arr, 10.0, c).p99_ns <= bound < project(arr, 10.0, c * 1.02).p99_ns
    r = max_rate_for_bound(arr, 2_000.0, bound)
    assert project(arr, r, 2_000.0).p99_ns <= bound < project(arr, r * 1.02, 2_000.0).p99_ns
    assert max_rate_for_bound(arr, 10**9, bound) == 0.0  # one packet alone exceeds it
    out = latency_outlook(arr, 10.0, 2_000.0, 1, 2, bound)
    assert out.proposed.p99_ns <= out.measured.p99_ns and out.max_ns_per_packet == pytest.approx(c)
    assert "p99 <= 200 us" in out.text() and out.to_dict()["measured"]["handlers"] == 1


def test_a_capture_without_packets_is_refused() -> None:
    with pytest.raises(ValueError, match="no packets"):
        Arrivals.of(packets({1: (np.zeros(0, np.int64), np.zeros(0, np.int64))}))
