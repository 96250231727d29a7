"""One partition of a plan, built in this process around the C loop (partition.h).

:class:`Partition` makes every operator of the partition (native ones initialised in C,
Python ones bound through ``omdp.operator_bridge``), wires the fused edges, and maps the
routes of its channels onto operator ports. The caller attaches the channel ends (C
vtables from ``omdp.runtime.channels``) and calls :meth:`Partition.run` once: the whole
loop runs in C, with the GIL released, until every source is done and every input ended.
"""
from __future__ import annotations

import logging
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorBase, OperatorContext
from omdp.operator_bridge import PyOperatorBinding
from omdp.plan import Plan, PlanPartition
from omdp.registry import Registry

log = logging.getLogger("omdp.partition")

WAIT_CODES = {"spin": lib.OMDP_WAIT_SPIN, "spin-yield": lib.OMDP_WAIT_SPIN_YIELD, "spin-block": lib.OMDP_WAIT_SPIN_BLOCK}
STATE_NAMES = {
    lib.OMDP_PSTATE_SETUP: "setup", lib.OMDP_PSTATE_RUNNING: "running", lib.OMDP_PSTATE_ENDED: "ended",
    lib.OMDP_PSTATE_STOPPED: "stopped", lib.OMDP_PSTATE_FAILED: "failed",
}
_MAX_COUNTERS = 64


class PartitionError(RuntimeError):
    """Building or running a partition failed; the message names the partition and cause."""


def strerror(code: int) -> str:
    """Name of an OMDP_ERR_* code."""
    return ffi.string(lib.omdp_strerror(code)).decode()


