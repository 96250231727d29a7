"""A snapshot of an engine's series kept up to date by reading only what moved.

A full snapshot copies every series (64 bytes each) and pricing then compares it, field by
field, with the previous one: at 100k series that is milliseconds a refresh even when a few
thousand quotes changed. The mirror keeps the last snapshot with each series' seqlock
sequence and twin; an update (``omdp_engine_snapshot_update``) compares them with the
engine's dense copies (8 bytes a series, read in order) to find those that moved, reads
those again, and lists the ones whose priced fields changed, so a refresh costs what moved.
"""
from __future__ import annotations

import numpy as np

from decision_engines.engine import DecisionEngine
from decision_engines.engine_records import SERIES_INFO_DTYPE
from omdp.native import ffi, lib


class SeriesMirror:
    """The series of one engine as of the last :meth:`update` (``series``: SERIES_INFO_DTYPE,
    index = slot, the same values a full ``DecisionEngine.snapshot()`` would give then)."""

    def __init__(self, capacity: int = 1024) -> None:
        self._infos = np.zeros(capacity, dtype=SERIES_INFO_DTYPE)
        self._seqs = np.zeros(capacity, dtype=np.uint32)
        self._twins = np.zeros(capacity, dtype=np.uint32)
        self._changed = np.zeros(capacity, dtype=np.uint32)
        self._n = ffi.new("uint32_t *", 0)

    @property
    def series(self) -> np.ndarray:
        """The mirrored snapshot (a view: the next update writes into it)."""
        return self._infos[: self._n[0]]

    def update(self, engine: DecisionEngine) -> np.ndarray:
        """Bring the mirror up to the engine's series now; returns the slots (int64,
        ascending) that are new or differ in a field pricing reads (strike, NBBO bid and
        offer prices, put/call, group, twin) since the last update."""
        need = engine.series_count
        if need > len(self._infos):
            self._grow(max(need, 2 * len(self._infos)))
        got = lib.omdp_engine_snapshot_update(
            engine.handle, ffi.cast("omdp_engine_series_info_t *", ffi.from_buffer(self._infos)),
            ffi.from_buffer("uint32_t[]", self._seqs), ffi.from_buffer("uint32_t[]", self._twins),
            len(self._infos), self._n, ffi.from_buffer("uint32_t[]", self._changed))
        return self._changed[:got].astype(np.int64)

    def _grow(self, capacity: int) -> None:
        n = self._n[0]
        for name in ("_infos", "_seqs", "_twins"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)
        self._changed = np.zeros(capacity, dtype=np.uint32)
