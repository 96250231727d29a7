"""The built-in decision engine from Python: a thin, typed face over ``omdp_engine_*`` (engine.h).

Python holds the engine, hands it batches (numpy views of OPRA message records, one C call
per batch), reads counters and snapshots, and publishes pricing limits. No per-message work
happens here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import (GROUP_INFO_DTYPE, GROUP_REF_DTYPE, NBBO_CHANGE_DTYPE, SERIES_INFO_DTYPE,
                                             SERIES_REF_DTYPE)
from decision_engines.signal_record import SIGNAL_DTYPE
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib

MAX_OUT_PER_MSG: int = int(lib.OMDP_ENGINE_MAX_OUT_PER_MSG)
"""Output bytes one message may need (its sampled copy and its signals)."""
COUNTER_NAMES: tuple[str, ...] = tuple(name for name, _ in ffi.typeof("omdp_engine_counters_t").fields)


class EngineError(RuntimeError):
    """An engine call failed; ``code`` is the OMDP_ENGINE_* error."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: {ffi.string(lib.omdp_engine_strerror(code)).decode()} (code {code})")
        self.code = code


@dataclass(frozen=True)
class EngineOutput:
    """What one or more batches produced: sampled message copies and signal records."""

    samples: np.ndarray  # OPRA_MSG_DTYPE
    signals: np.ndarray  # SIGNAL_DTYPE


