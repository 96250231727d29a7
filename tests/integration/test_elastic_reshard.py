"""The elastic engine partition (native/include/omdp/elastic.h) against a static engine on
the same stream: with buckets moved between workers while messages flow (every 40 packets'
worth, counted, not timed) and the level changed under load, every message comes out exactly once, in order per underlying, and the
signals and final NBBOs equal the static engine's."""
from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pytest

from decision_engines.elastic import ElasticConfig, ElasticEngine
from decision_engines.engine import DecisionEngine, EngineOutput, split_output
from decision_engines.engine_config import EngineConfig
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from ops.bench.model_market import model_market, quote_stream

AS_OF = dt.date(2008, 2, 4)
SIGNAL_KEYS = ["underlying_id", "msg_seq", "kind", "put_call", "strike_px", "expiry", "bid_px", "offer_px",
               "bid_part", "offer_part", "root"]


@pytest.fixture(scope="module")
def stream() -> np.ndarray:
    market = model_market(40, [20080216, 20080322], 6, AS_OF, seed=3)
    s = quote_stream(market, 30_000, seed=4)
    # a few crossed quotes, so there are signals to compare
    rng = np.random.default_rng(5)
    idx = rng.choice(len(s), 200, replace=False)
    s["bid_px"][idx] = s["offer_px"][idx] + 10_000_000
    return s


def static_run(msgs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    eng = DecisionEngine(EngineConfig(max_series=1 << 15, max_groups=1 << 10, sample_every=1))
    out = eng.process(msgs, batch=1024)
    eng.close()
    return out.samples, out.signals


def by_underlying(samples: np.ndarray) -> dict[int, list[int]]:
    """msg_seq of every sampled message, per underlying, in output order."""
    res: dict[int, list[int]] = {}
    for u, seq in zip(samples["underlying_id"].tolist(), samples["msg_seq"].tolist()):
        res.setdefault(u, []).append(seq)
    return res


def signal_rows(signals: np.ndarray) -> list[tuple]:
    return sorted(tuple(row) for row in signals[SIGNAL_KEYS].tolist())


MOVE_EVERY = 40
"""Batches dispatched between two hand-off requests (a batch is one packet's 14 messages)."""
SETTLE_GUARD_S = 120.0
"""Hang guard only: how long a requested hand-off may take before the test gives up."""


def settle(el: ElasticEngine, out: np.ndarray, used: int, parts: list[EngineOutput]) -> int:
    """Collect output (running worker 0's passes when it is inline) until every bucket is owned
    by the worker asked for, so the next request is a real move. Returns ``out``'s new length."""
    deadline = time.monotonic() + SETTLE_GUARD_S
    while any(o != w for o, w in (el.owner(b) for b in range(el.config.buckets))):
        el.dispatch(NO_MSGS)  # an inline worker 0 makes its pass here
        used = collect(el, out, used, parts)
        if time.monotonic() > deadline:
            raise AssertionError(f"hand-offs still pending after {SETTLE_GUARD_S} s")
        if not el.config.inline_worker0:
            time.sleep(0.0002)
    return used


def collect(el: ElasticEngine, out: np.ndarray, used: int, parts: list[EngineOutput]) -> int:
    used = el.collect(out, used)
    if len(out) - used < len(out) // 2:
        parts.append(split_output(out, used))
        used = 0
    return used


NO_MSGS = np.zeros(0, dtype=OPRA_MSG_DTYPE)


@pytest.mark.parametrize("inline", [False, True], ids=["threads", "inline-worker0"])
def test_moves_while_messages_flow_keep_every_message_once_and_in_order(stream: np.ndarray, inline: bool) -> None:
    """Every MOVE_EVERY batches one bucket is asked to move to another worker while the
    batches before it are still queued (every tenth request also changes the level); each
    request waits for the previous hand-offs, so the count of moves is the test's, not the
    machine's speed."""
    want_samples, want_signals = static_run(stream)
    assert len(want_samples) == len(stream) and len(want_signals) > 0
    el = ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=1 << 13, max_groups=1 << 8, sample_every=1),
                                     workers=3, buckets=16, ring_msgs=256, level=2, inline_worker0=inline))
    rng = np.random.default_rng(7)
    out = np.zeros(1 << 22, dtype=np.uint8)
    parts: list[EngineOutput] = []
    used = 0
    requested = level_changes = 0
    for i, start in enumerate(range(0, len(stream), 14)):  # one packet's worth of messages per dispatch
        chunk = stream[start : start + 14]
        done = 0
        while done < len(chunk):
            done += el.dispatch(chunk[done:])
            used = collect(el, out, used, parts)
        if i % MOVE_EVERY == MOVE_EVERY - 1:
            used = settle(el, out, used, parts)
            bucket = int(rng.integers(el.config.buckets))
            owner = el.owner(bucket)[0]
            active = el.counters()["level"]
            to = (owner + 1 + int(rng.integers(active - 1))) % active if active > 1 else owner
            if to != owner:
                el.move(bucket, to)
                requested += 1
            if requested and requested % 10 == 0:
                el.set_level(1 + (el.counters()["level"] % el.config.workers))
                level_changes += 1
    used = settle(el, out, used, parts)
    used = el.drain(out, used)
    parts.append(split_output(out, used))
    counters = el.counters()
    el.close()
    samples = np.concatenate([p.samples for p in parts])
    signals = np.concatenate([p.signals for p in parts])
    assert requested >= len(stream) // 14 // MOVE_EVERY // 2, "the test must actually move buckets"
    assert counters["moves"] >= requested and counters["level_changes"] == level_changes >= 2
    assert len(samples) == len(stream)
    assert by_underlying(samples) == by_underlying(want_samples)
    assert signal_rows(signals) == signal_rows(want_signals)
    assert counters["dispatched"] == counters["processed"] == len(stream)
    if inline:  # worker 0's buckets ran in place between hand-offs, the others through rings
        assert 0 < counters["inplace"] < len(stream)


