"""The decision engine inside a partition: fused behind a source of OPRA quotes, its samples
and signals collected by Python sinks - native and Python (custom) engines alike."""
from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

from decision_engines.custom import CustomEngine, register_custom_engine
from decision_engines.operator import OPRA_MSG, SIGNAL, register_decision_engines
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIG_CROSSED, SIG_CUSTOM
from omdp.operator import Operator, OperatorContext, PollResult, SourceOperator
from omdp.plan import build_plan
from omdp.record import RF_SAMPLED
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.partition import Partition
from omdp.topology.load import parse_topology

P = 1_000_000_000
CENT = P // 100
N = 3000
COLLECTED: dict[str, list[np.ndarray]] = {}


def quotes() -> np.ndarray:
    """N quotes over 50 series on six exchanges; every 100th crosses the market and the next
    one, from the same exchange on the same series, puts it right."""
    i = np.arange(N)
    series = i % 50
    ex = i % 6
    crossing = i % 100 == 99
    repair = np.roll(crossing, 1)
    series = np.where(repair, np.roll(series, 1), series)
    ex = np.where(repair, np.roll(ex, 1), ex)
    bid = np.where(crossing, 200, 100 + (i % 7))
    return build_quotes(root=b"XYZ  ", expiry=20080322, strike_px=(10 + series) * P, put_call=b"C",
                        participant=np.frombuffer(b"ABCIPX", np.uint8)[ex], bid_px=bid * CENT, bid_size=10,
                        offer_px=(bid + 10) * CENT, offer_size=10, underlying_id=3)


class QuoteSource(SourceOperator):
    """Emits the quotes in batches of 14, like packets."""

    def __init__(self, params: BaseModel, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.q = quotes()
        self.pos = 0

    def poll(self) -> PollResult:
        if self.pos >= len(self.q):
            return PollResult.DONE
        self.emit("out", self.q[self.pos : self.pos + 14])
        self.pos += 14
        return PollResult.PRODUCED


class Collect(Operator):
    """Keeps a copy of every batch it gets, under its instance name."""

    def process_batch(self, records: np.ndarray, port: str) -> None:
        COLLECTED.setdefault(self.ctx.name, []).append(records.copy())


class WideSpread(CustomEngine):
    def process_batch(self, records: np.ndarray) -> None:
        self.signal(records["offer_px"] - records["bid_px"] > 5 * CENT, kind=SIG_CUSTOM + 1)


def registry() -> Registry:
    reg = Registry()
    register_decision_engines(reg)
    reg.add(OperatorKind("quote_source", (), (Port("out", OPRA_MSG.name),), QuoteSource, native=False))
    reg.add(OperatorKind("collect_quotes", (Port("in", OPRA_MSG.name),), (), Collect, native=False))
    reg.add(OperatorKind("collect_signals", (Port("in", SIGNAL.name),), (), Collect, native=False))
    register_custom_engine(reg, "wide_spread", lambda p, ctx: WideSpread(sample_every=100))
    return reg


def run(engine_kind: str, params: dict[str, Any]) -> dict[str, np.ndarray]:
    COLLECTED.clear()
    reg = registry()
    doc = {"name": "t", "channel": {"wait": "spin-yield"},
           "operators": {"src": {"kind": "quote_source"}, "de": {"kind": engine_kind, "params": params},
                         "samples": {"kind": "collect_quotes"}, "signals": {"kind": "collect_signals"}},
           "partitions": {"p": {"operators": ["src", "de", "samples", "signals"]}},
           "edges": [{"from": "src.out", "to": "de.quotes"}, {"from": "de.samples", "to": "samples.in"},
                     {"from": "de.signals", "to": "signals.in"}]}
    part = Partition(build_plan(parse_topology(doc), reg), "p", reg)
    try:
        assert part.run() == "ended"
        report = part.operator_report()
    finally:
        part.close()
    out = {k: np.concatenate(v) for k, v in COLLECTED.items()}
    out["report"] = report
    return out


def test_native_engine_operator_samples_and_signals() -> None:
    out = run("decision_engine", {"sample_every": 100})
    samples, signals, de = out["samples"], out["signals"], out["report"]["de"]
    assert de["processed"] == de["quotes"] == N and de["series"] == 50
    assert de["sampled"] == len(samples) == N // 100
    assert list(samples["msg_seq"]) == list(range(100, N + 1, 100))
    assert (samples["hdr"]["flags"] & RF_SAMPLED).all()
    st = samples["hdr"]["stamps"]
    assert (st["de_in"] > 0).all() and (st["de_out"] >= st["de_in"]).all()
    # every 100th quote (msg 100, 200, ...) crosses its series' market
    assert list(signals["kind"]) == [SIG_CROSSED] * (N // 100)
    assert list(signals["msg_seq"]) == list(range(100, N + 1, 100))
    assert de["skipped_records"] == de["bad_batches"] == 0


def test_custom_engine_operator_has_the_same_ports() -> None:
    out = run("wide_spread", {})
    assert list(out["samples"]["msg_seq"]) == list(range(100, N + 1, 100))
    assert len(out["signals"]) == N and (out["signals"]["kind"] == SIG_CUSTOM + 1).all()
    assert out["report"]["de"]["processed"] == N
