"""``intended.parquet`` of a run: one row per packet and copy sent, with its intended and
actual send times (omdp.metrics.run_records.RUN_INTENDED_SCHEMA), for offline joins with
the collectors' samples (latency from ``intended`` is coordinated-omission safe).

Fed with the entries the service drains from the senders' logs; rows are buffered into
row groups of about a million. The file grows under a temporary name and is renamed into
place when closed (``omdp.atomic_files``); a write that fails (a full disk) removes it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.atomic_files import ArtifactWriteError, temporary_name
from omdp.metrics.run_records import RUN_INTENDED_SCHEMA
from ops.replay.native_layout import COPIES

ROW_GROUP_ROWS = 1 << 20
_COPY_NAMES = ("A", "B")
_DELTA = ["block_seq", "intended_ns", "sent_ns"]

INTENDED_WRITE_OPTIONS = {
    "use_dictionary": ["line", "copy", "messages"],
    "column_encoding": {n: "DELTA_BINARY_PACKED" for n in _DELTA},
    "compression": {n: "none" if n in _DELTA else "snappy" for n in RUN_INTENDED_SCHEMA.names},
}
"""How ``intended.parquet`` is encoded. It is written on the replayer's CPU while the run
goes (a row per packet: 480,000 rows a second at 20x), so its CPU is taken from the sender:
the times and block sequence numbers (nearly sorted, all distinct) are delta-encoded and
left uncompressed rather than tried against a dictionary and compressed, the few-valued
columns keep their dictionary: half the writer's CPU per row of pyarrow's defaults, and a
quarter smaller (docs/benchmarks.md, "Pipeline", 2026-11-29)."""


def _repeat_string(value: str, n: int) -> pa.StringArray:
    """``n`` copies of a one-character string, built from buffers (no Python object per row)."""
    data = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data * n))


class IntendedParquetWriter:
    """Appends drained sent-log entries (SENT_DTYPE) to ``path`` as rows per copy."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tmp = temporary_name(self.path)
        self.rows_written = 0
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def add(self, sent: np.ndarray) -> None:
        """Rows for every copy of every entry that was sent (sent_ns != 0)."""
        if sent.shape[0] == 0:
            return
        for c in range(COPIES):
            mask = sent["sent_ns"][:, c] != 0
            n = int(mask.sum())
            if n == 0:
                continue
            part = sent[mask]
            table = pa.Table.from_arrays(
                [
                    pa.array(part["line"], pa.uint16()),
                    pa.array(part["block_seq"], pa.uint64()),
                    _repeat_string(_COPY_NAMES[c], n),
                    pa.array(part["intended_ns"], pa.int64()),
                    pa.array(part["sent_ns"][:, c], pa.int64()),
                    pa.array(part["messages"], pa.uint16()),
                ],
                schema=RUN_INTENDED_SCHEMA,
            )
            self._pending.append(table)
            self._pending_rows += n
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending)
        try:
            if self._writer is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = pq.ParquetWriter(self._tmp, RUN_INTENDED_SCHEMA, **INTENDED_WRITE_OPTIONS)
            self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        except OSError as e:
            self._discard()
            raise ArtifactWriteError(self.path, e) from e
        self.rows_written += table.num_rows
        self._pending = []
        self._pending_rows = 0

    def close(self) -> None:
        """Write what is buffered and close; an empty run still gets a file with the schema."""
        self._flush()
        try:
            if self._writer is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(RUN_INTENDED_SCHEMA.empty_table(), self._tmp)
            else:
                self._writer.close()
                self._writer = None
            self._tmp.replace(self.path)
        except OSError as e:
            self._discard()
            raise ArtifactWriteError(self.path, e) from e

    def _discard(self) -> None:
        """Drop the unfinished file (its writer first)."""
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:
                pass
            self._writer = None
        self._tmp.unlink(missing_ok=True)
