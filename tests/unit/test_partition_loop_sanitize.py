"""The C partition loop in one process: fusion and depth-first order, Python operators,
frames split to max_message, multiplexed routes, bad frames, drops, end of stream, stops.
Channels are real Vega rings over process memory (vega_local_pair); the upstream
partition runs in a thread, both loops in C with the GIL released."""
from __future__ import annotations

import struct
import threading
import time
from typing import Any

import numpy as np
import pytest

from omdp.native import lib
from omdp.operator import Operator, OperatorContext
from omdp.plan import Plan, build_plan
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.partition import Partition, PartitionError
from omdp.seq_ops import SEQ, register_seq_ops, seq_check, seq_record_dtype
from omdp.topology.load import parse_topology
from omdp.transport.vega import vega_local_pair


class Holder(Operator):
    """Holds every batch until end of stream, then emits them all (tests the flush order)."""

    def __init__(self, p: Any, ctx: OperatorContext) -> None:
        super().__init__(p, ctx)
        self.held: list[bytes] = []

    def process_batch(self, records: np.ndarray, port: str) -> None:
        self.held.append(records.tobytes())

    def end_of_stream(self) -> None:
        for b in self.held:
            self.emit("out", b)

    def counters(self) -> dict[str, int]:
        return {"held": len(self.held)}


class Exploder(Operator):
    def process_batch(self, records: np.ndarray, port: str) -> None:
        raise ValueError("boom on purpose")


def registry() -> Registry:
    reg = Registry()
    register_seq_ops(reg)
    io = ((Port("in", SEQ.name),), (Port("out", SEQ.name),))
    reg.add(OperatorKind("holder", *io, Holder, native=False))
    reg.add(OperatorKind("exploder", *io, Exploder, native=False))
    return reg


REG = registry()


def plan_of(operators: dict[str, Any], partitions: dict[str, Any], edges: list[tuple[str, str]], **channel: Any) -> Plan:
    doc = {"name": "t", "operators": operators, "partitions": partitions, "channel": {"wait": "spin-yield", **channel},
           "edges": [{"from": a, "to": b} for a, b in edges]}
    return build_plan(parse_topology(doc), REG)


def linked(plan: Plan) -> tuple[dict[str, Partition], list[Any]]:
    """Every partition of ``plan``, channels joined by in-process Vega rings."""
    parts = {p.name: Partition(plan, p.name, REG) for p in plan.partitions}
    ends = []
    for c in plan.channels:
        tx, rx = vega_local_pair(c.spec)
        parts[c.upstream].set_output(c.id, lib.omdp_chan_vega_out_ops(), tx.c_handle)
        parts[c.downstream].set_input(c.id, lib.omdp_chan_vega_in_ops(), rx.c_handle)
        ends += [tx, rx]
    return parts, ends


def run_all(parts: dict[str, Partition]) -> dict[str, str]:
    """Run upstream partitions in threads, the last one here; return each one's status."""
    status: dict[str, str] = {}
    errors: list[BaseException] = []

    def go(name: str) -> None:
        try:
            status[name] = parts[name].run()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    names = list(parts)
    threads = [threading.Thread(target=go, args=(n,)) for n in names[:-1]]
    for t in threads:
        t.start()
    go(names[-1])
    for t in threads:
        t.join(timeout=30)
    if errors:
        raise errors[0]
    return status


def test_fused_partition_is_accounted_exactly_with_python_operators() -> None:
    plan = plan_of(
        {"src": {"kind": "seq_source", "replicas": 3, "params": {"count": 1000, "batch": 7, "record_size": 96}},
         "r": {"kind": "relay"}, "pr": {"kind": "py_relay"},
         "psrc": {"kind": "py_seq_source", "params": {"count": 500, "source_base": 10, "batch": 5, "record_size": 120}},
         "sink": {"kind": "seq_sink"}},
        {"p": {"operators": ["src", "r", "pr", "psrc", "sink"]}},
        [("src.out", "r.in"), ("r.out", "pr.in"), ("pr.out", "sink.in"), ("psrc.out", "sink.in")],
    )
    p = Partition(plan, "p", REG)
    assert p.run() == "ended"
    rep = p.operator_report()
    p.close()
    assert rep["sink"]["records"] == rep["sink"]["expected"] == 3500 and rep["sink"]["sources"] == 4
    assert rep["sink"]["gaps"] == rep["sink"]["out_of_order"] == rep["sink"]["bad_check"] == 0
    assert rep["r"]["records"] == rep["pr"]["records"] == 3000
    # depth-first, no copy: the relay passes every batch on as it came
    assert rep["r"]["batches_in"] == rep["pr"]["batches_in"] == 3 * 143


