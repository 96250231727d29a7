"""Market-wide statistics (docs/market_stats.md): the partitions' partial state merged by the
leaders, and the re-partitioning baseline, both equal the sequential oracle exactly, whatever
the key skew, the number of partitions and leaders, and the order in which the leaders hear
the sources; a partition that dies leaves its windows incomplete, never silently short; a
full table and a late message are counted, not lost silently. The C core runs here without
a partition (ops.market.core); tests/integration/test_market_pipeline.py runs the operators
in a pipeline. Named "sanitize": CI runs it under ASan/UBSan."""
from __future__ import annotations

import re

import numpy as np
import pytest

from ops.market.core import MarketConfig, Network, stats_op
from ops.market.oracle import oracle_windows
from ops.market.records import window_rows
from ops.market.stream import zipf_stream

BATCH = 500


def _run(msgs: np.ndarray, partitions: int, cfg: MarketConfig, mode: str, kill: tuple[int, int] | None = None,
         seed: int = 0, tell: bool = False) -> Network:
    """Every message to the partition of its line, batch by batch; the leaders hear the
    queued deltas in a seeded random order after each step. ``kill`` = (partition, at batch);
    ``tell``: the leaders then learn of it (as a partition loop tells them once it drained
    the dead partition's ring)."""
    net = Network(cfg, partitions, mode=mode, seed=seed)
    part = msgs["line"] % partitions
    for i, start in enumerate(range(0, len(msgs), BATCH)):
        sl = slice(start, start + BATCH)
        for k in range(partitions):
            if kill and k == kill[0] and i >= kill[1]:
                if i == kill[1]:
                    net.kill(k)
                    if tell:
                        net.gone(k)
                continue
            net.feed(k, msgs[sl][part[sl] == k])
        net.deliver()
    return net


@pytest.mark.parametrize("skew", [pytest.param(0.2, marks=pytest.mark.full), 1.0,
                                  pytest.param(2.0, marks=pytest.mark.full)])
@pytest.mark.parametrize("partitions,leaders", [(1, 1), (2, 2), (3, 4)])
def test_merged_windows_equal_the_baseline_and_the_oracle(skew: float, partitions: int, leaders: int) -> None:
    msgs = zipf_stream(15_000, skew, seed=int(skew * 10) + partitions, step_us=60.0)
    cfg = MarketConfig(leaders=leaders, window_ms=250)
    want, counts = oracle_windows(msgs, window_ms=250)
    for mode in ("shared", "route"):
        net = _run(msgs, partitions, cfg, mode, seed=partitions)
        aggs, ends = window_rows(net.finish())
        assert aggs == want, mode
        assert {w: e["messages"] for w, e in ends.items()} == counts
        assert not any(e["incomplete"] or e["overflow"] or e["late"] for e in ends.values())
        assert all(e["leaders"] == leaders for e in ends.values())
        net.close()


def test_underlying_ids_beyond_the_direct_table_are_exact() -> None:
    """Routed ids below 16,384 take the direct table, the others (and "no underlying") the
    hash table beside the series: the windows are the oracle's either way."""
    msgs = zipf_stream(15_000, 1.0, seed=4, step_us=60.0)
    msgs["underlying_id"][::2] += np.uint32(1 << 20)
    msgs["underlying_id"][::7] = np.uint32(0xFFFFFFFF)
    want, counts = oracle_windows(msgs, window_ms=250)
    net = _run(msgs, 2, MarketConfig(leaders=2, window_ms=250), "shared", seed=3)
    aggs, ends = window_rows(net.finish())
    assert aggs == want and {w: e["messages"] for w, e in ends.items()} == counts
    assert {k for (_, d, k) in aggs if d == 0} >= {0xFFFFFFFF, int(msgs["underlying_id"][0])}
    net.close()


def test_shared_state_sends_fewer_records_than_routing_every_update() -> None:
    msgs = zipf_stream(40_000, 1.2, underlyings=200)
    sent = {}
    for mode in ("shared", "route"):
        net = _run(msgs, 2, MarketConfig(leaders=2), mode)
        net.finish()
        sent[mode] = sum(m.counters()["deltas"] for m in net.merges)
        net.close()
    assert sent["route"] == 3 * 40_000  # one update per message and dimension
    assert sent["shared"] < sent["route"] / 4


@pytest.mark.full
@pytest.mark.parametrize("mode", ["shared", "route"])
def test_a_dead_partition_leaves_its_windows_incomplete_never_short(mode: str) -> None:
    msgs = zipf_stream(40_000, 1.0, step_us=60.0)
    cfg = MarketConfig(leaders=2, window_ms=250)
    want, counts = oracle_windows(msgs, window_ms=250)
    net = _run(msgs, 3, cfg, mode, kill=(1, 40))
    aggs, ends = window_rows(net.finish())
    complete = {w for w, e in ends.items() if not e["incomplete"]}
    incomplete = set(ends) - complete
    assert complete and incomplete
    assert all(ends[w]["missing"] == 0b010 for w in incomplete)  # partition 1, named
    # every complete window is exact; the dead partition's last windows and after are incomplete
    assert {k: v for k, v in aggs.items() if k[0] in complete} == {k: v for k, v in want.items() if k[0] in complete}
    assert all(ends[w]["messages"] == counts[w] for w in complete)
    assert max(complete) < min(incomplete)
    assert all(ends[w]["messages"] < counts[w] for w in incomplete)  # short, and saying so
    net.close()


