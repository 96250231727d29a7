"""The run's shared-memory stats segment (``omdp/stats.h``): ``StatsWriter`` and ``StatsReader``.

Writers (the collectors, every partition) publish copies of their figures; readers (the
dashboard, ``omdp`` commands, tests) take consistent snapshots from another process
without blocking a writer. Every read and write is one C call; the layout and the seqlock
protocol are documented in ``native/include/omdp/stats.h``. Readers return plain dicts,
lists and ``LatencyHistogram`` objects; times are int64 ns, latencies in summaries are us.

Name: ``omdp-<run_id>-stats`` in /dev/shm, mode 0600. The owner (``StatsWriter.create``)
unlinks it on ``close()``, at interpreter exit, or when garbage collected; after a crash
``omdp.metrics.stats_cleanup.clean_stats_segments`` removes it.
"""
from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omdp.clock import now_ns
from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_summary import PERCENTILES, HopSummary, min_samples, percentile_field, summarize_hops
from omdp.native import ffi, lib

RING_SECONDS = int(lib.OMDP_STATS_RING_SECONDS)
"""Per-second history kept in the segment: the longest latency window a reader can ask for."""
MAX_LINES = int(lib.OMDP_STATS_MAX_LINES)
MAX_OPERATORS = int(lib.OMDP_STATS_MAX_OPERATORS)
OP_COUNTERS = int(lib.OMDP_STATS_OP_COUNTERS)
SIGNALS = int(lib.OMDP_STATS_SIGNALS)
KNOBS_MAX_BYTES = int(lib.OMDP_STATS_KNOBS_LEN) - 1

LINE_COUNTER_NAMES: tuple[str, ...] = (
    "packets_received",
    "messages_received",
    "messages_missed",
    "packets_duplicate",
    "decode_errors",
)
"""Per-line ingest counters, cumulative since the run started (the ingest.parquet columns)."""

RUN_STATES: tuple[str, ...] = ("unset", "starting", "running", "stopping", "done", "failed")
_RUN_FIELDS = {
    "target_pps": "OMDP_RUN_TARGET_PPS", "achieved_pps": "OMDP_RUN_ACHIEVED_PPS", "sample_every": "OMDP_RUN_SAMPLE_EVERY",
    "state": "OMDP_RUN_STATE", "topology": "OMDP_RUN_TOPOLOGY", "config": "OMDP_RUN_CONFIG", "run_dir": "OMDP_RUN_DIR",
    "knobs": "OMDP_RUN_KNOBS",
}
_ENTRY_STATES = {int(lib.OMDP_STATS_LIVE): "live", int(lib.OMDP_STATS_CLOSED): "closed"}

_ERRORS = {
    int(lib.OMDP_STATS_ENOENT): "no such segment or entry",
    int(lib.OMDP_STATS_EAGAIN): "writers kept updating during the read",
    int(lib.OMDP_STATS_EBUSY): "a block stayed mid-update (a writer is stuck or died while writing)",
    int(lib.OMDP_STATS_EEXIST): "already exists",
    int(lib.OMDP_STATS_EINVAL): "invalid argument",
    int(lib.OMDP_STATS_EROFS): "segment opened read-only",
    int(lib.OMDP_STATS_EFULL): "table full",
    int(lib.OMDP_STATS_ELAYOUT): "not an omdp stats segment of this version and geometry",
}


class StatsSegmentError(RuntimeError):
    """A stats segment call failed: which run, what was attempted, and the C error."""

    def __init__(self, run_id: str, action: str, code: int) -> None:
        reason = _ERRORS.get(code) or (f"errno {-code}" if code < 0 else f"code {code}")
        super().__init__(f"stats segment of run {run_id!r}: {action}: {reason}")
        self.run_id = run_id
        self.action = action
        self.code = code


def stats_segment_name(run_id: str) -> str:
    """``omdp-<run_id>-stats``: the segment's file name under /dev/shm."""
    buf = ffi.new("char[]", int(lib.OMDP_STATS_SHM_NAME_LEN))
    rc = lib.omdp_stats_name(run_id.encode(), buf, len(buf))
    if rc != 0:
        raise ValueError(f"invalid run id {run_id!r}: 1..63 characters of [A-Za-z0-9._-], not starting with '.'")
    return ffi.string(buf).decode()


def _check(rc: int, run_id: str, action: str) -> int:
    if rc < 0:
        raise StatsSegmentError(run_id, action, rc)
    return rc


def _text(field: Any) -> str:
    return ffi.string(field).decode(errors="replace")


