"""Executor side of the feeds job: decode one capture file (OPRA FAST V2 or OBI v6, told from
its first packet's bytes) with the C decoder straight into the tick table's Arrow columns (``ops.spark.feeds.tick_arrow``), a chunk of packets per call (never
a Python call per message), write its ticks as one Parquet file of the tick table, count
the feed's profiles from the same batches (``ops.spark.feeds.feed_tally``: its 10 ms windows go to
a file of the tick-windows table), and report how the file went.

A file may be 256 MB: it is memory-mapped by the pcap reader and decoded ``chunk_packets``
packets at a time, each chunk becoming a row group, so a task holds one chunk's records, not
the file's. The tick file is written under a hidden temporary name and renamed into place
when complete (the windows file likewise, after it): a task that fails or is retried never
leaves half a file where readers look, and a retry writes the same names.
"""
from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from feedhandlers.opra_obi import FEED_FORMATS
from ops.spark.common.data_layout import CaptureFile
from ops.spark.feeds.feed_tally import FeedTally
from ops.spark.feeds.tick_arrow import TICK_FILE_DICT_SCHEMA, ArrowTickDecoder
from ops.spark.feeds.tick_table import TICK_FILE_SCHEMA, tick_file_dir

DEFAULT_CHUNK_PACKETS = 16_384

_STRINGS = [n for n, t in zip(TICK_FILE_SCHEMA.names, TICK_FILE_SCHEMA.types) if t == pa.string()]
_PRICES = ["strike_px", "bid_px", "offer_px", "premium_px"]
_DELTA = ["msg_seq", "bid_size", "offer_size", "volume", "open_interest"]

TICK_FILE_WRITE_OPTIONS = {
    "compression": {n: "none" if n in _DELTA else "lz4" for n in TICK_FILE_SCHEMA.names},
    "use_dictionary": _STRINGS + _PRICES,
    "write_statistics": ["ts_ns", "block_seq", "msg_seq"],
    "column_encoding": {n: "DELTA_BINARY_PACKED" for n in _DELTA},
    "store_schema": False,
}
"""How tick files are encoded, column by column, chosen by measuring each column's write
CPU against its bytes per tick (docs/analytics.md "Tick file encoding"; bench:
docs/benchmarks.md, 2026-11-24 and 2026-11-25):

- the string columns: dictionary, handed to the writer as dictionary arrays
  (``TICK_FILE_DICT_SCHEMA``) so it writes their dictionaries without hashing each row's
  string;
- the prices: dictionary (a line quotes few distinct prices in a row group: cheaper than
  compressing 8 bytes a row, and smaller); the writer falls back to plain by itself when a
  row group's dictionary outgrows its page;
- msg_seq and the quantities: DELTA_BINARY_PACKED (steps of one; small sizes), not
  compressed: the bit-packed deltas do not shrink further, and compressing them cost a
  third of those columns' write CPU;
- ts_ns, block_seq, the other ints: plain (a packet's rows repeat ts_ns and block_seq:
  compression removes the repeats for less CPU than delta encoding);
- LZ4 (Parquet's raw LZ4 codec) on every other page: the write CPU of snappy, files 11%
  smaller (8.62 against 9.64 bytes per tick); min/max statistics only for the time and
  sequence columns (what readers prune on); the never-null columns REQUIRED
  (``TICK_FILE_DICT_SCHEMA``);
- no Arrow schema stored: the Parquet types are TICK_FILE_SCHEMA's (strings, not
  dictionaries), for Spark and pyarrow alike."""


WINDOWS_WRITE_OPTIONS = {"compression": "lz4", "use_dictionary": False, "write_statistics": ["w10"]}
"""A windows file (a few thousand rows): LZ4, no dictionary (distinct values), statistics
for the window start only: half the write CPU of the defaults (0.76 against 1.26 ms for a
30 s line's 2,384 windows), 9% smaller."""