def test_end_of_stream_flushes_in_topological_order() -> None:
    plan = plan_of(
        {"src": {"kind": "seq_source", "params": {"count": 100, "batch": 10}}, "h1": {"kind": "holder"},
         "h2": {"kind": "holder"}, "sink": {"kind": "seq_sink"}},
        {"p": {"operators": ["sink", "h2", "h1", "src"]}},
        [("src.out", "h1.in"), ("h1.out", "h2.in"), ("h2.out", "sink.in")],
    )
    assert plan.partitions[0].operators == ["src", "h1", "h2", "sink"]
    p = Partition(plan, "p", REG)
    assert p.run() == "ended"
    rep = p.operator_report()
    p.close()
    # h1 flushes into h2 before h2 flushes, so nothing is left held
    assert rep["h1"]["held"] == 10 and rep["h2"]["held"] == 10
    assert rep["sink"]["records"] == 100 and rep["sink"]["gaps"] == 0


def test_frames_split_to_max_message_and_routes_multiplex() -> None:
    plan = plan_of(
        {"a": {"kind": "seq_source", "params": {"count": 3000, "batch": 16, "record_size": 96}},
         "b": {"kind": "seq_source", "params": {"count": 2000, "batch": 3, "source_base": 7}},
         "r": {"kind": "relay"}, "s1": {"kind": "seq_sink"}, "s2": {"kind": "seq_sink"}},
        {"up": {"operators": ["a", "b"]}, "down": {"operators": ["r", "s1", "s2"]}},
        [("a.out", "r.in"), ("b.out", "s2.in"), ("a.out", "s2.in"), ("r.out", "s1.in")],
        queue_size=8, max_message=8 + 5 * 96, mutex=False,
    )
    [ch] = plan.channels
    assert len(ch.routes) == 2
    parts, ends = linked(plan)
    assert run_all(parts) == {"up": "ended", "down": "ended"}
    up, down = parts["up"], parts["down"]
    rep = down.operator_report()
    out = up.channel_stats()["up->down"]
    inn = down.channel_stats()["up->down"]
    # 187 of a's 16-record batches go as 5+5+5+1 records, its last 8 as 5+3; b's 3 x 80 bytes fit in one
    assert out["frames"] == inn["frames"] == 187 * 4 + 2 + 667
    assert out["bytes"] == inn["bytes"] == 3000 * 96 + 2000 * 80
    assert inn["ended"] == 1 and inn["bad_frames"] == 0 and out["too_big"] == 0
    assert rep["s1"]["records"] == rep["s1"]["expected"] == 3000
    assert rep["s2"]["records"] == rep["s2"]["expected"] == 5000 and rep["s2"]["sources"] == 2
    for p in parts.values():
        p.close()
    for e in ends:
        e.close()


def test_a_record_larger_than_max_message_is_counted_and_skipped() -> None:
    plan = plan_of(
        {"a": {"kind": "seq_source", "params": {"count": 50, "batch": 5, "record_size": 512}},
         "b": {"kind": "seq_source", "params": {"count": 50, "batch": 5, "source_base": 1}},
         "sink": {"kind": "seq_sink"}},
        {"up": {"operators": ["a", "b"]}, "down": {"operators": ["sink"]}},
        [("a.out", "sink.in"), ("b.out", "sink.in")], max_message=256, mutex=False,
    )
    parts, ends = linked(plan)
    assert run_all(parts) == {"up": "ended", "down": "ended"}
    assert parts["up"].channel_stats()["up->down"]["too_big"] == 50
    rep = parts["down"].operator_report()["sink"]
    assert rep["records"] == 50 and rep["sources"] == 1
    for x in [*parts.values(), *ends]:
        x.close()


def test_bad_frames_are_counted_and_skipped() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 1}}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")], mutex=False)
    down = Partition(plan, "down", REG)
    tx, rx = vega_local_pair(plan.channels[0].spec)
    down.set_input(0, lib.omdp_chan_vega_in_ops(), rx.c_handle)
    good = np.zeros(2, dtype=seq_record_dtype(80))
    good["hdr"]["type"], good["hdr"]["length"], good["seq"] = lib.OMDP_RT_SEQ, 80, [0, 1]
    good["check"] = seq_check(np.zeros(2, dtype=np.uint64), good["seq"])
    frame = struct.pack("<II", 0, 0)
    for msg in (b"\x01\x02\x03",                                   # shorter than a frame header
                struct.pack("<II", 5, 0) + good.tobytes(),         # unknown route
                frame + good.tobytes()[:100],                      # records do not tile
                frame + good.tobytes(),                            # good
                struct.pack("<II", 0xFFFFFFFF, 1)):                # end of stream
        assert tx.put(msg, timeout=1.0)
    assert down.run() == "ended"
    assert down.channel_stats()["up->down"]["bad_frames"] == 3
    rep = down.operator_report()["sink"]
    assert rep["records"] == 2 and rep["bad_record"] == 0
    for x in (down, tx, rx):
        x.close()


