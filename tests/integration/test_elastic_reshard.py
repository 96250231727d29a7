"""The elastic engine partition (native/include/omdp/elastic.h) against a static engine on
the same stream: with buckets moved between workers every few milliseconds and the level
changed under load, every message comes out exactly once, in order per underlying, and the
signals and final NBBOs equal the static engine's."""
from __future__ import annotations

import datetime as dt
import threading
import time

import numpy as np
import pytest

from decision_engines.elastic import ElasticConfig, ElasticEngine
from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig
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


def mover(el: ElasticEngine, stop: threading.Event, every_s: float, moved: list[int]) -> None:
    """Move a random bucket to a random worker every ``every_s``, and now and then change the level."""
    rng = np.random.default_rng(7)
    n = 0
    while not stop.is_set():
        el.move(int(rng.integers(el.config.buckets)), int(rng.integers(el.config.workers)))
        n += 1
        if n % 10 == 0:
            el.set_level(int(rng.integers(1, el.config.workers + 1)))
        time.sleep(every_s)
    moved.append(n)


@pytest.mark.parametrize("inline", [False, True], ids=["threads", "inline-worker0"])
def test_moves_every_few_ms_keep_every_message_once_and_in_order(stream: np.ndarray, inline: bool) -> None:
    want_samples, want_signals = static_run(stream)
    assert len(want_samples) == len(stream) and len(want_signals) > 0
    el = ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=1 << 13, max_groups=1 << 8, sample_every=1),
                                     workers=3, buckets=16, ring_msgs=256, level=2, inline_worker0=inline))
    stop = threading.Event()
    moved: list[int] = []
    t = threading.Thread(target=mover, args=(el, stop, 0.002, moved))
    t.start()
    try:
        got = el.process(stream, batch=14)  # one packet's worth of messages per dispatch
    finally:
        stop.set()
        t.join()
    counters = el.counters()
    el.close()
    assert moved[0] > 10 and counters["moves"] > 10, "the test must actually move buckets"
    assert len(got.samples) == len(stream)
    assert by_underlying(got.samples) == by_underlying(want_samples)
    assert signal_rows(got.signals) == signal_rows(want_signals)
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
