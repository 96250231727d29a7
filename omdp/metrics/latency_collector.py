"""``LatencyCollector``: the last hop of the pipeline, measuring every hop before it.

Per batch, one C call (``omdp_latency_collect_batch``) takes the final stamp ``mc_in``
(once per batch, kept in the sample rows; the batch itself is only read), computes the six
hops of every sampled record, adds them to per-hop histograms, keeps a sample row (stamps +
identity) for samples.parquet and publishes live figures to the stats segment.

Methods of reporting:
- ``"all"`` (default): every sample of the run.
- ``"middle"``: the paper's method: collect ``collect`` samples (150,000), report the middle
  ``report`` (100,000), dropping warm-up and wind-down; ``complete`` turns true once
  ``collect`` samples are in, so a runner can stop. A shorter run reports the same middle
  fraction of what it collected. Live figures keep counting after completion.
samples.parquet always holds the kept rows; its schema metadata says which rows the report
used (``omdp.report_rows`` = "start:end"), so a finished run's breakdown is rebuilt exactly.

Bounded memory ("all" with ``spill_dir``): once ``chunk_rows`` rows are held they are written
to samples.parquet as a row group (``pyarrow.parquet.ParquetWriter``, same schema) and dropped
from memory, so the rows held never exceed ``chunk_rows`` plus one call's samples; the report
uses the fixed-size per-hop histograms (docs/metrics.md, "Memory bound").
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.atomic_files import ArtifactWriteError
from omdp.clock import now_ns
from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_summary import HopSummary, summarize_hops
from omdp.metrics.run_files import to_table, write_samples
from omdp.metrics.sample_identity import SAMPLE_ID_DTYPE, IdentityLayout
from omdp.metrics.stats_segment import StatsWriter
from omdp.native import ffi, lib
from omdp.record import HOPS, STAMPS_DTYPE

DEFAULT_SAMPLE_EVERY = 1600
PAPER_COLLECT = 150_000
PAPER_REPORT = 100_000
DEFAULT_MAX_ROWS = 2_000_000
DEFAULT_CHUNK_ROWS = 65_536
"""Rows per samples.parquet chunk when spilling (~5 MB of columns)."""

_collect_batch = lib.omdp_latency_collect_batch

SampleMethod = Literal["all", "middle"]
Selection = Literal["flagged", "every_n"]

_ID_COLUMNS = ("line", "block_seq", "msg_seq", "engine", "key", "category")
_ID_TYPES = {"line": np.uint16, "block_seq": np.uint64, "msg_seq": np.uint64, "engine": np.uint16,
             "key": np.uint32, "category": np.uint8}
_COUNTERS = ("batches", "records", "samples", "not_sampled", "bad_batches", "id_out_of_bounds", "rows",
             "rows_dropped", "publishes", "publish_errors", "last_error_offset")


class RecordBatchError(ValueError):
    """A batch held a record whose length is impossible; the records before it were collected."""

    def __init__(self, offset: int, nbytes: int, samples_taken: int) -> None:
        super().__init__(
            f"bad record at byte {offset} of a {nbytes}-byte batch (length below the header, not a multiple "
            f"of 8, or past the batch end); {samples_taken} samples before it were collected"
        )
        self.offset = offset
        self.nbytes = nbytes
        self.samples_taken = samples_taken


def middle_rows(rows: int, collect: int, report: int) -> tuple[int, int]:
    """Rows [start, end) the paper's method reports out of ``rows`` collected.

    With all ``collect`` rows: the middle ``report`` ((collect - report) / 2 dropped at each
    end). With fewer: the same middle fraction of what there is.
    """
    if rows >= collect:
        start = (collect - report) // 2
        return start, start + report
    start = rows * (collect - report) // (2 * collect)
    return start, rows - start


def _array(ptr: Any, n: int, dtype: type) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(ffi.buffer(ptr, n * np.dtype(dtype).itemsize), dtype=dtype).copy()


class LatencyCollector:
    """Per-hop latency histograms and sample rows of a run, computed in C per batch."""

    def __init__(
        self,
        *,
        sample_every: int = DEFAULT_SAMPLE_EVERY,
        select: Selection = "flagged",
        method: SampleMethod = "all",
        collect: int = PAPER_COLLECT,
        report: int = PAPER_REPORT,
        record_type: int = 0,
        identity: IdentityLayout | None = None,
        stats: StatsWriter | None = None,
        name: str = "latency-collector",
        cpu: int = -1,
        publish_interval_ms: float = 100.0,
        max_rows: int = DEFAULT_MAX_ROWS,
        spill_dir: str | Path | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
    ) -> None:
        """
        sample_every: the run's 1-in-N sampling knob (recorded in meta.parquet); with
            select="every_n" the collector itself takes 1 in N of the records it sees,
            with "flagged" (default) it takes the records the engines flagged as sampled.
        method: "all" or "middle" (the paper's collect/report, see the module docstring).
        record_type: only records of this type are candidates (0 = any).
        identity: where line, sequences, key and category sit in the record (None: zeros).
        stats: publish live figures there and register an operator entry called ``name``
            (close the collector before the segment: the C side holds its handle).
        max_rows: rows kept for samples.parquet in "all" mode (further samples still count);
            with ``spill_dir`` the rows held in memory between two spills.
        spill_dir: "all" mode: write samples.parquet there as the run goes, ``chunk_rows``
            rows at a time (``write_samples`` finishes it); None: keep every row until the end.
        """
        if sample_every < 1:
            raise ValueError(f"sample_every must be >= 1, got {sample_every}")
        if select not in ("flagged", "every_n"):
            raise ValueError(f"select must be 'flagged' or 'every_n', got {select!r}")
        if method not in ("all", "middle"):
            raise ValueError(f"method must be 'all' or 'middle', got {method!r}")
        if method == "middle" and not 0 < report <= collect:
            raise ValueError(f"the middle method needs 0 < report <= collect, got report={report}, collect={collect}")
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
        if spill_dir is not None and method != "all":
            raise ValueError("spill_dir needs method='all' (the middle method keeps its collect rows)")
        if max_rows < 0 or publish_interval_ms < 0:
            raise ValueError("max_rows and publish_interval_ms must be >= 0")
        self.sample_every = sample_every
        self.select = select
        self.method = method
        self.collect_target = collect
        self.report_target = report
        self.chunk_rows = chunk_rows
        self._spill_dir = Path(spill_dir) if spill_dir is not None else None
        self._writer: pq.ParquetWriter | None = None
        self._spill_tmp: Path | None = None
        self._spilled = 0
        self.max_held_rows = 0
        """The most rows held in memory at once (after any call), for checks of the bound."""
        cfg = ffi.new("omdp_latency_config_t *")
        cfg.select = lib.OMDP_LAT_SELECT_FLAGGED if select == "flagged" else lib.OMDP_LAT_SELECT_EVERY_N
        cfg.sample_every = sample_every
        cfg.record_type = record_type
        cfg.max_rows = collect if method == "middle" else max_rows
        cfg.publish_interval_ns = int(publish_interval_ms * 1e6)
        (identity or IdentityLayout()).to_c(cfg.id)
        ptr = lib.omdp_latency_collector_new(cfg)
        if ptr == ffi.NULL:
            raise ValueError("the C collector refused its configuration")
        self._c = ffi.gc(ptr, lib.omdp_latency_collector_free)
        self._k = lib.omdp_latency_counters(self._c)
        self._stats = stats
        self._op = None
        if stats is not None:
            names = ffi.string(lib.omdp_latency_op_counter_names()).decode().split(",")
            self._op = stats.register_operator(name, "collector", names, cpu=cpu)
            lib.omdp_latency_attach_stats(self._c, stats.c_handle, self._op.index)
            stats.set_run_info(sample_every=sample_every)

    @property
    def c_pointer(self) -> Any:
        """The ``omdp_latency_collector_t *`` for C callers (a fused partition's loop)."""
        return self._c

    def collect(self, batch: Any, source: int = 0, mc_in: int = 0) -> int:
        """Collect one batch of back-to-back records (any buffer; it is only read).

        source: the upstream engine index (the samples' ``engine`` unless the identity
        layout has one). mc_in: the arrival time, the samples' final stamp (0 = read the
        clock now, once for the batch). Returns the samples taken. A record with
        a bad length ends the batch: the records before it are collected, the batch is
        counted in ``counters()["bad_batches"]``, and ``RecordBatchError`` says where.
        """
        buf = ffi.from_buffer(batch)
        before = self._k.samples
        rc = _collect_batch(self._c, buf, len(buf), source, mc_in)
        if rc >= 0:
            self._maybe_spill()
            return rc
        if rc == lib.OMDP_LAT_EBADREC:
            raise RecordBatchError(int(self._k.last_error_offset), len(buf), int(self._k.samples - before))
        raise ValueError(f"batch refused by the collector (code {rc}): mc_in must be >= 0")

    def collect_rows(self, stamps: np.ndarray, ids: np.ndarray | None = None) -> int:
        """Collect pre-extracted samples: a ``STAMPS_DTYPE`` array (mc_in set) and optional
        ``SAMPLE_ID_DTYPE`` identities; every row is a sample."""
        stamps = np.ascontiguousarray(stamps)
        if stamps.dtype != STAMPS_DTYPE:
            raise TypeError(f"stamps must have dtype {STAMPS_DTYPE}, got {stamps.dtype}")
        id_ptr = ffi.NULL
        if ids is not None:
            ids = np.ascontiguousarray(ids)
            if ids.dtype != SAMPLE_ID_DTYPE or len(ids) != len(stamps):
                raise TypeError(f"ids must be {len(stamps)} rows of dtype {SAMPLE_ID_DTYPE}")
            id_ptr = ffi.from_buffer("omdp_sample_id_t[]", ids)
        rc = lib.omdp_latency_collect_rows(self._c, ffi.from_buffer("omdp_stamps_t[]", stamps), id_ptr, len(stamps))
        if rc < 0:
            raise ValueError(f"rows refused by the collector (code {rc})")
        self._maybe_spill()
        return int(rc)

    def _maybe_spill(self) -> None:
        held = self.held_rows
        self.max_held_rows = max(self.max_held_rows, held)
        if self._spill_dir is not None and held >= self.chunk_rows:
            self.spill()

    def spill(self) -> int:
        """Write the rows held to samples.parquet (a row group) and drop them from memory;
        returns the rows written. Needs ``spill_dir``."""
        n = self._write_rows(self._held_table())
        if n:
            lib.omdp_latency_discard_rows(self._c, n)
        return n

    def hand_off_chunks(self) -> None:
        """For a collector fed by a C loop in another thread (the operator below): the loop
        hands its rows over in chunks of ``chunk_rows`` and ``drain_chunks``, called from
        one other thread, writes them to samples.parquet. Call before the loop starts."""
        if self._spill_dir is None:
            raise ValueError("hand_off_chunks() needs a collector made with spill_dir")
        lib.omdp_latency_set_handoff(self._c, self.chunk_rows)

    def drain_chunks(self) -> int:
        """Write the chunk the C loop handed over, if any, to samples.parquet and free it;
        returns the rows written (0: none waiting)."""
        written = 0
        cols = ffi.new("omdp_sample_columns_t *")
        while lib.omdp_latency_take_chunk(self._c, cols) > 0:
            try:
                written += self._write_rows(self._table_of(cols))
            finally:
                lib.omdp_latency_free_columns(cols)
        return written

    def _write_rows(self, table: pa.Table) -> int:
        if self._spill_dir is None:
            raise ValueError("spilling needs a collector made with spill_dir")
        n = table.num_rows
        try:
            if self._writer is None:
                self._spill_dir.mkdir(parents=True, exist_ok=True)
                self._spill_tmp = self._spill_dir / f".samples.parquet.{os.getpid()}.{id(self)}.tmp"
                # store_schema=False: the file's key-value metadata (added at the end) is then what
                # readers see as the schema metadata; the columns' types all map back exactly.
                self._writer = pq.ParquetWriter(self._spill_tmp, table.schema.remove_metadata(), store_schema=False)
            if n:
                self._writer.write_table(table.replace_schema_metadata(None))
        except OSError as e:
            self._discard_spill()
            raise ArtifactWriteError(self._spill_dir / "samples.parquet", e) from e
        self._spilled += n
        return n

    def _discard_spill(self) -> None:
        """A spill that cannot be finished (the disk is full): close and remove its file."""
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:
                pass
            self._writer = None
        if self._spill_tmp is not None:
            self._spill_tmp.unlink(missing_ok=True)

    @property
    def held_rows(self) -> int:
        """Sample rows held in memory now (not yet written)."""
        return int(lib.omdp_latency_counters(self._c).rows)

    @property
    def spilled_rows(self) -> int:
        """Sample rows already written to samples.parquet."""
        return self._spilled

    def publish(self, ts_ns: int | None = None) -> None:
        """Publish live figures now (a no-op without a stats segment)."""
        lib.omdp_latency_publish(self._c, ts_ns or now_ns())

    def counters(self) -> dict[str, Any]:
        """The collector's counters, and per hop the samples missing a needed stamp."""
        k = lib.omdp_latency_counters(self._c)
        out: dict[str, Any] = {n: int(getattr(k, n)) for n in _COUNTERS}
        out["missing"] = {h: int(k.missing[i]) for i, h in enumerate(HOP_KEYS)}
        return out

    @property
    def rows(self) -> int:
        """Sample rows kept (written and held)."""
        return self._spilled + self.held_rows

    @property
    def complete(self) -> bool:
        """Middle method: the ``collect`` samples are in. "all": never (runs end by time)."""
        return self.method == "middle" and self.rows >= self.collect_target

    def live_histograms(self) -> dict[str, LatencyHistogram]:
        """Cumulative per-hop histograms of every sample so far (copies)."""
        return {k: LatencyHistogram(lib.omdp_latency_hist(self._c, i)) for i, k in enumerate(HOP_KEYS)}

    def report_rows(self) -> tuple[int, int]:
        """Rows [start, end) the report uses."""
        if self.method == "middle":
            return middle_rows(self.rows, self.collect_target, self.report_target)
        return 0, self.rows

    def report_histograms(self) -> dict[str, LatencyHistogram]:
        """Per-hop histograms of the report: every sample ("all"), or the middle rows."""
        if self.method == "all":
            return self.live_histograms()
        start, end = self.report_rows()
        cols = ffi.new("omdp_sample_columns_t *")
        lib.omdp_latency_columns(self._c, cols)
        hists = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
        for i in range(len(HOP_KEYS)):
            lib.omdp_hist_init(hists + i)
        lib.omdp_latency_hists_from_columns(cols, start, end, hists, ffi.NULL)
        return {k: LatencyHistogram(hists + i) for i, k in enumerate(HOP_KEYS)}

    def summary(self) -> dict[str, HopSummary]:
        """The report per hop: count, mean, p50..p99.99, max in us (n/a = None)."""
        return summarize_hops(self.report_histograms())

    def samples_metadata(self) -> dict[str, str]:
        """Schema metadata of samples.parquet: method, reported rows, sampling, drops."""
        start, end = self.report_rows()
        c = self.counters()
        return {
            "omdp.sample_method": self.method,
            "omdp.report_rows": f"{start}:{end}",
            "omdp.sample_every": str(self.sample_every),
            "omdp.samples": str(c["samples"]),
            "omdp.rows_dropped": str(c["rows_dropped"]),
        }

    def samples_table(self) -> pa.Table:
        """The kept rows as a table with ``RUN_SAMPLES_SCHEMA`` (one copy out of C); when
        spilling, the rows still held (samples.parquet has the rest)."""
        return self._held_table()

    def _held_table(self) -> pa.Table:
        cols = ffi.new("omdp_sample_columns_t *")
        lib.omdp_latency_columns(self._c, cols)
        return self._table_of(cols)

    def _table_of(self, cols: Any) -> pa.Table:
        n = int(cols.rows)
        data: dict[str, np.ndarray] = {h: _array(getattr(cols, h), n, np.int64) for h in HOPS}
        for col in _ID_COLUMNS:
            data["underlying_id" if col == "key" else col] = _array(getattr(cols, col), n, _ID_TYPES[col])
        return to_table("samples.parquet", data, self.samples_metadata())

    def write_samples(self, run_dir: str | Path) -> Path:
        """Write run_dir/samples.parquet (spilling: the last rows, the metadata, then the
        chunked file moved into place)."""
        if self._spill_dir is None:
            return write_samples(run_dir, self.samples_table(), self.samples_metadata())
        self.spill()
        assert self._writer is not None and self._spill_tmp is not None
        path = Path(run_dir) / "samples.parquet"
        try:
            self._writer.add_key_value_metadata(self.samples_metadata())
            self._writer.close()
            self._writer = None
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self._spill_tmp, path)
        except OSError as e:
            self._discard_spill()
            raise ArtifactWriteError(path, e) from e
        self._spill_dir = None  # written: later rows (if any) go by the in-memory path
        return path

    def close(self) -> None:
        """Final publication and the operator entry closed (the segment stays the owner's)."""
        if self._stats is not None and self._op is not None:
            self.publish()
            lib.omdp_latency_attach_stats(self._c, ffi.NULL, -1)
            self._op.close()
            self._op = None
