"""The C decode into Arrow columns (opra_arrow.c) in the feeds task's dictionary mode - the
one-character columns written as codes only (no strings) and the root column as one string
per distinct root (``roots_only``) - holds the same values as the string mode, on random
valid packets, on packets with roots of every length and on packets broken at random (whose
bytes land in roots and characters as they fall), every buffer sized exactly for the rows
the headers declare; split into quotes and the rest (``rest_row``), the same rows, quotes
in one region and every other message in the other, each in packet order, and counted
(``count``: the rows of each packet, the quotes of each distinct root); the row bound
that sizes them (``omdp_opra_arrow_row_bound``) reads only whole headers inside the buffer.
Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from feedhandlers.opra_fast import encode_stream
from ops.bench.random_capture import random_packets, random_records
from ops.spark.feeds.tick_arrow import DICT_COLUMNS, ArrowTickDecoder


def _both(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, roots: dict[str, str]) -> tuple:
    ts = np.arange(len(offsets), dtype=np.int64) * 1000
    plain = ArrowTickDecoder(max_errors=64).decode(buf, offsets, lengths, ts, roots)
    dic = ArrowTickDecoder(max_errors=64, reuse=True, dictionary=True).decode(buf, offsets, lengths, ts, roots)
    split = ArrowTickDecoder(max_errors=64, reuse=True, dictionary=True, split=True, count=True).decode(
        buf, offsets, lengths, ts, roots)
    _split_same(dic, split)
    _counted(dic, split, len(offsets))
    return plain, dic


def _counted(dic, split, packets: int) -> None:
    """The counting call's rows per packet and quotes per root are the rows' own."""
    rows = dic.batch.column("ts_ns").to_numpy() // 1000 if dic.batch is not None else np.zeros(0, np.int64)
    assert split.packet_rows.tolist() == np.bincount(rows, minlength=packets).tolist()
    if split.batch is None:
        assert not split.root_quotes.any()
        return
    root, under = split.batch.column("root"), split.batch.column("underlying")
    assert split.root_quotes.tolist() == np.bincount(root.indices.to_numpy(), minlength=len(root.dictionary)).tolist()
    # each quote's underlying is its root's
    got = np.asarray(split.root_underlying)[root.indices.to_numpy()]
    want = np.where(under.is_valid().to_numpy(zero_copy_only=False), under.indices.fill_null(0).to_numpy(), len(under.dictionary))
    assert got.tolist() == want.tolist()


def _split_same(dic, split) -> None:
    """The split call's quotes and rest are the unsplit rows with category 'k' and the
    others, each in packet order; same counters and errors."""
    assert split.counters == dic.counters
    assert [e.code for e in split.errors] == [e.code for e in dic.errors]
    if dic.batch is None:
        assert split.batches == []
        return
    quote = pc.fill_null(pc.equal(dic.batch.column("category").cast(pa.string()), "k"), False)
    for got, want in ((split.batch, dic.batch.filter(quote)), (split.rest, dic.batch.filter(pc.invert(quote)))):
        if want.num_rows == 0:
            assert got is None
            continue
        got.validate(full=True)
        for name in want.schema.names:
            cast = pa.string() if name in DICT_COLUMNS else want.schema.field(name).type
            assert got.column(name).cast(cast).equals(want.column(name).cast(cast)), name


def _same_values(plain, dic) -> None:
    assert (plain.batch is None) == (dic.batch is None)
    assert plain.counters == dic.counters
    assert [e.code for e in plain.errors] == [e.code for e in dic.errors]
    if plain.batch is None:
        return
    dic.batch.validate(full=True)
    for name in plain.batch.schema.names:
        got = dic.batch.column(name)
        if name in DICT_COLUMNS:
            got = got.cast(pa.string())
        assert got.equals(plain.batch.column(name)), name


def test_dictionary_mode_equals_string_mode_on_random_packets() -> None:
    buf, offsets, lengths = random_packets(3000, seed=4)
    buf = buf.copy()                                # exactly the packets' bytes
    plain, dic = _both(buf, offsets, lengths, {"A": "AAA"})
    assert plain.batch.num_rows == 3000
    assert 0 < pc.sum(pc.equal(plain.batch.column("category"), "k")).as_py() < 3000   # both regions written
    _same_values(plain, dic)
    assert dic.batch.column("root").dictionary.to_pylist() == plain.batch.column("root").unique().to_pylist()


def test_roots_of_every_length() -> None:
    r = random_records(400, seed=9)
    for k, root in enumerate((b"Q", b"QQ", b"QQQQQ", b"QQQQQQ")):
        r["root"][k::4] = root                      # 6 bytes: cut to the field's 5
    raw, offsets, lengths, _ = encode_stream(r, b"", np.full(64, 9))
    buf = np.frombuffer(raw, dtype=np.uint8).copy()
    plain, dic = _both(buf, offsets, lengths, {"QQ": "X"})
    assert plain.batch is not None and not plain.errors
    _same_values(plain, dic)
    assert set(dic.batch.column("root").dictionary.to_pylist()) >= {"Q", "QQ", "QQQQQ"}


def test_broken_packets_decode_the_same_in_both_modes() -> None:
    rng = np.random.default_rng(21)
    buf, offsets, lengths = random_packets(4000, seed=6)
    buf = buf.copy()
    lengths = lengths.copy()
    for i in range(0, len(offsets), 5):
        o, n = int(offsets[i]), int(lengths[i])
        if i % 10 == 0:
            buf[o + rng.integers(0, n, 6)] = rng.integers(0, 256, 6, dtype=np.uint8)
        else:
            lengths[i] = rng.integers(0, n)
    plain, dic = _both(buf, offsets, lengths, {})
    assert plain.counters["packets_bad"] > 0
    _same_values(plain, dic)
    assert dic.batch.column("underlying").null_count == dic.batch.num_rows


def test_split_needs_the_dictionary_mode() -> None:
    import pytest

    from omdp.native import ffi, lib

    with pytest.raises(ValueError):
        ArrowTickDecoder(split=True)
    buf, offsets, lengths = random_packets(200, seed=3)
    cols = ffi.new("omdp_opra_arrow_cols_t*")     # per-row root strings (roots_only 0) and a rest_row
    cols.row_cap, cols.rest_row = 512, 256
    res = ffi.new("omdp_opra_arrow_result_t*")
    ts = np.zeros(len(offsets), np.int64)
    status = lib.omdp_opra_decode_arrow(
        ffi.from_buffer("uint8_t[]", buf), ffi.from_buffer("uint64_t[]", np.asarray(offsets, np.uint64)),
        ffi.from_buffer("uint32_t[]", np.asarray(lengths, np.uint32)), ffi.from_buffer("int64_t[]", ts),
        len(offsets), 0, cols, ffi.NULL, 0, ffi.NULL, res)
    assert status == lib.OMDP_OPRA_E_CAPACITY and res.rows == 0   # refused before any write


def test_row_bound_sums_the_header_counts_and_skips_what_cannot_decode() -> None:
    from omdp.native import ffi, lib

    def bound(buf: bytes, offsets: list[int], lengths: list[int]) -> int:
        src = np.frombuffer(buf, np.uint8).copy()   # exactly the bytes: ASan sees a read past them
        return int(lib.omdp_opra_arrow_row_bound(
            ffi.from_buffer("uint8_t[]", src), len(src), ffi.from_buffer("uint64_t[]", np.array(offsets, np.uint64)),
            ffi.from_buffer("uint32_t[]", np.array(lengths, np.uint32)), len(offsets)))

    head = b"\x01" + b"x" * 11                       # SOH, then the header bytes before the count
    buf = head + b"007" + b"y" * 5 + head + b"123" + head + b"1a3"
    assert bound(buf, [0, 20, 35], [20, 15, 15]) == 7 + 123   # "1a3" is not a count
    assert bound(buf, [0, 20], [14, 15]) == 123                # shorter than the header
    assert bound(buf, [len(buf) - 10, len(buf) + 5], [15, 15]) == 0   # past the buffer's end
    assert lib.omdp_opra_arrow_row_bound(ffi.NULL, 0, ffi.NULL, ffi.NULL, 3) == 0
    buf, offsets, lengths = random_packets(500, seed=2)
    assert bound(buf.tobytes(), list(offsets), list(lengths)) == 500