@pytest.mark.parametrize("mode", ["shared", "route"])
def test_leaders_told_of_a_death_emit_the_later_windows_as_the_others_pass_them(mode: str) -> None:
    """Without word of the death the leaders hold every later window (64 may wait) until
    their end; told, they emit each one incomplete, naming the dead partition, once the
    living partitions pass it. The windows at the end are the same either way."""
    msgs = zipf_stream(40_000, 1.0, step_us=60.0)
    cfg = MarketConfig(leaders=2, window_ms=250, pending=64)
    before, after = {}, {}
    for tell in (False, True):
        net = _run(msgs, 3, cfg, mode, kill=(1, 40), tell=tell)
        before[tell] = window_rows(np.concatenate(net.windows))[1] if net.windows else {}
        after[tell] = window_rows(net.finish())
        assert sum(m.counters()["sources_gone"] for m in net.merges) == (2 if tell else 0)
        net.close()
    assert after[False] == after[True]
    ends = after[True][1]
    complete = {w for w, e in ends.items() if not e["incomplete"]}
    assert complete and set(before[False]) == complete and all(e["leaders"] == 2 for e in before[False].values())
    later = set(before[True]) - complete
    # every later window but the living partitions' open ones (lateness 1: two) is out, incomplete
    assert len(later) == len(ends) - len(complete) - 2 > 3
    assert all(before[True][w]["missing"] == 0b010 and before[True][w]["leaders"] == 2 for w in later)


def test_a_full_table_counts_every_update_it_drops() -> None:
    msgs = zipf_stream(20_000, 0.2, underlyings=5000)
    net = _run(msgs, 2, MarketConfig(leaders=1, capacity=64), "shared")
    aggs, ends = window_rows(net.finish())
    lost = sum(e["overflow"] for e in ends.values())
    dropped = sum(s.counters()["overflow"] for s in net.stats) + sum(m.counters()["overflow"] for m in net.merges)
    assert lost == dropped > 0
    # what was kept plus what was dropped is every update of the underlying dimension
    kept = sum(v[0] + v[1] for k, v in aggs.items() if k[1] == 0)
    assert kept <= len(msgs) and sum(e["messages"] for e in ends.values()) == len(msgs)
    net.close()


def test_a_count_past_32_bits_goes_out_early_and_is_exact() -> None:
    """A partition keeps 32-bit counts per key: trades of 3e9 contracts overflow a key's
    contracts within a window, so its cell goes to the leader as a delta first (a spill)
    and the windows still equal the oracle's 64-bit sums, in both modes."""
    msgs = zipf_stream(8000, 2.0, underlyings=20, step_us=60.0, trade_every=4)
    trade = msgs["category"] == ord("a")
    msgs["volume"][trade] = 3_000_000_000
    msgs["premium_px"][trade] = 10_000_000
    want, counts = oracle_windows(msgs, window_ms=250)
    assert max(v[2] for v in want.values()) > 2**32  # some key's contracts need more than 32 bits
    net = _run(msgs, 2, MarketConfig(leaders=2, window_ms=250), "shared", seed=5)
    aggs, ends = window_rows(net.finish())
    assert aggs == want and {w: e["messages"] for w, e in ends.items()} == counts
    assert sum(st.counters()["spills"] for st in net.stats) > 0
    assert not any(e["incomplete"] for e in ends.values())
    net.close()


def test_a_message_older_than_the_open_windows_is_counted_late() -> None:
    msgs = zipf_stream(6000, 1.0, lines=1, step_us=500.0)
    late = msgs[:10].copy()  # from the first window, re-sent at the end
    net = Network(MarketConfig(window_ms=100, lateness=1), 1)
    net.feed(0, msgs)
    net.feed(0, late)
    aggs, ends = window_rows(net.finish())
    want, counts = oracle_windows(msgs, window_ms=100)
    assert aggs == want
    assert sum(e["late"] for e in ends.values()) == 10 == net.stats[0].counters()["late"]
    net.close()


@pytest.mark.parametrize("field,value,reason", [
    ("window_ms", 0, "window_ms must be at least 1"),
    ("leaders", 9, "leaders must be 1 .. 8, not 9"),
    ("capacity", 100, "capacity must be a power of two, 64 .. 2^26, not 100"),
    ("lateness", 4, "lateness must be 0 .. 3 windows, not 4"),
])
def test_bad_parameters_are_refused_with_the_field(field: str, value: int, reason: str) -> None:
    cfg = MarketConfig(**{field: value})
    with pytest.raises(ValueError, match=re.escape(f"market_stats[0]: {reason}")):
        stats_op(cfg, 0)
