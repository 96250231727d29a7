"""What the feed handler's in-process tests share: the replayer's frame header, to write
frames into a handler's ring, and an operator that keeps every record the handler emits."""
from __future__ import annotations

import struct

import numpy as np

from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.operator import Operator, OperatorContext

FRAME = struct.Struct("<qqHBBHH")  # omdp_replay_frame_t


class Keep(Operator):
    """Keeps copies of every record it gets."""

    def __init__(self, params: object, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.parts: list[np.ndarray] = []

    def process_batch(self, records: np.ndarray, port: str) -> None:
        self.parts.append(records.copy())

    def records(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, OPRA_MSG_DTYPE)


Endpoints = dict[int, dict[str, tuple[str, int]]]
"""Each line's (group, port) of copy "A" and "B"."""


def own_endpoints(lines: list[int], net: str) -> Endpoints:
    """Groups (``net``.x.y, e.g. "239.78") and ports of a test's own, so that no other test's
    traffic reaches it."""
    import random

    base, sub = random.randint(20000, 60000), random.randint(1, 250)
    return {ln: {"A": (f"{net}.{sub}.{2 * i + 1}", base + 2 * i), "B": (f"{net}.{sub}.{2 * i + 2}", base + 2 * i + 1)}
            for i, ln in enumerate(lines)}


def keeping_partition(capture: object, name: str, endpoints: Endpoints, **fh_params: object) -> object:
    """One partition "app" in this process: a multicast feed handler of ``capture``'s lines on
    ``endpoints`` (copies A and B, two engine ports) into two ``Keep`` operators."""
    from omdp.plan import build_plan
    from omdp.registry import OperatorKind, Port
    from omdp.runtime.partition import Partition
    from omdp.topology.schema import Topology
    from ops.pipeline.assemble import routing_for
    from ops.pipeline.capture_info import open_capture
    from ops.pipeline.registry import build_registry

    info = open_capture(capture)
    registry = build_registry()
    registry.add(OperatorKind("keep", (Port("in", "opra_msg"),), (), Keep, native=False))
    lines = [{"line": ln, **{c.lower(): {"group": g, "port": p} for c, (g, p) in endpoints[ln].items()}}
             for ln in info.lines]
    topo = Topology.model_validate({
        "name": name,
        "operators": {
            "fh": {"kind": "feed_handler", "params": {
                "input": "multicast", "copies": "A,B", "routing": routing_for(info, 2).model_dump(), "lines": lines,
                **fh_params}},
            "keep": {"kind": "keep", "replicas": 2},
        },
        "partitions": {"app": {"operators": ["fh", "keep"]}},
        "edges": [{"from": f"fh.de{k}", "to": f"keep[{k}].in"} for k in range(2)],
    })
    return Partition(build_plan(topo, registry), "app", registry)


def wait_delivered(part: object, records: int, guard_s: float = 60.0) -> None:
    """Until the keepers took ``records`` messages (counted by the partition's loop, readable
    from any thread); ``guard_s`` only stops a hang."""
    import time

    want = records * OPRA_MSG_DTYPE.itemsize
    deadline = time.monotonic() + guard_s
    while sum(st["bytes_in"] for name, st in part.op_stats().items() if name.startswith("keep[")) < want:
        assert time.monotonic() < deadline, f"the keepers did not get {records} messages within {guard_s} s"
        time.sleep(0.001)