def priced_changed(now: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Where two snapshots (SERIES_INFO_DTYPE, same length) differ in a field pricing reads
    (strike, NBBO bid and offer prices, put/call, group, twin), in one C pass over both."""
    if now.dtype != SERIES_INFO_DTYPE or old.dtype != SERIES_INFO_DTYPE or len(now) != len(old):
        raise ValueError("priced_changed compares two SERIES_INFO_DTYPE snapshots of one length")
    now, old = np.ascontiguousarray(now), np.ascontiguousarray(old)
    out = np.empty(len(now), np.uint8)
    if len(now):
        lib.omdp_engine_series_priced_changed(ffi.cast("omdp_engine_series_info_t *", ffi.from_buffer(now)),
                                              ffi.cast("omdp_engine_series_info_t *", ffi.from_buffer(old)),
                                              len(now), ffi.from_buffer(out))
    return out.view(bool)


def _check_batch(msgs: np.ndarray) -> None:
    if msgs.dtype != OPRA_MSG_DTYPE or msgs.ndim != 1 or not msgs.flags.c_contiguous:
        raise TypeError("msgs must be a contiguous 1-d array of OPRA_MSG_DTYPE")


def split_output(buf: np.ndarray, length: int) -> EngineOutput:
    """Split ``buf[:length]`` (an engine's output) into copies of samples and signals."""
    view = np.ascontiguousarray(buf[:length], dtype=np.uint8)
    cap = max(1, length // SIGNAL_DTYPE.itemsize)
    sample_offs = np.empty(cap, dtype=np.uint32)
    signal_offs = np.empty(cap, dtype=np.uint32)
    ns = ffi.new("uint32_t *")
    ng = ffi.new("uint32_t *")
    rc = lib.omdp_engine_index_output(
        ffi.from_buffer("uint8_t[]", view), length,
        ffi.from_buffer("uint32_t[]", sample_offs), cap, ns,
        ffi.from_buffer("uint32_t[]", signal_offs), cap, ng,
    )
    if rc < 0:
        raise ValueError(f"malformed engine output: a record header in the first {length} bytes is invalid")
    return EngineOutput(
        samples=_gather(view, sample_offs[: ns[0]], OPRA_MSG_DTYPE),
        signals=_gather(view, signal_offs[: ng[0]], SIGNAL_DTYPE),
    )


def _gather(view: np.ndarray, offsets: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Copy the records of ``dtype`` that start at ``offsets`` in ``view`` into one array."""
    idx = offsets.astype(np.int64)[:, None] + np.arange(dtype.itemsize)
    return np.ascontiguousarray(view[idx]).view(dtype).reshape(len(offsets))


class DecisionEngine:
    """One C decision engine. Create with an :class:`EngineConfig`; ``close()`` frees it."""

    def __init__(self, config: EngineConfig | None = None, prefault: bool = True) -> None:
        """``prefault``: touch all the engine's memory now, so processing never takes a
        first-touch page fault (live use, benchmarks). A replay task passes False: it touches
        only the series its bucket sees, and skips zeroing hundreds of MiB it never uses."""
        self.config = config or EngineConfig()
        cfg = ffi.new("omdp_engine_config_t *")
        cfg.max_series = self.config.max_series
        cfg.max_groups = self.config.max_groups
        cfg.sample_every = self.config.sample_every
        cfg.engine_id = self.config.engine_id
        err = ffi.new("int *")
        ptr = lib.omdp_engine_create(cfg, err)
        if ptr == ffi.NULL:
            raise EngineError("omdp_engine_create", err[0])
        self._ptr = ffi.gc(ptr, lib.omdp_engine_destroy)
        if prefault:
            lib.omdp_engine_prefault(ptr)
        self._out_len = ffi.new("uint32_t *")
        self._nbbo: np.ndarray | None = None  # the NBBO-change log's buffer (log_nbbo)

    @classmethod
    def borrow(cls, ptr: object, config: EngineConfig) -> "DecisionEngine":
        """A face over an engine another owner created (an elastic partition's bucket
        engine, for pricing): retained here, released when this object lets go."""
        lib.omdp_engine_retain(ptr)
        self = cls.__new__(cls)
        self.config = config
        self._ptr = ffi.gc(ptr, lib.omdp_engine_release)
        self._out_len = ffi.new("uint32_t *")
        self._nbbo = None
        return self

    @property
    def handle(self) -> object:
        """The ``omdp_engine_t *`` (cffi pointer), for native callers such as an operator."""
        return self._ptr

    def close(self) -> None:
        """Free the engine now (otherwise when the object is collected)."""
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None

    def process_batch(self, msgs: np.ndarray, out: np.ndarray, out_len: int = 0) -> tuple[int, int]:
        """Process ``msgs`` (not modified), appending output records to ``out`` (uint8) at ``out_len``.

        Returns ``(consumed, new_out_len)``; consumed < len(msgs) means the output is full:
        hand it on and call again with ``msgs[consumed:]``.
        """
        _check_batch(msgs)
        if out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise TypeError("out must be a contiguous uint8 array")
        self._out_len[0] = out_len
        rc = lib.omdp_engine_process_batch(
            self._ptr, ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(msgs, require_writable=False)), len(msgs),
            ffi.from_buffer("uint8_t[]", out), len(out), self._out_len,
        )
        if rc < 0:
            raise EngineError("omdp_engine_process_batch", rc)
        return int(rc), int(self._out_len[0])

    def process_gather(self, msgs: np.ndarray, idx: np.ndarray, out: np.ndarray, out_len: int = 0) -> tuple[int, int]:
        """Process ``msgs[idx]`` in that order, in place (``omdp_engine_process_gather``: what the
        elastic partition's inline worker runs its buckets' messages with). Returns as
        :meth:`process_batch`; raises EngineError when an index is out of range."""
        _check_batch(msgs)
        if out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise TypeError("out must be a contiguous uint8 array")
        idx = np.ascontiguousarray(idx, dtype=np.uint32)
        self._out_len[0] = out_len
        rc = lib.omdp_engine_process_gather(
            self._ptr, ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(msgs, require_writable=False)), len(msgs),
            ffi.cast("const uint32_t *", ffi.from_buffer(idx, require_writable=False)), len(idx),
            ffi.from_buffer("uint8_t[]", out), len(out), self._out_len,
        )
        if rc < 0:
            raise EngineError("omdp_engine_process_gather", rc)
        return int(rc), int(self._out_len[0])

    def process(self, msgs: np.ndarray, batch: int = 0, out_bytes: int = 1 << 20) -> EngineOutput:
        """Process every message of ``msgs`` (in batches of ``batch``, 0 = all at once) and
        return everything it produced. A convenience for tools and tests, one C call per batch."""
        _check_batch(msgs)
        out = np.zeros(max(out_bytes, MAX_OUT_PER_MSG), dtype=np.uint8)
        parts: list[EngineOutput] = []
        step = batch or max(1, len(msgs))
        for start in range(0, len(msgs), step):
            chunk = msgs[start : start + step]
            done = 0
            while done < len(chunk):
                consumed, used = self.process_batch(chunk[done:], out, 0)
                done += consumed
                if used:
                    parts.append(split_output(out, used))
        if not parts:
            return EngineOutput(np.empty(0, OPRA_MSG_DTYPE), np.empty(0, SIGNAL_DTYPE))
        return EngineOutput(
            samples=np.concatenate([p.samples for p in parts]), signals=np.concatenate([p.signals for p in parts])
        )

    def log_nbbo(self, cap: int) -> None:
        """Log every NBBO change from now on (engine_nbbo.h), up to ``cap`` between two
        ``take_nbbo`` calls (a message changes one NBBO at most: ``cap`` = the batch size
        never overflows); 0 stops logging. For offline use on the processing thread."""
        self._nbbo = np.zeros(cap, NBBO_CHANGE_DTYPE) if cap > 0 else None
        buf = ffi.NULL if self._nbbo is None else ffi.cast("omdp_engine_nbbo_t *", ffi.from_buffer(self._nbbo))
        rc = lib.omdp_engine_nbbo_log(self._ptr, buf, max(0, cap))
        if rc < 0:
            raise EngineError("omdp_engine_nbbo_log", rc)

    def take_nbbo(self, copy: bool = True) -> tuple[np.ndarray, int]:
        """The NBBO changes logged since the last take (NBBO_CHANGE_DTYPE) and the changes
        dropped for lack of room since ``log_nbbo``. ``copy=False``: a view of the log
        itself, overwritten by the next engine call (for a caller that copies it on at once)."""
        dropped = ffi.new("uint64_t *")
        n = int(lib.omdp_engine_nbbo_take(self._ptr, dropped))
        if self._nbbo is None:
            return np.zeros(0, NBBO_CHANGE_DTYPE), int(dropped[0])
        return (self._nbbo[:n].copy() if copy else self._nbbo[:n]), int(dropped[0])

    def state_bytes(self) -> int:
        """Bytes of the engine's state: fixed at create by max_series and max_groups (a
        full table refuses new series, counted as table_full, and never grows)."""
        return int(lib.omdp_engine_state_bytes(self._ptr))

    def counters(self) -> dict[str, int]:
        """Every counter of the engine (engine.h ``omdp_engine_counters_t``)."""
        c = ffi.new("omdp_engine_counters_t *")
        lib.omdp_engine_read_counters(self._ptr, c)
        return {name: int(getattr(c, name)) for name in COUNTER_NAMES}

    @property
    def series_count(self) -> int:
        """Series slots in use."""
        return int(lib.omdp_engine_series_count(self._ptr))

    def snapshot(self) -> np.ndarray:
        """Every series with its NBBO now (SERIES_INFO_DTYPE, index = slot)."""
        n = self.series_count
        arr = np.zeros(n, dtype=SERIES_INFO_DTYPE)
        if n:
            got = lib.omdp_engine_snapshot_series(
                self._ptr, 0, ffi.cast("omdp_engine_series_info_t *", ffi.from_buffer(arr)), n
            )
            arr = arr[:got]
        return arr

    def groups(self) -> np.ndarray:
        """Every (underlying, expiry) group (GROUP_INFO_DTYPE, index = group id)."""
        n = int(lib.omdp_engine_group_count(self._ptr))
        arr = np.zeros(n, dtype=GROUP_INFO_DTYPE)
        if n:
            got = lib.omdp_engine_snapshot_groups(
                self._ptr, ffi.cast("omdp_engine_group_info_t *", ffi.from_buffer(arr)), n
            )
            arr = arr[:got]
        return arr

    def find_series(self, root: bytes, expiry: int, strike_px: int, put_call: bytes) -> int | None:
        """Slot of a series, or None. ``root`` as in the record (e.g. b"JPM  ")."""
        slot = lib.omdp_engine_find_series(self._ptr, root, len(root), expiry, strike_px, put_call[0])
        return None if slot == lib.OMDP_ENGINE_NO_SLOT else int(slot)

    def begin_refs(self) -> np.ndarray | None:
        """The back buffer of pricing limits (SERIES_REF_DTYPE, max_series entries, all to be
        written), or None while the hot path has not taken the previous publish."""
        err = ffi.new("int *")
        ptr = lib.omdp_engine_refs_begin(self._ptr, err)
        if ptr == ffi.NULL:
            if err[0] == lib.OMDP_ENGINE_EBUSY:
                return None
            raise EngineError("omdp_engine_refs_begin", err[0])
        n = int(lib.omdp_engine_max_series(self._ptr))
        buf = ffi.buffer(ptr, n * SERIES_REF_DTYPE.itemsize)
        return np.frombuffer(buf, dtype=SERIES_REF_DTYPE)

    def group_refs_back(self) -> np.ndarray:
        """The back buffer of group models (GROUP_REF_DTYPE, max_groups entries, all to be
        written) that goes with the limits of the current :meth:`begin_refs`."""
        ptr = lib.omdp_engine_group_refs_back(self._ptr)
        if ptr == ffi.NULL:
            raise EngineError("omdp_engine_group_refs_back", lib.OMDP_ENGINE_ENOTBEGUN)
        buf = ffi.buffer(ptr, self.config.max_groups * GROUP_REF_DTYPE.itemsize)
        return np.frombuffer(buf, dtype=GROUP_REF_DTYPE)

    def publish_refs(self) -> None:
        """Make the buffer from :meth:`begin_refs` the one the next batch reads."""
        rc = lib.omdp_engine_refs_publish(self._ptr)
        if rc != 0:
            raise EngineError("omdp_engine_refs_publish", rc)
