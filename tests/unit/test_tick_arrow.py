"""The C decode straight into Arrow columns (ops.spark.feeds.tick_arrow, native opra_arrow.c) gives
the same tick batches, field by field, as decoding to records and converting them
(BatchDecoder + ticks_batch), on a synthetic day's capture and on one with malformed packets;
bad packets are skipped and counted with the same errors. With dictionary columns (what the
feeds task writes) the values are the same and a tick file written from them reads back,
with the tick file's string types (the never-null columns REQUIRED), equal to the string
batches, the prices dictionary- and the quantities delta-encoded; split into quotes and the
rest (what the feeds task writes), chunk by chunk with reused buffers, the file holds the same
rows, every quote row group without a null in the columns a quote carries."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from feedhandlers.captures import read_pcap
from feedhandlers.opra_fast import BatchDecoder
from ops.spark.common.data_layout import DataLayout
from ops.spark.feeds.capture_decode import TICK_FILE_WRITE_OPTIONS
from ops.spark.feeds.manifest_roots import load_root_map
from ops.spark.feeds.tick_arrow import DICT_COLUMNS, NEVER_NULL, TICK_FILE_DICT_SCHEMA, ArrowTickDecoder
from ops.spark.feeds.tick_table import TICK_FILE_SCHEMA, ticks_batch
from ops.synth.generator import SynthConfig, synthesize

DATE = dt.date(2008, 2, 4)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    data = tmp_path_factory.mktemp("synth")
    synthesize(SynthConfig(data=data, date=DATE, seconds=0.5, rate=1.0, seed=3, num_lines=2, progress=False))
    layout = DataLayout(data)
    files = layout.capture_files(DATE.isoformat(), "A")
    roots = load_root_map(layout.manifest(DATE.isoformat()))
    big = max(files, key=lambda f: f.size)
    cap = read_pcap(big.path)
    return np.array(cap.buf), np.asarray(cap.offsets), np.asarray(cap.lengths), np.asarray(cap.ts_ns), roots


def _record_path(buf, offsets, lengths, ts_ns, roots):
    dec = BatchDecoder(max_packets=len(offsets))
    b = dec.decode(buf, offsets, lengths, 0)
    counts = np.asarray(b.pkt_count, np.int64)
    pkt = np.repeat(np.arange(len(offsets)), counts)
    batch = ticks_batch(
        b.records, ts_ns=ts_ns[pkt], packet_messages=counts[pkt], packet_bytes=np.asarray(lengths, np.int64)[pkt],
        root_map=roots,
    )
    return batch, b.errors, b.counters


def _same(arrow, ref) -> None:
    assert arrow.schema.equals(TICK_FILE_SCHEMA)
    assert arrow.num_rows == ref.num_rows
    for name in TICK_FILE_SCHEMA.names:
        a, r = arrow.column(name), ref.column(name)
        assert a.null_count == r.null_count, name
        assert a.equals(r), name
    assert arrow.equals(ref)
    arrow.validate(full=True)


@pytest.mark.full
def test_arrow_path_equals_record_path(capture) -> None:
    buf, offsets, lengths, ts_ns, roots = capture
    out = ArrowTickDecoder().decode(buf, offsets, lengths, ts_ns, roots)
    ref, errors, counters = _record_path(buf, offsets, lengths, ts_ns, roots)
    assert ref.num_rows > 1000 and not errors
    _same(out.batch, ref)
    assert out.counters == counters
    assert set(out.batch.column("category").unique().to_pylist()) >= {"k", "a"}
    assert out.batch.column("underlying").null_count < out.batch.num_rows


def _corrupt(buf, offsets, lengths, rng):
    """Copies of the packets with every 7th one broken in one of several ways."""
    buf = buf.copy()
    lengths = lengths.astype(np.int64).copy()
    for k, i in enumerate(range(3, len(offsets), 7)):
        o, n = int(offsets[i]), int(lengths[i])
        how = k % 6
        if how == 0:
            buf[o] = 0x00  # SOH
        elif how == 1:
            buf[o + n - 1] = 0x00  # ETX
        elif how == 2:
            lengths[i] = min(n, 10)  # shorter than the header
        elif how == 3:
            buf[o + 12] = ord("x")  # count not digits
        elif how == 4:
            lengths[i] = n - 5  # cut inside a message
            buf[o + n - 6] = 0x03
        else:
            buf[o + 15 : o + n - 1] = rng.integers(0, 256, n - 16, dtype=np.uint8)  # garbage body
    return buf, offsets, lengths


def test_malformed_packets_are_skipped_and_counted_the_same(capture) -> None:
    buf, offsets, lengths, ts_ns, roots = capture
    bad_buf, offsets, bad_len = _corrupt(buf, offsets, lengths, np.random.default_rng(5))
    dec = ArrowTickDecoder(max_errors=4096)
    out = dec.decode(bad_buf, offsets, bad_len, ts_ns, roots, first_packet_index=100)
    ref, errors, counters = _record_path(bad_buf, offsets, bad_len, ts_ns, roots)
    assert counters["packets_bad"] > 50
    _same(out.batch, ref)
    assert out.counters == counters
    assert [(e.code, e.packet_index - 100, e.offset, e.message_index, e.slot) for e in out.errors] == [
        (e.code, e.packet_index, e.offset, e.message_index, e.slot) for e in errors
    ]
    assert dec.counters == counters


def test_chunks_and_empty_runs(capture) -> None:
    buf, offsets, lengths, ts_ns, roots = capture
    dec = ArrowTickDecoder()
    parts = [dec.decode(buf, offsets[s : s + 333], lengths[s : s + 333], ts_ns[s : s + 333], roots, s).batch
             for s in range(0, len(offsets), 333)]
    whole = pa.Table.from_batches([p for p in parts if p is not None]).combine_chunks()
    ref, _, _ = _record_path(buf, offsets, lengths, ts_ns, roots)
    assert whole.equals(pa.Table.from_batches([ref]).combine_chunks())
    empty = dec.decode(buf, offsets[:0], lengths[:0], ts_ns[:0], roots)
    assert empty.batch is None and empty.counters["packets"] == 0
    with pytest.raises(ValueError):
        dec.decode(buf, np.array([len(buf) - 4]), np.array([10]), np.array([0]), roots)



def test_dictionary_columns_hold_the_same_values_and_write_string_files(capture, tmp_path: Path) -> None:
    buf, offsets, lengths, ts_ns, roots = capture
    roots = dict(list(roots.items())[: len(roots) // 2])   # half the roots without an underlying: nulls
    plain = ArrowTickDecoder().decode(buf, offsets, lengths, ts_ns, roots).batch
    dec = ArrowTickDecoder(reuse=True, dictionary=True)
    path = tmp_path / "ticks.parquet"
    with pq.ParquetWriter(path, TICK_FILE_DICT_SCHEMA, **TICK_FILE_WRITE_OPTIONS) as w:
        for s in range(0, len(offsets), 500):
            b = dec.decode(buf, offsets[s:s + 500], lengths[s:s + 500], ts_ns[s:s + 500], roots, s).batch
            assert b.schema.equals(TICK_FILE_DICT_SCHEMA)
            b.validate(full=True)
            w.write_batch(b)
    whole = dec.decode(buf, offsets, lengths, ts_ns, roots).batch
    for name in DICT_COLUMNS:
        assert whole.column(name).cast(pa.string()).equals(plain.column(name)), name
    assert plain.column("underlying").null_count > 0
    back = pq.read_table(path)
    assert back.schema.names == TICK_FILE_SCHEMA.names and back.schema.types == TICK_FILE_SCHEMA.types
    assert [f.name for f in back.schema if not f.nullable] == list(NEVER_NULL)
    assert back.cast(TICK_FILE_SCHEMA).equals(pa.Table.from_batches([plain]))
    group = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    assert "RLE_DICTIONARY" in encodings["bid_px"] and "DELTA_BINARY_PACKED" in encodings["bid_size"]


def test_split_chunks_write_the_same_rows_quotes_without_nulls(capture, tmp_path: Path) -> None:
    buf, offsets, lengths, ts_ns, roots = capture
    plain = ArrowTickDecoder().decode(buf, offsets, lengths, ts_ns, roots).batch
    dec = ArrowTickDecoder(reuse=True, dictionary=True, split=True)
    path = tmp_path / "ticks.parquet"
    quotes = rest = 0
    with pq.ParquetWriter(path, TICK_FILE_DICT_SCHEMA, **TICK_FILE_WRITE_OPTIONS) as w:
        for s in range(0, len(offsets), 500):
            out = dec.decode(buf, offsets[s:s + 500], lengths[s:s + 500], ts_ns[s:s + 500], roots, s)
            for b in out.batches:
                b.validate(full=True)
                w.write_batch(b)
            quotes += out.batch.num_rows
            rest += out.rest.num_rows if out.rest is not None else 0
            assert set(out.batch.column("category").to_pylist()) == {"k"}
            carried = ("expiry", "put_call", "strike_px", "bid_px", "bid_size", "offer_px", "offer_size")
            assert all(out.batch.column(n).null_count == 0 for n in carried)
    assert quotes > 1000 and rest > 0 and quotes + rest == plain.num_rows
    order = [("block_seq", "ascending"), ("msg_index", "ascending")]
    back = pq.read_table(path).cast(TICK_FILE_SCHEMA).sort_by(order)
    assert back.equals(pa.Table.from_batches([plain]).sort_by(order))
