"""The elastic partition's inline worker 0 runs the buckets it owns straight from the
dispatched batch (elastic_inline.c, omdp_engine_process_gather): the same output as the
static engine, per underlying in order, whichever path (in place or through the ring) each
bucket's messages take. Names carry "sanitize" so CI runs them under ASan/UBSan."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from decision_engines.elastic import ElasticConfig, ElasticEngine
from decision_engines.engine import MAX_OUT_PER_MSG, DecisionEngine, EngineError, split_output
from decision_engines.engine_config import EngineConfig
from ops.bench.model_market import model_market, quote_stream

AS_OF = dt.date(2008, 2, 4)
SIGNAL_KEYS = ["underlying_id", "msg_seq", "kind", "put_call", "strike_px", "expiry", "bid_px", "offer_px", "root"]


@pytest.fixture(scope="module")
def stream() -> np.ndarray:
    market = model_market(30, [20080216, 20080322], 5, AS_OF, seed=11)
    s = quote_stream(market, 12_000, seed=12)
    rng = np.random.default_rng(13)
    idx = rng.choice(len(s), 100, replace=False)
    s["bid_px"][idx] = s["offer_px"][idx] + 10_000_000  # crossed: signals to compare
    return s


def engine(sample_every: int = 1) -> DecisionEngine:
    return DecisionEngine(EngineConfig(max_series=1 << 14, max_groups=1 << 9, sample_every=sample_every))


def per_underlying(samples: np.ndarray) -> dict[int, list[int]]:
    res: dict[int, list[int]] = {}
    for u, seq in zip(samples["underlying_id"].tolist(), samples["msg_seq"].tolist()):
        res.setdefault(u, []).append(seq)
    return res


def rows(signals: np.ndarray) -> list[tuple]:
    return sorted(tuple(r) for r in signals[SIGNAL_KEYS].tolist())


def test_sanitize_gather_equals_the_batch_of_the_same_records(stream: np.ndarray) -> None:
    idx = np.flatnonzero(stream["underlying_id"] % 3 == 1).astype(np.uint32)
    a, b = engine(), engine()
    out_a = np.zeros(len(idx) * MAX_OUT_PER_MSG, dtype=np.uint8)
    out_b = np.zeros_like(out_a)
    got, used_a = a.process_gather(stream, idx, out_a, 0)
    want, used_b = b.process_batch(np.ascontiguousarray(stream[idx]), out_b, 0)
    assert got == want == len(idx) and used_a == used_b
    ga, gb = split_output(out_a, used_a), split_output(out_b, used_b)
    assert ga.samples["msg_seq"].tolist() == gb.samples["msg_seq"].tolist() == stream["msg_seq"][idx].tolist()
    assert rows(ga.signals) == rows(gb.signals) and len(ga.signals) > 0
    a.close()
    b.close()


def test_sanitize_gather_refuses_an_index_past_the_batch(stream: np.ndarray) -> None:
    e = engine()
    out = np.zeros(1 << 16, dtype=np.uint8)
    with pytest.raises(EngineError, match="process_gather"):
        e.process_gather(stream[:10], np.array([0, 3, 10], dtype=np.uint32), out, 0)
    assert e.counters()["processed"] == 0  # refused before any record is read
    e.close()


@pytest.mark.parametrize("level,out_bytes,batch", [(1, 1 << 20, 1024), (2, 1 << 20, 1024), (1, 1 << 20, 14),
                                                   (1, 4096, 1024)],
                         ids=["level1", "level2", "packet-batches", "small-output-rings"])
def test_sanitize_inline_dispatch_equals_the_static_engine(stream: np.ndarray, level: int, out_bytes: int,
                                                           batch: int) -> None:
    static = engine()
    want = static.process(stream, batch=1024)
    static.close()
    el = ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=1 << 12, max_groups=1 << 7, sample_every=1),
                                     workers=2, buckets=8, ring_msgs=1024, out_bytes=out_bytes, level=level,
                                     inline_worker0=True))
    got = el.process(stream, batch=batch)
    c = el.counters()
    el.close()
    assert c["dispatched"] == c["processed"] == len(stream)
    if level == 1 and out_bytes > 4096:
        assert c["inplace"] == len(stream)  # every bucket is worker 0's, every ring empty
    elif level == 2:
        assert 0 < c["inplace"] < len(stream)  # worker 1's buckets went through their rings
    else:
        assert c["inplace"] < len(stream)  # big batches do not fit the output rings: ring path
    assert per_underlying(got.samples) == per_underlying(want.samples)
    assert rows(got.signals) == rows(want.signals)
