"""Write a decision engine in Python.

Subclass :class:`CustomEngine`, implement ``process_batch(records)`` - ``records`` is a
read-only numpy view of one batch of OPRA message records (OPRA_MSG_DTYPE), valid during the
call - and call :meth:`CustomEngine.signal` with the positions of the records that deserve a
signal. The base class does what every engine must: stamps ``de_in``/``de_out``, forwards
exactly 1 in ``sample_every`` messages, builds the signal records (signal.h) from the
messages you point at, and - through :class:`CustomEngineOperator` - emits samples and
signals on the same ports as the built-in engine, so it drops into a topology in its place.

Work per batch, not per message: numpy over the whole view. The cost of crossing into Python
once per batch is measured by ``omdp bench engine`` and documented in docs/engines.md.
"""
from __future__ import annotations

import abc
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel

from decision_engines.engine import EngineOutput
from decision_engines.engine_config import DEFAULT_SAMPLE_EVERY
from decision_engines.operator import OPRA_MSG, SIGNAL
from decision_engines.signal_record import SIG_CUSTOM, SIGNAL_DTYPE
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.clock import now_ns
from omdp.operator import Operator, OperatorContext
from omdp.record import RF_SAMPLED, RF_SIGNAL, RT_SIGNAL
from omdp.registry import NoParams, OperatorKind, Port, Registry

_EMPTY_SIGNALS = np.empty(0, dtype=SIGNAL_DTYPE)


class CustomEngine(abc.ABC):
    """Base of a Python decision engine; see the module docstring."""

    def __init__(self, sample_every: int = DEFAULT_SAMPLE_EVERY, engine_id: int = 0) -> None:
        if sample_every < 0:
            raise ValueError(f"sample_every must be >= 0, got {sample_every}")
        self.sample_every = sample_every
        self.engine_id = engine_id
        self.processed = 0
        self.signals_raised = 0
        self._pending: list[np.ndarray] = []
        self._batch: np.ndarray | None = None

    @abc.abstractmethod
    def process_batch(self, records: np.ndarray) -> None:
        """Look at one batch (OPRA_MSG_DTYPE, read-only) and call :meth:`signal` for anomalies."""

    def signal(self, which: np.ndarray, kind: int = SIG_CUSTOM, value: np.ndarray | float = 0.0, *,
               bid_px: np.ndarray | int | None = None, offer_px: np.ndarray | int | None = None,
               ref_lo: np.ndarray | int = 0, ref_hi: np.ndarray | int = 0) -> None:
        """Raise signals for the records of the current batch at ``which`` (indices or a bool
        mask). ``kind`` >= SIG_CUSTOM for your own kinds; ``value`` says how far (in dollars);
        bid/offer default to the quote's own, refs to 0. Each of value, bid_px, offer_px,
        ref_lo, ref_hi is a scalar, an array over the whole batch, or an array over the
        selected records. Only valid inside process_batch."""
        if self._batch is None:
            raise RuntimeError("signal() outside process_batch")
        idx = np.flatnonzero(which) if np.asarray(which).dtype == bool else np.asarray(which, dtype=np.int64)
        if idx.size == 0:
            return
        m = self._batch[idx]
        sig = np.zeros(idx.size, dtype=SIGNAL_DTYPE)
        sig["hdr"]["type"] = RT_SIGNAL
        sig["hdr"]["length"] = SIGNAL_DTYPE.itemsize
        sig["hdr"]["flags"] = RF_SIGNAL
        sig["hdr"]["stamps"] = m["hdr"]["stamps"]
        for name in ("block_seq", "msg_seq", "strike_px", "time", "expiry", "underlying_id", "line",
                     "put_call", "participant", "root_len", "root"):
            sig[name] = m[name]
        pick = _selector(len(self._batch), idx)
        sig["bid_px"] = m["bid_px"] if bid_px is None else pick(bid_px)
        sig["offer_px"] = m["offer_px"] if offer_px is None else pick(offer_px)
        sig["ref_lo"] = pick(ref_lo)
        sig["ref_hi"] = pick(ref_hi)
        sig["value"] = pick(value)
        sig["kind"] = kind
        sig["engine"] = self.engine_id
        self._pending.append(sig)

    def run(self, records: np.ndarray) -> EngineOutput:
        """Process one batch: your process_batch, then sampling and stamps. Returns the sampled
        copies and the signals, ready to emit."""
        if records.dtype != OPRA_MSG_DTYPE:
            raise TypeError(f"records must be OPRA_MSG_DTYPE, got {records.dtype}")
        t_in = now_ns()
        view = records.view()
        view.flags.writeable = False
        self._batch, self._pending = view, []
        try:
            self.process_batch(view)
        finally:
            self._batch = None
        n = len(records)
        signals = np.concatenate(self._pending) if self._pending else _EMPTY_SIGNALS
        samples = np.empty(0, dtype=OPRA_MSG_DTYPE)
        if self.sample_every:
            first = (-self.processed - 1) % self.sample_every  # next index whose count is a multiple of N
            samples = records[first::self.sample_every].copy()
            samples["hdr"]["flags"] |= RF_SAMPLED
        self.processed += n
        self.signals_raised += len(signals)
        if len(signals) or len(samples):
            t_out = now_ns()
            for out in (samples, signals):
                out["hdr"]["stamps"]["de_in"] = t_in
                out["hdr"]["stamps"]["de_out"] = t_out
            if len(signals) and len(samples):
                flagged = np.isin(samples["msg_seq"], signals["msg_seq"]) & np.isin(samples["line"], signals["line"])
                samples["hdr"]["flags"][flagged] |= RF_SIGNAL
        return EngineOutput(samples=samples, signals=signals)