def _put_text(field: Any, value: str, what: str) -> None:
    raw = value.encode()
    if len(raw) >= len(field):
        raise ValueError(f"{what} is {len(raw)} bytes; at most {len(field) - 1} fit")
    ffi.memmove(field, raw + b"\0" * (len(field) - len(raw)), len(field))


class _Handle:
    """An open ``omdp_stats_t *``, closed once (and unlinked by an owner)."""

    def __init__(self, run_id: str, ptr: Any) -> None:
        self.run_id = run_id
        self.ptr = ptr
        self._finalizer = weakref.finalize(self, _close_handle, ptr)

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive


def _close_handle(ptr: Any) -> None:
    lib.omdp_stats_close(ptr, now_ns())


def _open(run_id: str, create: bool, writable: bool) -> _Handle:
    stats_segment_name(run_id)  # validates the run id with a clear message
    out = ffi.new("omdp_stats_t **")
    if create:
        _check(lib.omdp_stats_create(run_id.encode(), now_ns(), out), run_id, "create")
    else:
        _check(lib.omdp_stats_open(run_id.encode(), 1 if writable else 0, out), run_id, "open")
    return _Handle(run_id, out[0])


class OperatorCounters:
    """A registered operator or channel entry: publish its counters as one update."""

    def __init__(self, writer: StatsWriter, index: int, name: str, counter_names: tuple[str, ...]) -> None:
        self._writer = writer
        self.index = index
        self.name = name
        self.counter_names = counter_names
        self._values = np.zeros(len(counter_names), dtype=np.int64)

    def publish(self, values: Sequence[int] | np.ndarray | Mapping[str, int], ts_ns: int | None = None) -> None:
        """Publish every counter: a sequence in registration order, or a name -> value mapping
        (names left out keep their last value)."""
        if isinstance(values, Mapping):
            unknown = set(values) - set(self.counter_names)
            if unknown:
                raise KeyError(f"operator {self.name!r} has no counters {sorted(unknown)}")
            for k, v in values.items():
                self._values[self.counter_names.index(k)] = v
        else:
            arr = np.asarray(values, dtype=np.int64)
            if arr.shape != self._values.shape:
                raise ValueError(f"operator {self.name!r} has {len(self.counter_names)} counters, got {arr.shape}")
            self._values[:] = arr
        rc = lib.omdp_stats_op_publish(
            self._writer.c_handle, self.index, ffi.from_buffer("int64_t[]", self._values), len(self._values),
            ts_ns or now_ns(),
        )
        _check(rc, self._writer.run_id, f"publish counters of {self.name!r}")

    def close(self) -> None:
        """Mark the entry closed; its last figures stay readable."""
        _check(lib.omdp_stats_op_close(self._writer.c_handle, self.index), self._writer.run_id, f"close {self.name!r}")