def test_drop_policy_counts_what_a_full_ring_dropped() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 2000, "batch": 1}}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")],
                   queue_size=4, on_full="drop", mutex=False)
    parts, ends = linked(plan)
    t = threading.Thread(target=parts["up"].run)
    t.start()
    # nobody reads until the source has put or dropped all 2,000 records (with on_full = "block"
    # it would wait here for room): what the ring could not take is dropped and counted
    deadline = time.monotonic() + 60  # a hang guard only
    while sum(parts["up"].channel_stats()["up->down"][k] for k in ("frames", "drops")) < 2000:
        assert time.monotonic() < deadline, parts["up"].channel_stats()
        time.sleep(0.001)
    assert parts["down"].run() == "ended"
    t.join(timeout=30)
    drops = parts["up"].channel_stats()["up->down"]["drops"]
    rep = parts["down"].operator_report()["sink"]
    assert rep["records"] + drops == 2000 and drops > 0 and rep["records"] >= 1
    assert rep["gaps"] == rep["expected"] - rep["records"] and rep["out_of_order"] == 0
    for x in [*parts.values(), *ends]:
        x.close()


def test_stop_requests() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"rate": 50000.0}}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")], mutex=False)
    parts, ends = linked(plan)
    threading.Timer(0.3, parts["up"].request_stop).start()
    assert run_all(parts) == {"up": "ended", "down": "ended"}  # sources stopped, queue drained
    sent = parts["up"].operator_report()["a"]["records"]
    assert sent > 0 and parts["down"].operator_report()["sink"]["records"] == sent
    for x in [*parts.values(), *ends]:
        x.close()
    # a partition blocked on a full ring leaves on a hard stop
    plan = plan_of({"a": {"kind": "seq_source"}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")],
                   queue_size=2, mutex=False)
    parts, ends = linked(plan)
    threading.Timer(0.3, parts["up"].request_stop, kwargs={"hard": True}).start()
    assert parts["up"].run() == "stopped"
    assert parts["up"].channel_stats()["up->down"]["full_waits"] > 0
    for x in [*parts.values(), *ends]:
        x.close()


def test_an_input_whose_sender_died_ends_after_what_it_committed() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 1}}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")], mutex=False)
    down = Partition(plan, "down", REG)
    tx, rx = vega_local_pair(plan.channels[0].spec)
    down.set_input(0, lib.omdp_chan_vega_in_ops(), rx.c_handle)
    recs = np.zeros(6, dtype=seq_record_dtype(80))
    recs["hdr"]["type"], recs["hdr"]["length"], recs["seq"] = lib.OMDP_RT_SEQ, 80, np.arange(6)
    recs["check"] = seq_check(np.zeros(6, dtype=np.uint64), recs["seq"])
    for k in range(3):  # three frames, then the sender is gone: no end of stream
        assert tx.put(struct.pack("<II", 0, 0) + recs[2 * k:2 * k + 2].tobytes(), timeout=1.0)
    down.peers_gone([0], [])
    assert down.run() == "ended"
    ch = down.channel_stats()["up->down"]
    assert (ch["frames"], ch["ended"], ch["peer_gone"]) == (3, 0, 1) and down.stats()["inputs_ended"] == 1
    rep = down.operator_report()["sink"]
    assert rep["records"] == 6 and rep["gaps"] == rep["bad_record"] == 0
    for x in (down, tx, rx):
        x.close()


def test_an_output_whose_receiver_died_drops_and_counts() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 500, "batch": 1}}, "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"]}, "down": {"operators": ["sink"]}}, [("a.out", "sink.in")],
                   queue_size=4, mutex=False)
    parts, ends = linked(plan)
    up = parts["up"]
    t = threading.Thread(target=up.run)
    t.start()
    deadline = time.monotonic() + 60  # a hang guard only: nobody reads, the ring fills
    while up.channel_stats()["up->down"]["full_waits"] == 0:
        assert time.monotonic() < deadline, up.channel_stats()
        time.sleep(0.001)
    up.peers_gone([], [0])
    t.join(timeout=30)
    assert not t.is_alive() and up.stats()["state"] == "ended"
    ch = up.channel_stats()["up->down"]
    assert ch["frames"] == 4 and ch["frames"] + ch["drops"] == 500 and (ch["ended"], ch["peer_gone"]) == (0, 1)
    for x in [*parts.values(), *ends]:
        x.close()