def _selector(n_batch: int, idx: np.ndarray) -> Callable[[object], np.ndarray]:
    def pick(v: object) -> np.ndarray:
        arr = np.asarray(v)
        if arr.ndim == 0 or len(arr) == idx.size and len(arr) != n_batch:
            return arr
        if len(arr) == n_batch:
            return arr[idx]
        raise ValueError(f"signal field of length {len(arr)}: expected a scalar, {n_batch} (the batch) or {idx.size}")
    return pick


class CustomEngineOperator(Operator):
    """Runs a :class:`CustomEngine` as a pipeline operator: input ``quotes``, outputs
    ``samples`` and ``signals``, like the built-in ``decision_engine``."""

    def __init__(self, params: BaseModel, ctx: OperatorContext, engine: CustomEngine) -> None:
        super().__init__(params, ctx)
        self.engine = engine
        self.batches = 0

    def process_batch(self, records: np.ndarray, port: str) -> None:
        """Run the engine over the batch and emit what it produced."""
        out = self.engine.run(records)
        self.batches += 1
        if len(out.samples):
            self.emit("samples", out.samples)
        if len(out.signals):
            self.emit("signals", out.signals)

    def counters(self) -> dict[str, int]:
        """Batches, messages processed, signals raised."""
        return {"batches": self.batches, "processed": self.engine.processed, "signals": self.engine.signals_raised}


def register_custom_engine(registry: Registry, name: str,
                           make: Callable[[BaseModel, OperatorContext], CustomEngine],
                           params: type[BaseModel] = NoParams, doc: str = "") -> None:
    """Register a custom engine under ``name``: ``make(params, ctx)`` builds the engine;
    the operator around it has the built-in engine's ports."""
    for rt in (OPRA_MSG, SIGNAL):
        if rt.name not in registry.record_types:
            registry.add_record_type(rt)

    def factory(p: BaseModel, ctx: OperatorContext) -> CustomEngineOperator:
        return CustomEngineOperator(p, ctx, make(p, ctx))

    registry.add(OperatorKind(name, (Port("quotes", OPRA_MSG.name),),
                              (Port("samples", OPRA_MSG.name), Port("signals", SIGNAL.name)),
                              factory, params, native=False, doc=doc or f"custom engine {name} (Python)"))