class StatsWriter:
    """Write access to a run's stats segment: run info, latency, lines, operators, signals.

    ``create`` makes the segment and owns it (closing unlinks it); ``attach`` opens an
    existing one so another partition can register and publish its own entries. Each entry
    has one writer; C code of the same process can publish through ``c_handle``.
    """

    def __init__(self, handle: _Handle, owner: bool) -> None:
        self._handle = handle
        self.owner = owner

    @classmethod
    def create(cls, run_id: str) -> StatsWriter:
        """Create run_id's segment (fails if it exists) and own it."""
        return cls(_open(run_id, create=True, writable=True), owner=True)

    @classmethod
    def attach(cls, run_id: str) -> StatsWriter:
        """Open run_id's existing segment for writing, without owning it."""
        return cls(_open(run_id, create=False, writable=True), owner=False)

    @property
    def run_id(self) -> str:
        return self._handle.run_id

    @property
    def name(self) -> str:
        """The /dev/shm file name."""
        return stats_segment_name(self.run_id)

    @property
    def c_handle(self) -> Any:
        """The ``omdp_stats_t *`` for C writers of this process (valid until ``close``)."""
        if self._handle.closed:
            raise StatsSegmentError(self.run_id, "use after close", int(lib.OMDP_STATS_EINVAL))
        return self._handle.ptr

    def heartbeat(self, ts_ns: int | None = None) -> None:
        """Record a sign of life (the collector's publications also do)."""
        _check(lib.omdp_stats_heartbeat(self.c_handle, ts_ns or now_ns()), self.run_id, "heartbeat")

    def set_run_info(self, **fields: Any) -> None:
        """Update run info fields as one update: state (one of ``RUN_STATES``), topology,
        config, run_dir, knobs (a dict or JSON text), target_pps, achieved_pps, sample_every.
        Fields not given keep what any process last wrote."""
        unknown = set(fields) - set(_RUN_FIELDS)
        if unknown:
            raise KeyError(f"unknown run info fields {sorted(unknown)}; known: {sorted(_RUN_FIELDS)}")
        info = ffi.new("omdp_stats_run_info_t *")
        mask = 0
        for name, value in fields.items():
            mask |= int(getattr(lib, _RUN_FIELDS[name]))
            if name == "state":
                if value not in RUN_STATES:
                    raise ValueError(f"run state must be one of {RUN_STATES}, got {value!r}")
                info.state = RUN_STATES.index(value)
            elif name == "knobs":
                knobs = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
                raw = knobs.encode()
                if len(raw) > KNOBS_MAX_BYTES:
                    raise ValueError(f"knobs JSON is {len(raw)} bytes; at most {KNOBS_MAX_BYTES} fit in the stats segment")
                info.knobs_len = len(raw)
                _put_text(info.knobs_json, knobs, "knobs")
            elif name in ("topology", "config", "run_dir"):
                _put_text(getattr(info, name), str(value), name)
            elif name == "sample_every":
                info.sample_every = int(value)
            else:
                setattr(info, name, float(value))
        info.updated_ns = now_ns()
        _check(lib.omdp_stats_run_info_update(self.c_handle, info, mask), self.run_id, "write run info")

    def register_operator(self, name: str, kind: str, counters: Sequence[str], cpu: int = -1) -> OperatorCounters:
        """Register an operator or channel with up to 8 named int64 counters."""
        names = tuple(counters)
        if not 1 <= len(names) <= OP_COUNTERS or any("," in n or not n for n in names):
            raise ValueError(f"operator {name!r}: 1..{OP_COUNTERS} non-empty counter names without commas, got {names}")
        idx = lib.omdp_stats_op_register(self.c_handle, name.encode(), kind.encode(), cpu, ",".join(names).encode())
        _check(idx, self.run_id, f"register operator {name!r}")
        return OperatorCounters(self, idx, name, names)

    def register_line(self, line: int) -> int:
        """The entry index of a feed line (claimed on first use)."""
        return _check(lib.omdp_stats_line_register(self.c_handle, line), self.run_id, f"register line {line}")

    def publish_line(self, line: int, ts_ns: int | None = None, **counts: int) -> None:
        """Publish one line's cumulative counters (``LINE_COUNTER_NAMES``; missing names are 0)."""
        unknown = set(counts) - set(LINE_COUNTER_NAMES)
        if unknown:
            raise KeyError(f"unknown line counters {sorted(unknown)}; known: {LINE_COUNTER_NAMES}")
        c = ffi.new("omdp_line_counts_t *")
        for k in LINE_COUNTER_NAMES:
            setattr(c, k, int(counts.get(k, 0)))
        idx = self.register_line(line)
        _check(lib.omdp_stats_line_publish(self.c_handle, idx, c, ts_ns or now_ns()), self.run_id, f"publish line {line}")

    def lines(self) -> list[dict[str, Any]]:
        """Every line's latest counters as published by any process (as ``StatsReader.ingest``)."""
        return _read_lines(self.c_handle, self.run_id)

    def push_signal(self, kind: str, series: str, value: float, engine: int = 0, ts_ns: int | None = None) -> None:
        """Append one signal to the ring of latest signals (text fields are cut to fit)."""
        sig = ffi.new("omdp_stats_signal_t *")
        sig.ts_ns = ts_ns or now_ns()
        sig.value = float(value)
        sig.engine = engine
        _put_text(sig.kind, kind.encode()[: len(sig.kind) - 1].decode(errors="ignore"), "kind")
        _put_text(sig.series, series.encode()[: len(sig.series) - 1].decode(errors="ignore"), "series")
        _check(lib.omdp_stats_signals_push(self.c_handle, sig, 1), self.run_id, "push signal")

    def publish_latency_total(self, hists: Mapping[str, LatencyHistogram], missing: Mapping[str, int] | None = None,
                              ts_ns: int | None = None) -> None:
        """Publish cumulative per-hop histograms (the latency collector does this from C)."""
        arr, miss = _hop_array(hists), ffi.new("uint64_t[]", [int((missing or {}).get(k, 0)) for k in HOP_KEYS])
        _check(lib.omdp_stats_latency_publish_total(self.c_handle, arr, miss, ts_ns or now_ns()), self.run_id,
               "publish latency")

    def publish_latency_second(self, second: int, hists: Mapping[str, LatencyHistogram], ts_ns: int | None = None) -> None:
        """Publish the per-hop histograms of one epoch second into the ring."""
        _check(lib.omdp_stats_latency_publish_second(self.c_handle, second, _hop_array(hists), ts_ns or now_ns()),
               self.run_id, f"publish second {second}")

    def close(self) -> None:
        """Unmap; the owner marks the run closed and unlinks the name."""
        self._handle.close()

    def __enter__(self) -> StatsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_lines(ptr: Any, run_id: str) -> list[dict[str, Any]]:
    out = ffi.new("omdp_stats_line_t[]", MAX_LINES)
    n = _check(lib.omdp_stats_lines_read(ptr, out, MAX_LINES), run_id, "read lines")
    rows = []
    for e in out[0:n]:
        row = {"line": int(e.line), "state": _ENTRY_STATES.get(int(e.state), "?"), "pid": int(e.pid),
               "updated_ns": int(e.updated_ns)}
        row.update({k: int(getattr(e.counts, k)) for k in LINE_COUNTER_NAMES})
        rows.append(row)
    return sorted(rows, key=lambda r: r["line"])