def test_final_books_equal_the_static_engine(stream: np.ndarray) -> None:
    eng = DecisionEngine(EngineConfig(max_series=1 << 15, max_groups=1 << 10, sample_every=0))
    eng.process(stream, batch=1024)
    want = {(r["root"], r["expiry"], r["strike_px"], r["put_call"]): (r["bid_px"], r["offer_px"], r["bid_size"],
                                                                     r["offer_size"]) for r in eng.snapshot()}
    el = ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=1 << 13, max_groups=1 << 8, sample_every=0),
                                     workers=2, buckets=8, level=2))
    for i in range(0, len(stream), 5000):
        el.process(stream[i : i + 5000], batch=256)
        el.move(i // 5000 % 8, (i // 5000) % 2)
    got = {(r["root"], r["expiry"], r["strike_px"], r["put_call"]): (r["bid_px"], r["offer_px"], r["bid_size"],
                                                                    r["offer_size"]) for r in el.snapshot()}
    el.close()
    assert got == want


def test_levels_suspend_and_wake_workers_and_rebalance_buckets() -> None:
    el = ElasticEngine(ElasticConfig(workers=4, buckets=16, level=4))
    el.set_level(1)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and el.counters()["suspended"] < 3:
        time.sleep(0.005)
    assert el.counters()["suspended"] == 3
    assert {el.owner(b) for b in range(16)} == {(0, 0)}
    el.set_level(3)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (el.counters()["suspended"] != 1
                                           or any(o != w for o, w in (el.owner(b) for b in range(16)))):
        time.sleep(0.005)  # hand-offs are asynchronous: each owner hands over at its next pass
    owners = [el.owner(b)[0] for b in range(16)]
    assert sorted(set(owners)) == [0, 1, 2] and max(owners.count(w) for w in range(3)) <= 6
    assert el.counters()["suspended"] == 1 and el.counters()["level"] == 3
    assert all(el.worker(i)["alive"] == 1 for i in range(4))  # suspended, never destroyed
    el.close()


@pytest.mark.parametrize("kw,field", [({"buckets": 12}, "buckets"), ({"ring_msgs": 1000}, "ring_msgs"),
                                      ({"workers": 2, "level": 3}, "level")])
def test_bad_settings_name_the_field(kw: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ElasticConfig(**kw)


def test_bad_moves_are_refused() -> None:
    el = ElasticEngine(ElasticConfig(workers=2, buckets=4))
    with pytest.raises(RuntimeError, match="bucket 9"):
        el.move(9, 0)
    with pytest.raises(RuntimeError, match="level 5"):
        el.set_level(5)
    el.close()
