"""A partition stopped hard (another partition of the run died, a second Ctrl-C) before its
inputs ended: each Python operator that had no end_of_stream gets stopped_early, so a
collector records what it collected; a drained stop gives end_of_stream only."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from omdp.operator import Operator, OperatorContext
from omdp.plan import build_plan
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.partition import Partition
from omdp.seq_ops import SEQ, register_seq_ops
from omdp.topology.load import parse_topology


class Recorder(Operator):
    """Counts records; after ``stop_after`` of them calls ``stop`` (set by the test)."""

    stop: Callable[[], None] = staticmethod(lambda: None)

    def __init__(self, p: Any, ctx: OperatorContext) -> None:
        super().__init__(p, ctx)
        self.seen = 0
        self.calls: list[tuple[str, int]] = []

    def process_batch(self, records: np.ndarray, port: str) -> None:
        self.seen += len(records)
        if self.seen >= 1000 and not self.calls:
            self.calls.append(("stop", self.seen))
            type(self).stop()

    def end_of_stream(self) -> None:
        self.calls.append(("end_of_stream", self.seen))

    def stopped_early(self) -> None:
        self.calls.append(("stopped_early", self.seen))


def _partition() -> tuple[Partition, Recorder]:
    reg = Registry()
    register_seq_ops(reg)
    reg.add(OperatorKind("recorder", (Port("in", SEQ.name),), (), Recorder, native=False))
    doc = {"name": "t", "operators": {"src": {"kind": "seq_source"}, "rec": {"kind": "recorder"}},
           "partitions": {"p": {"operators": ["src", "rec"]}}, "edges": [{"from": "src.out", "to": "rec.in"}]}
    p = Partition(build_plan(parse_topology(doc), reg), "p", reg)
    return p, p.bindings["rec"].op  # type: ignore[return-value]


def test_a_hard_stop_calls_stopped_early_with_what_was_collected() -> None:
    p, rec = _partition()
    Recorder.stop = staticmethod(lambda: p.request_stop(hard=True))
    try:
        assert p.run() == "stopped"
    finally:
        Recorder.stop = staticmethod(lambda: None)
        p.close()
    (first, at), (last, kept) = rec.calls
    assert (first, last) == ("stop", "stopped_early") and kept >= at >= 1000


def test_a_drained_stop_calls_end_of_stream_only() -> None:
    p, rec = _partition()
    Recorder.stop = staticmethod(lambda: p.request_stop(hard=False))
    try:
        assert p.run() == "ended"
    finally:
        Recorder.stop = staticmethod(lambda: None)
        p.close()
    assert [c for c, _ in rec.calls] == ["stop", "end_of_stream"]