def _hop_array(hists: Mapping[str, LatencyHistogram]) -> Any:
    arr = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
    for i, k in enumerate(HOP_KEYS):
        if k in hists:
            ffi.memmove(arr + i, hists[k].c_pointer, ffi.sizeof("omdp_hist_t"))
        else:
            lib.omdp_hist_init(arr + i)
    return arr


def _hops_of(arr: Any) -> dict[str, LatencyHistogram]:
    return {k: LatencyHistogram(arr + i) for i, k in enumerate(HOP_KEYS)}


class StatsReader:
    """Read-only snapshots of a run's stats segment, from any process."""

    def __init__(self, run_id: str) -> None:
        """Open run_id's segment read-only; ``StatsSegmentError`` when absent or foreign."""
        self._handle = _open(run_id, create=False, writable=False)

    @property
    def run_id(self) -> str:
        return self._handle.run_id

    @property
    def _ptr(self) -> Any:
        if self._handle.closed:
            raise StatsSegmentError(self.run_id, "use after close", int(lib.OMDP_STATS_EINVAL))
        return self._handle.ptr

    def info(self) -> dict[str, Any]:
        """Header: run_id, pid, start_ns, heartbeat_ns, closed_ns, version, total_size."""
        out = ffi.new("omdp_stats_info_t *")
        _check(lib.omdp_stats_read_info(self._ptr, out), self.run_id, "read header")
        return {
            "run_id": _text(out.run_id), "pid": int(out.pid), "start_ns": int(out.start_ns),
            "heartbeat_ns": int(out.heartbeat_ns), "closed_ns": int(out.closed_ns),
            "version": int(out.version), "total_size": int(out.total_size),
        }

    def run_info(self) -> dict[str, Any]:
        """Run info as the owner last wrote it (knobs parsed from JSON)."""
        out = ffi.new("omdp_stats_run_info_t *")
        _check(lib.omdp_stats_run_info_read(self._ptr, out), self.run_id, "read run info")
        knobs_text = ffi.unpack(out.knobs_json, min(int(out.knobs_len), KNOBS_MAX_BYTES)).decode(errors="replace")
        return {
            "state": RUN_STATES[out.state] if out.state < len(RUN_STATES) else "unset",
            "topology": _text(out.topology), "config": _text(out.config), "run_dir": _text(out.run_dir),
            "knobs": json.loads(knobs_text) if knobs_text else {},
            "target_pps": float(out.target_pps), "achieved_pps": float(out.achieved_pps),
            "sample_every": int(out.sample_every), "updated_ns": int(out.updated_ns),
        }

    def latency_histograms(self, window_s: int | None = 10, ts_ns: int | None = None) -> dict[str, LatencyHistogram]:
        """Per-hop histograms merged over the last window_s seconds up to ts_ns (default: now),
        or since the run started when window_s is None."""
        arr = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
        if window_s is None:
            _check(lib.omdp_stats_latency_read_total(self._ptr, arr, ffi.NULL, ffi.NULL), self.run_id, "read latency")
        else:
            if not 1 <= window_s <= RING_SECONDS:
                raise ValueError(f"latency window must be 1..{RING_SECONDS} s, got {window_s}")
            _check(lib.omdp_stats_latency_read_window(self._ptr, ts_ns or now_ns(), window_s, arr), self.run_id,
                   f"read {window_s} s latency window")
        return _hops_of(arr)

    def latency(self, window_s: int | None = 10, ts_ns: int | None = None) -> dict[str, HopSummary]:
        """Per hop: count, mean, p50, p90, p99, p99.9, p99.99, max in us (None = n/a)."""
        return summarize_hops(self.latency_histograms(window_s, ts_ns))

    def missing_stamps(self) -> dict[str, int]:
        """Per hop, samples that lacked a stamp the hop needs (e.g. intended = 0)."""
        arr = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
        miss = ffi.new("uint64_t[]", len(HOP_KEYS))
        _check(lib.omdp_stats_latency_read_total(self._ptr, arr, miss, ffi.NULL), self.run_id, "read latency")
        return {k: int(miss[i]) for i, k in enumerate(HOP_KEYS)}

    def latency_history(self, seconds: int = 60, ts_ns: int | None = None) -> list[dict[str, Any]]:
        """One entry per second, oldest first, up to ts_ns: {"second": s, "hops": {hop: summary}}
        with the n/a rule applied per second."""
        if not 1 <= seconds <= RING_SECONDS:
            raise ValueError(f"history must be 1..{RING_SECONDS} s, got {seconds}")
        qs = np.array([q for _, q in PERCENTILES], dtype=np.float64)
        stride = 4 + len(qs)
        out = np.empty(seconds * len(HOP_KEYS) * stride, dtype=np.int64)
        _check(lib.omdp_stats_latency_history(self._ptr, ts_ns or now_ns(), seconds, ffi.from_buffer("double[]", qs),
                                              len(qs), ffi.from_buffer("int64_t[]", out)), self.run_id, "read history")
        rows = out.reshape(seconds, len(HOP_KEYS), stride).tolist()
        fields = [(percentile_field(name), min_samples(p)) for name, p in PERCENTILES]
        history = []
        for per_second in rows:
            hops = {}
            for key, (_, count, total, mx, *qv) in zip(HOP_KEYS, per_second):
                summary: dict[str, Any] = {"count": count, "mean_us": total / count / 1e3 if count else None}
                for (field, need), v in zip(fields, qv):
                    summary[field] = v / 1e3 if count >= need and v >= 0 else None
                summary["max_us"] = mx / 1e3 if count else None
                hops[key] = summary
            history.append({"second": per_second[0][0], "hops": hops})
        return history

    def ingest(self) -> list[dict[str, Any]]:
        """Per line: line, state, pid, updated_ns and the ``LINE_COUNTER_NAMES`` counters."""
        return _read_lines(self._ptr, self.run_id)

    def operators(self) -> list[dict[str, Any]]:
        """Every operator / channel entry: name, kind, cpu, pid, state, updated_ns, counters (dict)."""
        out = ffi.new("omdp_stats_operator_t[]", MAX_OPERATORS)
        n = _check(lib.omdp_stats_ops_read(self._ptr, out, MAX_OPERATORS), self.run_id, "read operators")
        rows = []
        for e in out[0:n]:
            names = [_text(e.counter_names[i]) for i in range(e.n_counters)]
            rows.append({
                "name": _text(e.name), "kind": _text(e.kind), "cpu": int(e.cpu), "pid": int(e.pid),
                "state": _ENTRY_STATES.get(int(e.state), "?"), "updated_ns": int(e.updated_ns),
                "counters": {k: int(e.counters[i]) for i, k in enumerate(names)},
            })
        return rows

    def signals(self, limit: int = 100) -> list[dict[str, Any]]:
        """The latest signals, newest first: ts_ns, engine, kind, series, value."""
        limit = max(0, min(int(limit), SIGNALS))
        out = ffi.new("omdp_stats_signal_t[]", max(limit, 1))
        n = _check(lib.omdp_stats_signals_read(self._ptr, out, limit), self.run_id, "read signals")
        return [{"ts_ns": int(s.ts_ns), "engine": int(s.engine), "kind": _text(s.kind), "series": _text(s.series),
                 "value": float(s.value)} for s in out[0:n]]

    def signals_total(self) -> int:
        """Signals pushed since the run started."""
        return _check(int(lib.omdp_stats_signals_total(self._ptr)), self.run_id, "read signal count")

    def close(self) -> None:
        """Unmap (never unlinks)."""
        self._handle.close()

    def __enter__(self) -> StatsReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
