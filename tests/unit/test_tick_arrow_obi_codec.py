"""The tick table's C decode of OBI v6 blocks straight into Arrow columns
(``omdp_obi_decode_arrow``) gives the same tick batches, field by field, as the OBI batch
decoder's records converted (ObiBatchDecoder + ticks_batch): on random valid blocks (short and
long quotes, sales, every category the random stream holds), in the feeds task's dictionary,
split and counting modes too, and on blocks broken in every way the codec names (bad checksum,
version, size, a message past the block, an unknown category, cut short), which are skipped
and counted with the same errors and counters; the row bound reads only whole headers inside
the buffer. The schema is the FAST V2 path's: a tick does not say which format it came from.
Named "codec": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from feedhandlers.opra_obi import ObiBatchDecoder, checksum
from ops.bench.random_capture import random_obi_blocks
from ops.spark.feeds.tick_arrow import TICK_FILE_DICT_SCHEMA, ArrowTickDecoder
from ops.spark.feeds.tick_table import TICK_FILE_SCHEMA, ticks_batch
from omdp.native import ffi, lib

ROOTS = {"OYD": "OYD", "S": "S"}
"""Two of the random stream's roots (seed 4) with an underlying, the others without."""


@pytest.fixture(scope="module")
def blocks():
    buf, offsets, lengths = random_obi_blocks(6000, seed=4)
    ts = 1_771_857_000 * 10**9 + np.arange(len(offsets), dtype=np.int64) * 1000
    return np.array(buf), np.asarray(offsets), np.asarray(lengths), ts


def _record_path(buf, offsets, lengths, ts_ns):
    out = ObiBatchDecoder(max_errors=4096).decode(buf, offsets, lengths, 0)
    counts = out.blocks["count"].astype(np.int64)
    pkt = np.repeat(np.arange(len(offsets)), counts)
    batch = ticks_batch(out.records, ts_ns=ts_ns[pkt], packet_messages=counts[pkt],
                        packet_bytes=np.asarray(lengths, np.int64)[pkt], root_map=ROOTS)
    return batch, out


def _break(buf, offsets, lengths):
    """Copies with every 5th block broken, each way in turn; the ways that keep the block's
    length re-framed with a right checksum where the break is not the checksum itself."""
    buf, lengths = buf.copy(), lengths.astype(np.int64).copy()
    for k, i in enumerate(range(2, len(offsets), 5)):
        o, n = int(offsets[i]), int(lengths[i])
        how = k % 6
        if how == 0:
            buf[o + 19] ^= 0x5A                       # checksum
        elif how == 1:
            buf[o] = 5                                # version
        elif how == 2:
            lengths[i] = 12                           # shorter than the header
        elif how == 3:
            buf[o + 10] = min(255, int(buf[o + 10]) + 3)  # more messages than fit
        elif how == 4:
            buf[o + 21 + 1] = ord("~")                # the first message's category
        else:
            lengths[i] = n - 1                        # cut: block_size past the datagram
        if how in (3, 4):
            c = checksum(bytes(buf[o:o + n]))
            buf[o + 19], buf[o + 20] = c >> 8, c & 0xFF
    return buf, offsets, lengths


def test_obi_blocks_give_the_record_paths_ticks(blocks) -> None:
    buf, offsets, lengths, ts = blocks
    out = ArrowTickDecoder(feed="obi").decode(buf, offsets, lengths, ts, ROOTS)
    ref, dec = _record_path(buf, offsets, lengths, ts)
    assert ref.num_rows == 6000 and not out.errors
    assert out.batch.schema.equals(TICK_FILE_SCHEMA)
    assert out.batch.equals(ref)
    out.batch.validate(full=True)
    assert out.counters == dec.counters
    assert set(out.batch.column("category").unique().to_pylist()) >= {"k", "a"}
    assert out.batch.column("underlying").null_count < out.batch.num_rows