def test_python_exception_fails_the_partition_with_the_operator_named() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 10}}, "x": {"kind": "exploder"},
                    "sink": {"kind": "seq_sink"}},
                   {"p": {"operators": ["a", "x", "sink"]}}, [("a.out", "x.in"), ("x.out", "sink.in")])
    p = Partition(plan, "p", REG)
    with pytest.raises(PartitionError) as e:
        p.run()
    assert "x raised ValueError: boom on purpose" in str(e.value)
    assert isinstance(e.value.__cause__, ValueError)
    p.close()


def test_bad_native_parameters_fail_at_build_with_the_reason() -> None:
    plan = plan_of({"a": {"kind": "seq_source", "params": {"source_base": 65535}, "replicas": 2}, "sink": {"kind": "seq_sink"}},
                   {"p": {"operators": ["a", "sink"]}}, [("a.out", "sink.in")])
    with pytest.raises(PartitionError, match=r"init a\[1\]: a\[1\]: source id .* must be < 65536"):
        Partition(plan, "p", REG)


def test_busy_time_counts_the_working_iterations_only() -> None:
    """loop_busy_ns is the time of the iterations that did work: a paced source leaves a
    spinning loop mostly idle, a flat-out one keeps it working; CPU time cannot tell them
    apart (a spinning loop's CPU time is its wall time)."""
    def run(params: dict[str, Any]) -> dict[str, Any]:
        plan = plan_of({"a": {"kind": "seq_source", "params": params}, "sink": {"kind": "seq_sink"}},
                       {"p": {"operators": ["a", "sink"], "wait": "spin"}}, [("a.out", "sink.in")])
        p = Partition(plan, "p", REG)
        assert p.run() == "ended"
        st, rep = p.stats(), p.operator_report()
        p.close()
        assert rep["sink"]["records"] == params["count"]
        return st

    # How the busy share of the wall time comes out depends on where a loaded host preempted
    # the loop (inside a working iteration, it counts as busy), so the test holds the counts:
    # a paced source leaves the loop spinning idle nearly always and its busy time below its
    # wall time; a flat-out one never idles. What share of a flat-out loop's wall time is busy is
    # not asserted: a preemption between two iterations is wall time and not busy time (it was
    # a third of it in one run at load 15).
    paced = run({"count": 4000, "batch": 4, "rate": 20000.0})  # 0.2 s, almost all of it idle
    working = paced["loops"] - paced["idle_loops"]
    assert working >= 1000 and paced["idle_loops"] > 10 * working
    assert 0 < paced["loop_busy_ns"] < paced["loop_wall_ns"]
    flat = run({"count": 400_000, "batch": 64})  # no pacing: every iteration works
    assert flat["idle_loops"] == 0 and flat["loops"] >= 400_000 // 64
    assert 0 < flat["loop_busy_ns"] <= flat["loop_wall_ns"]


def test_an_idle_spin_block_loop_backs_off_to_a_millisecond() -> None:
    """A spin-block partition (replayer, signal and ingest collectors) spins 1,024 polls, then
    sleeps 50 us, doubling while it stays idle up to 1 ms: over 1 s with three records it
    sleeps about a thousand times, where a fixed 50 us sleep woke some 7,000 times (each
    wake-up CPU taken from the real-time replayer's core), and every record still arrives."""
    plan = plan_of({"a": {"kind": "seq_source", "params": {"count": 3, "batch": 1, "rate": 2.0}},
                    "sink": {"kind": "seq_sink"}},
                   {"up": {"operators": ["a"], "wait": "spin-yield"}, "down": {"operators": ["sink"], "wait": "spin-block"}},
                   [("a.out", "sink.in")], mutex=False)
    parts, ends = linked(plan)
    t0 = time.monotonic()
    assert run_all(parts) == {"up": "ended", "down": "ended"}
    wall = time.monotonic() - t0
    assert parts["down"].operator_report()["sink"]["records"] == 3
    idle = parts["down"].stats()["idle_loops"]
    # at most 1,024 spins after the start and after each record, then one sleep per idle loop
    assert wall > 0.8 and idle < 4 * 1024 + wall / 0.5e-3, (idle, wall)
    for x in [*parts.values(), *ends]:
        x.close()
