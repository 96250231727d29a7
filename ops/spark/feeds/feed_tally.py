"""Executor side of the feed's profiles: what the rate profile, the messages-per-packet
histogram and the category mix need from a capture file, counted while the C decoder fills
the tick file's Arrow batches (``ArrowTickDecoder(count=True)``).

Before, Spark read the day's tick table back four times for these (two thirds of the feeds
job's wall time on two cores: docs/benchmarks.md); now each task counts its own files and
the driver merges the small results:

- the 10 ms windows (packets, messages, bytes, first and last capture time, per line), one
  small Parquet file per capture file in the ``tick_windows`` table (a full day has millions
  of them: they go through Spark, not through the driver);
- packets per messages-per-packet count, per line; messages per (underlying, category):
  at most a few thousand values per task, handed back with the task's file outcomes;
- the file's gaps in message sequence numbers: a packet of n messages starting at s holds
  s .. s + n - 1 (FAST V2 and OBI alike: an OBI block's messages are block_seq + index), so
  a packet whose first message is past the highest end seen before it opens a gap of the
  numbers between; one behind it (a retransmission, a duplicate, a reset) opens none. An
  OBI block dropped for a bad checksum is a gap here, as it is to a feed handler reading
  that copy alone.

A packet is counted once, with the messages the decoder wrote for it (a malformed packet,
none, is not counted), as the tick table's readers count it on its ``msg_index`` 0 row; all
its rows carry its capture time, so its messages fall in its window. Tests hold these equal
to counting the tick rows and to Spark's aggregation of the tick table.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ops.spark.feeds.tick_arrow import ArrowDecoded

WINDOW_NS = 10_000_000
"""The finest window (10 ms); every coarser one (100 ms, 1 s) is a sum of these."""

TICK_WINDOWS_SCHEMA = pa.schema([
    pa.field("w10", pa.int64(), nullable=False),
    pa.field("packets", pa.int64(), nullable=False),
    pa.field("messages", pa.int64(), nullable=False),
    pa.field("bytes", pa.int64(), nullable=False),
    pa.field("first_ns", pa.int64(), nullable=False),
    pa.field("last_ns", pa.int64(), nullable=False),
])
"""A tick-windows file: per 10 ms window of capture time (``w10``, its start in epoch ns,
a whole multiple of 10 ms) the packets, messages and packet bytes of one capture file, and
its first and last packet's capture time. The line is the file's partition."""

_WINDOW_COLUMNS = TICK_WINDOWS_SCHEMA.names[1:]


def _values(arr: pa.Array, dtype: type) -> np.ndarray:
    """The value buffer of a fixed-width array (or a dictionary array's indices) as numpy,
    without a copy, nulls included as whatever the buffer holds there."""
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr), offset=arr.offset * np.dtype(dtype).itemsize)


def _group_windows(w: np.ndarray, packets: np.ndarray, messages: np.ndarray, nbytes: np.ndarray,
                   first: np.ndarray, last: np.ndarray) -> dict[str, np.ndarray]:
    """Counts of the same window start ``w`` merged (a call's packets, or several calls'
    windows): packets, messages and bytes summed, the earliest first and the latest last;
    sorted by ``w`` first when they are not. A few numpy passes over what is merged."""
    if w.size > 1 and not bool(np.all(w[1:] >= w[:-1])):
        order = np.argsort(w, kind="stable")
        w, packets, messages, nbytes, first, last = (a[order] for a in (w, packets, messages, nbytes, first, last))
    if not w.size:
        return {"w10": w.astype(np.int64), **{c: np.zeros(0, np.int64) for c in _WINDOW_COLUMNS}}
    starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
    return {
        "w10": w[starts],
        "packets": np.add.reduceat(packets, starts, dtype=np.int64),
        "messages": np.add.reduceat(messages, starts, dtype=np.int64),
        "bytes": np.add.reduceat(nbytes, starts, dtype=np.int64),
        "first_ns": np.minimum.reduceat(first, starts),
        "last_ns": np.maximum.reduceat(last, starts),
    }


class FeedTally:
    """One capture file's counts, added to call by call (``add``) as the decoder returns
    each chunk of packets: the windows and the histogram from the rows the decoder says each
    packet wrote, the quotes' mix from its quote rows per root, the rest's (a few in a
    thousand rows) from their batch. Per call the work is per packet and per distinct
    underlying, not per row of the quotes (docs/benchmarks.md: 5-8 ns a message where counting
    the rows with numpy cost 14)."""

    def __init__(self) -> None:
        self._windows: list[dict[str, np.ndarray]] = []
        self._per_packet_count = np.zeros(0, np.int64)   # packets by their message count
        self._names: list[str | None] = [None]            # by id: null, then the underlyings as seen
        self._seen = pa.array([], pa.string())             # the underlyings (id - 1)
        self._mix = np.zeros((64, 256), np.int64)          # messages by (underlying id, category code)
        self._last_dict: pa.Array | None = None
        self._last_ids = np.zeros(0, np.intp)
        self._seq_end: int | None = None                 # the highest first msg_seq + rows seen
        self.gaps = 0
        """Gaps in the file's message sequence numbers (module docstring)."""
        self.gap_messages = 0
        """The sequence numbers its gaps skip."""

    def add(self, done: ArrowDecoded, ts_ns: np.ndarray, lengths: np.ndarray) -> None:
        """Count one decode call (a counting, splitting decoder's) of packets captured at
        ``ts_ns`` with ``lengths`` bytes."""
        rows = done.packet_rows
        good = np.flatnonzero(rows)
        if good.size:
            pm = rows[good]
            ts = np.asarray(ts_ns, np.int64)[good]
            w = ts // WINDOW_NS * WINDOW_NS   # floor: the window start at or before ts (int64, no rounding)
            self._windows.append(_group_windows(w, np.ones(ts.size, np.int64), pm, np.asarray(lengths)[good], ts, ts))
            hist = np.bincount(pm)
            if hist.size > self._per_packet_count.size:
                self._per_packet_count = np.pad(self._per_packet_count, (0, hist.size - self._per_packet_count.size))
            self._per_packet_count[:hist.size] += hist
            self._add_gaps(done.packet_seq[good], pm)
        if done.batch is not None:   # the quotes: their underlyings from their roots' counts
            ids = self._underlying_ids(done.batch.column("underlying"))
            per = np.bincount(done.root_underlying, weights=done.root_quotes, minlength=ids.size)
            self._mix[ids, ord("k")] += per.astype(np.int64)
        if done.rest is not None:
            self._add_mix(done.rest.column("underlying"), done.rest.column("category"))

    def _add_gaps(self, first: np.ndarray, rows: np.ndarray) -> None:
        """Count the gaps before each of these packets (first msg_seq, rows; in capture
        order), after those of earlier calls."""
        end = first + rows
        start = first[0] if self._seq_end is None else self._seq_end
        reach = np.maximum.accumulate(np.concatenate(([start], end)))
        skipped = first - reach[:-1]
        ahead = skipped > 0
        self.gaps += int(ahead.sum())
        self.gap_messages += int(skipped[ahead].sum())
        self._seq_end = int(reach[-1])

    def _underlying_ids(self, underlying: pa.DictionaryArray) -> np.ndarray:
        """The file's ids of the batch's dictionary values, then of null (the last): looked
        up in Arrow (a call's dictionary is new, its values mostly not), new ones added."""
        values = underlying.dictionary
        if self._last_dict is None or not values.equals(self._last_dict):
            found = pc.index_in(values, value_set=self._seen)
            if found.null_count:
                new = values.filter(found.is_null())
                self._names += new.to_pylist()
                self._seen = pa.concat_arrays([self._seen, new])
                found = pc.index_in(values, value_set=self._seen)
                if len(self._names) > self._mix.shape[0]:
                    self._mix = np.pad(self._mix, ((0, len(self._names) + self._mix.shape[0]), (0, 0)))
            self._last_dict = values
            self._last_ids = np.append(found.to_numpy().astype(np.intp) + 1, 0)
        return self._last_ids

    def _add_mix(self, underlying: pa.DictionaryArray, category: pa.DictionaryArray) -> None:
        """Messages per (underlying, category) of a batch: one bincount of the pairs'
        indices, the categories renumbered to those present so the bins stay few."""
        ids = self._underlying_ids(underlying)
        u = _values(underlying.indices, np.int32)
        if underlying.null_count:
            u = np.where(underlying.is_valid().to_numpy(zero_copy_only=False), u, ids.size - 1)
        codes = _values(category.indices, np.int32)          # the character code; 0 where null (opra_arrow.h)
        per_code = np.bincount(codes, minlength=256)
        present = np.flatnonzero(per_code)
        lut = np.zeros(per_code.size, np.int32)
        lut[present] = np.arange(present.size, dtype=np.int32)
        counts = np.bincount(u * present.size + lut[codes], minlength=ids.size * present.size)
        self._mix[np.ix_(ids, present)] += counts.reshape(ids.size, present.size)

    @property
    def messages_per_packet(self) -> dict[int, int]:
        """Packets by how many messages they held (counts above zero only)."""
        return {int(k): int(self._per_packet_count[k]) for k in np.flatnonzero(self._per_packet_count)}

    @property
    def mix(self) -> dict[tuple[str | None, str | None], int]:
        """Messages per (underlying, category); None where the value is null."""
        used = self._mix[:len(self._names)]
        return {(self._names[i], chr(int(c)) if c else None): int(used[i, c]) for i, c in zip(*np.nonzero(used))}

    def windows(self) -> pa.Table:
        """The file's 10 ms windows (TICK_WINDOWS_SCHEMA), in window order."""
        if not self._windows:
            merged = _group_windows(*(np.zeros(0, np.int64) for _ in range(6)))
        else:
            merged = _group_windows(*(np.concatenate([p[c] for p in self._windows]) for c in TICK_WINDOWS_SCHEMA.names))
        return pa.Table.from_pydict(merged, schema=TICK_WINDOWS_SCHEMA)