@dataclass
class FileOutcome:
    """How decoding one capture file went (a row of ``feeds_files``)."""

    path: str
    line: int
    copy: str
    part: int
    bytes: int
    packets: int = 0
    messages: int = 0
    bad_packets: int = 0
    bad_checksums: int = 0     # of bad_packets: OBI blocks dropped for a checksum mismatch
    gaps: int = 0              # places where a packet's first msg_seq is past the last one's end
    gap_messages: int = 0      # the message sequence numbers those gaps skip
    frames_skipped: int = 0
    feed: str = ""             # "opra-fast-v2" or "obi-v6" ("" for a file not read)
    status: str = "ok"
    error: str = ""
    output: str = ""
    cpu_s: float = 0.0
    write_cpu_s: float = 0.0   # of cpu_s: writing the tick file (Parquet); the rest is read + decode

    def as_dict(self) -> dict:
        """The fields as plain data (it crosses from the executors to the driver)."""
        return asdict(self)


def decode_capture(
    capture: CaptureFile, root_map: dict[str, str], outcome: FileOutcome, chunk_packets: int = DEFAULT_CHUNK_PACKETS,
    dictionary: bool = False, decoder: Callable[[str], ArrowTickDecoder] | None = None, tally: FeedTally | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the tick batches of ``capture`` (string columns as dictionaries with
    ``dictionary``: ``TICK_FILE_DICT_SCHEMA``; a splitting ``decoder``: each chunk's quotes,
    then its other messages), filling ``outcome`` as it goes and, with a counting
    ``decoder``, ``tally`` (the packets of each chunk decoded). A file that is
    not a readable pcap yields nothing (status "skipped"); a file cut short or failing part
    way keeps what was decoded before (status "partly skipped"); bad packets are counted
    (an OBI block whose checksum does not match among them, as the live path drops it).
    The file's format is its first packet's (``outcome.feed``); both give the same columns.
    Each batch is valid until the next is asked for. ``decoder`` (a function of the feed
    giving a reusing decoder of the same ``dictionary`` mode) lends its column buffers,
    already faulted in by earlier files; by default the file gets a decoder of its own."""
    from feedhandlers.captures import PcapError, read_pcap

    try:
        cap = read_pcap(capture.path)
    except (PcapError, OSError, ValueError) as exc:
        outcome.status, outcome.error = "skipped", str(exc)
        return
    outcome.frames_skipped = int(cap.skipped)
    feed = capture_feed(cap)
    outcome.feed = FEED_FORMATS[feed]
    if cap.meta.get("truncated"):
        outcome.status = "partly skipped"
        outcome.error = f"{cap.meta['truncated_tail'].describe()}; the packets before it were read"
    if cap.meta.get("malformed_frames") is not None:
        outcome.status = "partly skipped"
        outcome.error = "; ".join(filter(None, [outcome.error, cap.meta["malformed_frames"].describe()]))
    # each batch is used before the next decode: the decoder may reuse its buffers
    tick_decoder = decoder(feed) if decoder is not None else ArrowTickDecoder(reuse=True, dictionary=dictionary, feed=feed)
    n = len(cap)
    for start in range(0, n, chunk_packets):
        end = min(n, start + chunk_packets)
        try:
            # The C decoder writes the chunk's tick columns in Arrow's layout; the batch
            # wraps those buffers (no copy) and owns them.
            done = tick_decoder.decode(cap.buf, cap.offsets[start:end], cap.lengths[start:end], cap.ts_ns[start:end], root_map, start)
        except (OSError, ValueError, MemoryError) as exc:
            outcome.status = "partly skipped"
            outcome.error = f"packets {start}..{n - 1} not decoded: {exc}"
            return
        outcome.packets += end - start
        outcome.bad_packets += done.counters["packets_bad"]
        outcome.bad_checksums += done.counters.get("CHECKSUM", 0)
        outcome.messages += done.counters["messages"]
        if tally is not None:
            tally.add(done, cap.ts_ns[start:end], cap.lengths[start:end])
        yield from done.batches


def tick_file_path(ticks_root: Path, date: str, capture: CaptureFile) -> Path:
    """The tick file of one capture file (or, under the tick-windows table's root, its
    windows file): named after it, in its line's partition."""
    return tick_file_dir(ticks_root, date, capture.line) / (Path(capture.path).stem + ".parquet")


def _temporary(final: Path) -> Path:
    """The hidden name a file is written under before it is renamed to ``final``."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def capture_feed(cap: object, look: int = 64) -> str:
    """The feed of a capture ("fast" or "obi"): its first packet among the first ``look``
    that is either format's (as ``omdp decode --format auto`` tells it); "fast" when none
    is, whose decoder then counts its packets bad."""
    from feedhandlers.opra_obi import detect_feed

    for i in range(min(len(cap), look)):  # type: ignore[arg-type]
        found = detect_feed(cap.payload(i))  # type: ignore[attr-defined]
        if found is not None:
            return found
    return "fast"


@functools.cache
def _task_decoder(feed: str) -> ArrowTickDecoder:
    """The decoder (of each feed) every write_capture_ticks of this process uses, one file after the other
    (an executor's Python worker runs task after task): its column buffers (tens of MB at
    the default chunk) are faulted in once, not once per file - the page faults were a
    tenth of the read + decode CPU. Each chunk comes as its quotes and its other messages
    (``split``), written as row groups of their own: the quotes' columns then hold no null,
    which the Parquet writer writes at a fraction of the CPU (docs/benchmarks.md), and with
    the counts the feed's profiles are made of (``count``)."""
    return ArrowTickDecoder(reuse=True, dictionary=True, split=True, count=True, feed=feed)


def write_capture_ticks(
    capture: CaptureFile, date: str, root_map: dict[str, str], ticks_root: Path, windows_root: Path,
    chunk_packets: int = DEFAULT_CHUNK_PACKETS,
) -> tuple[FileOutcome, FeedTally]:
    """Decode ``capture`` into its tick file and its windows file (under ``windows_root``);
    return how it went (``output`` is the tick file written, "" when the capture held no
    message; ``cpu_s`` the task's CPU seconds: read, decode, convert, write, count;
    ``write_cpu_s`` the part of it spent writing Parquet, kept apart because it, not the
    decode, bounds a task's rate) and the file's counts."""
    cpu0 = time.process_time()
    outcome = FileOutcome(capture.path, capture.line, capture.copy, capture.part, capture.size)
    tally = FeedTally()
    final = tick_file_path(ticks_root, date, capture)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(final)
    writer: pq.ParquetWriter | None = None
    write_cpu = 0.0
    try:
        for batch in decode_capture(capture, root_map, outcome, chunk_packets, dictionary=True, decoder=_task_decoder,
                                    tally=tally):
            w0 = time.process_time()
            if writer is None:
                writer = pq.ParquetWriter(tmp, TICK_FILE_DICT_SCHEMA, **TICK_FILE_WRITE_OPTIONS)
            writer.write_batch(batch)
            write_cpu += time.process_time() - w0
    finally:
        if writer is not None:
            w0 = time.process_time()
            writer.close()
            write_cpu += time.process_time() - w0
    outcome.write_cpu_s = write_cpu
    outcome.gaps, outcome.gap_messages = tally.gaps, tally.gap_messages
    if writer is not None:
        os.replace(tmp, final)
        outcome.output = str(final)
        windows = tick_file_path(windows_root, date, capture)
        windows.parent.mkdir(parents=True, exist_ok=True)
        windows_tmp = _temporary(windows)
        pq.write_table(tally.windows(), windows_tmp, **WINDOWS_WRITE_OPTIONS)
        os.replace(windows_tmp, windows)
    outcome.cpu_s = time.process_time() - cpu0
    return outcome, tally