def test_broken_blocks_are_skipped_and_counted_the_same(blocks) -> None:
    buf, offsets, lengths, ts = _break(*blocks[:3]) + (blocks[3],)
    out = ArrowTickDecoder(feed="obi", max_errors=4096).decode(buf, offsets, lengths, ts, ROOTS, first_packet_index=7)
    ref, dec = _record_path(buf, offsets, lengths, ts)
    names = {"CHECKSUM", "BAD_VERSION", "TRUNCATED", "MSG_PAST_BLOCK", "UNKNOWN_CATEGORY", "SIZE_PAST_DATAGRAM"}
    assert names <= set(out.counters) and out.counters["packets_bad"] == len(range(2, len(offsets), 5))
    assert out.counters == dec.counters
    assert out.batch.equals(ref)
    assert [(e.code, e.packet_index - 7, e.offset, e.message_index, e.category) for e in out.errors] == [
        (e.code, e.packet_index, e.offset, e.message_index, e.category) for e in dec.errors]


def test_dictionary_split_and_counted_modes_hold_the_same_rows(blocks) -> None:
    buf, offsets, lengths, ts = _break(*blocks[:3]) + (blocks[3],)
    plain = ArrowTickDecoder(feed="obi").decode(buf, offsets, lengths, ts, ROOTS).batch
    dec = ArrowTickDecoder(feed="obi", dictionary=True, split=True, count=True)  # batches kept: no reuse
    rows, quotes, rest = [], 0, 0
    for s in range(0, len(offsets), 97):
        e = min(len(offsets), s + 97)
        done = dec.decode(buf, offsets[s:e], lengths[s:e], ts[s:e], ROOTS, s)
        for b in done.batches:
            assert b.schema.equals(TICK_FILE_DICT_SCHEMA)
            rows.append(pa.Table.from_batches([b]).cast(TICK_FILE_SCHEMA))
        quotes += done.batch.num_rows if done.batch is not None else 0
        rest += done.rest.num_rows if done.rest is not None else 0
        # each good block: its rows and its first message's sequence number; a bad one 0 and -1
        one = ObiBatchDecoder().decode(buf, offsets[s:e], lengths[s:e], s)
        assert done.packet_rows.tolist() == one.blocks["count"].tolist()
        first = np.where(one.blocks["count"] > 0, one.records["msg_seq"][one.blocks["first"] % max(1, len(one.records))], -1)
        assert done.packet_seq.tolist() == first.astype(np.int64).tolist()
    got = pa.concat_tables(rows).sort_by([("ts_ns", "ascending"), ("msg_index", "ascending")])
    want = pa.Table.from_batches([plain]).sort_by([("ts_ns", "ascending"), ("msg_index", "ascending")])
    assert got.equals(want)
    assert quotes == int(pc.sum(pc.equal(plain.column("category"), "k")).as_py()) and rest == plain.num_rows - quotes


def test_row_bound_reads_whole_headers_inside_the_buffer(blocks) -> None:
    buf, offsets, lengths, _ = blocks
    n = len(offsets)
    bound = lib.omdp_obi_arrow_row_bound(ffi.from_buffer("uint8_t[]", buf), len(buf),
                                         ffi.from_buffer("uint64_t[]", np.ascontiguousarray(offsets, np.uint64)),
                                         ffi.from_buffer("uint32_t[]", np.ascontiguousarray(lengths, np.uint32)), n)
    assert bound == 6000
    last = np.array([len(buf) - 10], np.uint64)   # a header that would run past the buffer
    assert lib.omdp_obi_arrow_row_bound(ffi.from_buffer("uint8_t[]", buf), len(buf), ffi.from_buffer("uint64_t[]", last),
                                        ffi.from_buffer("uint32_t[]", np.array([21], np.uint32)), 1) == 0
    assert lib.omdp_obi_arrow_row_bound(ffi.NULL, 0, ffi.NULL, ffi.NULL, 3) == 0


def test_the_feed_is_checked() -> None:
    with pytest.raises(ValueError, match="feed"):
        ArrowTickDecoder(feed="itch")