class Partition:
    """A plan's partition, ready to run in this process."""

    def __init__(self, plan: Plan, name: str, registry: Registry, run_dir: Path | None = None) -> None:
        self.plan = plan
        self.spec: PlanPartition = plan.partition(name)
        self.name = name
        self.loop_cpu_ns = 0
        self.loop_wall_ns = 0
        self.loop_preempted = 0
        self.loop_policy = "other"           # "fifo" once a realtime partition's loop got it
        self.loop_realtime_refused: str | None = None
        self._keep: list[Any] = []
        self.bindings: dict[str, PyOperatorBinding] = {}
        self.natives: dict[str, NativeOperator] = {}
        self.index = {op: i for i, op in enumerate(self.spec.operators)}
        self.input_index = {cid: k for k, cid in enumerate(self.spec.inputs)}
        self.output_index = {cid: k for k, cid in enumerate(self.spec.outputs)}
        self.ptr = lib.omdp_partition_new(len(self.spec.operators), len(self.spec.inputs), len(self.spec.outputs),
                                          WAIT_CODES[self.spec.wait])
        if self.ptr == ffi.NULL:
            raise PartitionError(f"partition {name}: cannot allocate ({len(self.spec.operators)} operators)")
        try:
            self._make_operators(registry, run_dir)
            self._wire()
            self._peer_gone_hooks()
            # the run goes on past a death: a peer that left is no failure, the supervisor's word follows
            self._check(lib.omdp_partition_await_word(self.ptr, int(plan.run.on_death == "continue")), "await_word")
        except BaseException:
            self.close()
            raise

    # ---- setup ------------------------------------------------------------------------

    def _check(self, rc: int, what: str) -> None:
        if rc < 0:
            raise PartitionError(f"partition {self.name}: {what}: {ffi.string(lib.omdp_partition_error(self.ptr)).decode()}")

    def _make_operators(self, registry: Registry, run_dir: Path | None) -> None:
        for i, name in enumerate(self.spec.operators):
            op = self.plan.operators[name]
            kind = registry.get(op.kind)
            params = kind.params.model_validate(op.params)
            ctx = OperatorContext(name=name, kind=op.kind, replica=op.replica, replicas=op.replicas,
                                  inputs=tuple(op.inputs), outputs=tuple(op.outputs), partition=self.name, run_dir=run_dir)
            made = kind.factory(params, ctx)
            if isinstance(made, NativeOperator):
                vt = made.vtable
                if (vt.n_inputs, vt.n_outputs) != (len(op.inputs), len(op.outputs)):
                    raise PartitionError(f"{name}: C vtable of {op.kind} has {vt.n_inputs} inputs/{vt.n_outputs} outputs, "
                                         f"the registry declares {len(op.inputs)}/{len(op.outputs)}")
                pbuf, psize = made.params_bytes()
                err = ffi.new("char[]", 256)
                cname = ffi.new("char[]", name.encode())
                init = ffi.new("omdp_op_init_t *", {"params": pbuf, "params_size": psize, "replica": op.replica,
                                                    "replicas": op.replicas, "name": cname, "err": err, "err_size": 256})
                self._keep += [made, cname]
                self.natives[name] = made
                self._check(lib.omdp_partition_init_op(self.ptr, i, vt, init), f"init {name}")
            elif isinstance(made, OperatorBase):
                dtypes = [registry.record_types[p.record_type].dtype or np.dtype(np.uint8) for p in kind.inputs]
                b = PyOperatorBinding(made, dtypes)
                self.bindings[name] = b
                self._check(lib.omdp_partition_attach_op(self.ptr, i, b.vtable, b.handle), f"attach {name}")
            else:
                raise PartitionError(f"{name}: factory of {op.kind} returned {type(made).__name__}")
        order = ffi.new("uint32_t[]", list(range(len(self.spec.operators))))
        self._check(lib.omdp_partition_set_order(self.ptr, order, len(self.spec.operators)), "order")

    def _port(self, endpoint: str, output: bool) -> tuple[int, int]:
        inst, _, port = endpoint.rpartition(".")
        op = self.plan.operators[inst]
        return self.index[inst], (op.outputs if output else op.inputs).index(port)

    def _wire(self) -> None:
        for f in self.spec.fused:
            (a, ap), (b, bp) = self._port(f.source, True), self._port(f.target, False)
            self._check(lib.omdp_partition_connect(self.ptr, a, ap, b, bp), f"fuse {f.source} -> {f.target}")
        for cid in self.spec.outputs:
            ch = self.plan.channels[cid]
            for r in ch.routes:
                a, ap = self._port(r.source, True)
                self._check(lib.omdp_partition_connect_out(self.ptr, a, ap, self.output_index[cid], r.route),
                            f"route {r.source} into {ch.name}")
        for cid in self.spec.inputs:
            ch = self.plan.channels[cid]
            for r in ch.routes:
                for t in r.targets:
                    b, bp = self._port(t, False)
                    self._check(lib.omdp_partition_connect_in(self.ptr, self.input_index[cid], r.route, b, bp),
                                f"route {ch.name} r{r.route} to {t}")

    def _peer_gone_hooks(self) -> None:
        """Native operators that want to hear of an upstream partition's death (a market
        leader: which sources died) get a hook on each input from such a partition."""
        for cid in self.spec.inputs:
            upstream = self.plan.partition(self.plan.channels[cid].upstream)
            gone = [(self.plan.operators[n].kind, self.plan.operators[n].replica) for n in upstream.operators]
            for name, made in self.natives.items():
                hook = made.peer_gone_hook(gone)
                if hook is not None:
                    self._check(lib.omdp_partition_on_peer_gone(self.ptr, self.input_index[cid], self.index[name],
                                                                hook[0], hook[1]),
                                f"peer-gone hook of {name} on {self.plan.channels[cid].name}")

    def set_input(self, channel_id: int, ops: Any, ctx: Any) -> None:
        """Attach the receiving end of channel ``channel_id`` (C ``omdp_chan_in_ops_t *`` and context)."""
        self._keep += [ops, ctx]
        self._check(lib.omdp_partition_set_input(self.ptr, self.input_index[channel_id], ops, ctx),
                    f"input {self.plan.channels[channel_id].name}")

    def set_output(self, channel_id: int, ops: Any, ctx: Any) -> None:
        """Attach the sending end of channel ``channel_id``."""
        spec = self.plan.channels[channel_id].spec
        self._keep += [ops, ctx]
        self._check(lib.omdp_partition_set_output(self.ptr, self.output_index[channel_id], ops, ctx, spec.max_message,
                                                  int(spec.on_full == "drop")),
                    f"output {self.plan.channels[channel_id].name}")

    # ---- running ----------------------------------------------------------------------

    def run(self) -> str:
        """Run the loop to its end (GIL released). Returns "ended" or "stopped"; raises
        PartitionError on failure, chained to a Python operator's exception if one raised.
        The loop runs in the calling thread: its CPU time (thread CPU clock), wall time and
        the times the kernel took its CPU away (involuntary context switches: another thread
        ran on its core) are kept for ``stats`` (loop_cpu_ns, loop_wall_ns, loop_preempted)."""
        cpu0, wall0 = time.thread_time_ns(), time.monotonic_ns()
        preempted0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
        try:
            rc = lib.omdp_partition_run(self.ptr)
        finally:
            self.loop_cpu_ns += time.thread_time_ns() - cpu0
            self.loop_wall_ns += time.monotonic_ns() - wall0
            self.loop_preempted += resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw - preempted0
        if rc == lib.OMDP_OK:
            return "ended"
        if rc == lib.OMDP_ERR_STOPPED:
            self._stopped_early()
            return "stopped"
        cause = next((b.error for b in self.bindings.values() if b.error is not None), None)
        culprit = next((n for n, b in self.bindings.items() if b.error is not None), None)
        msg = ffi.string(lib.omdp_partition_error(self.ptr)).decode() or strerror(rc)
        if culprit:
            msg += f" ({culprit} raised {type(cause).__name__}: {cause})"
        raise PartitionError(f"partition {self.name} failed: {msg}") from cause

    def _stopped_early(self) -> None:
        """The loop stopped before every input ended: each Python operator that had no
        ``end_of_stream`` records what it has (``OperatorBase.stopped_early``); one that
        raises is logged, the others still run."""
        for name, b in self.bindings.items():
            if b.ended:
                continue
            try:
                b.op.stopped_early()
            except Exception:  # noqa: BLE001 - the other operators' records matter more
                log.exception("%s: recording what it collected before the stop failed", name)

    def request_stop(self, hard: bool = False) -> None:
        """Any thread: stop the sources (queues then drain), or with ``hard`` leave now."""
        lib.omdp_partition_request_stop(self.ptr, lib.OMDP_STOP_NOW if hard else lib.OMDP_STOP_SOURCES)

    def peers_gone(self, inputs: list[int], outputs: list[int]) -> None:
        """Any thread: the partitions at the other end of these channels (plan channel ids)
        died. The loop drains what each input's sender had committed and then counts the
        input ended; what goes to such an output is dropped and counted (docs/operators.md
        "When a partition dies")."""
        for is_out, ids, index in ((0, inputs, self.input_index), (1, outputs, self.output_index)):
            for cid in ids:
                if cid in index:
                    lib.omdp_partition_peer_gone(self.ptr, is_out, index[cid])

    def stats(self) -> dict[str, Any]:
        """Loop counters (any thread)."""
        s = ffi.new("omdp_partition_stats_t *")
        lib.omdp_partition_stats(self.ptr, s)
        return {"state": STATE_NAMES.get(s.state, str(s.state)), "loops": s.loops, "idle_loops": s.idle_loops,
                "frames_in": s.frames_in, "frames_out": s.frames_out, "discarded": s.discarded,
                "sources_done": s.sources_done, "inputs_ended": s.inputs_ended, "last_progress_ns": s.last_progress_ns,
                "loop_busy_ns": s.busy_ns,
                "loop_cpu_ns": self.loop_cpu_ns, "loop_wall_ns": self.loop_wall_ns, "loop_preempted": self.loop_preempted,
                "loop_policy": self.loop_policy, "loop_realtime_refused": self.loop_realtime_refused}

    def channel_stats(self) -> dict[str, dict[str, int]]:
        """Per channel end: frames, bytes, waits, drops (any thread)."""
        out = {}
        c = ffi.new("omdp_chan_stats_t *")
        for is_out, ids in ((0, self.spec.inputs), (1, self.spec.outputs)):
            for k, cid in enumerate(ids):
                lib.omdp_partition_chan_stats(self.ptr, is_out, k, c)
                out[self.plan.channels[cid].name] = {"frames": c.frames, "bytes": c.bytes, "full_waits": c.full_waits,
                                                     "drops": c.drops, "too_big": c.too_big, "bad_frames": c.bad_frames,
                                                     "ended": c.ended, "peer_gone": c.peer_gone}
        return out

    def op_stats(self) -> dict[str, dict[str, int]]:
        """Per operator: batches and bytes in and out (any thread: the loop keeps them atomic)."""
        out = {}
        st = ffi.new("omdp_op_stats_t *")
        for i, name in enumerate(self.spec.operators):
            lib.omdp_partition_op_stats(self.ptr, i, st)
            out[name] = {"batches_in": st.batches_in, "bytes_in": st.bytes_in, "batches_out": st.batches_out,
                         "bytes_out": st.bytes_out}
        return out

    def operator_report(self) -> dict[str, dict[str, int]]:
        """Per operator: batches and bytes in/out, and the operator's own counters. Call
        from the loop thread or after ``run`` returned (operators' state is not atomic)."""
        report = self.op_stats()
        cs = ffi.new("omdp_counter_t[]", _MAX_COUNTERS)
        for i, name in enumerate(self.spec.operators):
            entry = report[name]
            if name in self.bindings:
                entry.update(self.bindings[name].counters())
            else:
                n = min(lib.omdp_partition_op_counters(self.ptr, i, cs, _MAX_COUNTERS), _MAX_COUNTERS)
                entry.update({ffi.string(cs[k].name).decode(): int(cs[k].value) for k in range(n)})
                if name in self.natives:
                    entry.update(self.natives[name].counters())
        return report

    def close(self) -> None:
        """Close every operator and free the partition (after run returned)."""
        if self.ptr != ffi.NULL:
            lib.omdp_partition_free(self.ptr)
            self.ptr = ffi.NULL
        for b in self.bindings.values():
            b.op.close()
        self.bindings.clear()
        for made in self.natives.values():
            made.close()
        self.natives.clear()
