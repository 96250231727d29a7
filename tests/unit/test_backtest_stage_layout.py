"""The backtest's staged records (feed_stage.h, ops/spark/backtest/backtest_stage.py): the numpy
dtypes are the C structs (tests/unit/test_c_layout.py pins them); packing and expanding keep
every field the engine stage reads (the series and the appendage through the line's
tables), zero the rest; the series table holds each series once; packing gathers by an
order and refuses one that points outside the input or flags that do not fit; a line's
staged files merge back in time order (capture time, then line); a part that is not whole
records, or a missing table, is refused with its path; a line's sizes count each bucket's
series and (underlying, expiry) groups. Run under ASan/UBSan in CI (the name
matches ``layout``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi
from omdp.record import RT_OPRA_MSG
from ops.spark.backtest.backtest_stage import (NO_EXTRA, NO_ROUTE, SERIES_DTYPE, STAGE_DTYPE, BucketSizes,
                                               BucketWriter, StagedBucket, StagedPart, StageTables, pack, read_bucket,
                                               stage_path, table_path)

KEPT = ["msg_seq", "block_seq", "bid_px", "offer_px", "bid_size", "offer_size", "time", "category", "participant",
        "bbo_ind", "strike_px", "expiry", "underlying_id", "root", "root_len", "put_call", "best_bid_px",
        "best_offer_px", "best_bid_size", "best_offer_size", "best_bid_part", "best_offer_part"]
ZEROED = ["fields", "underlying_raw", "premium_px", "strike", "volume", "open_interest", "bid", "offer", "var_off",
          "var_len", "index", "y_count", "msg_type", "retrans", "session", "premium_den"]


def _records(n: int, seed: int = 1, series: int = 40) -> np.ndarray:
    """Random records over a few series (random bytes elsewhere), time-ordered, flags in a
    byte, an appendage on about a third."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(n, OPRA_MSG_DTYPE.itemsize), dtype=np.uint8)
    rec = raw.view(OPRA_MSG_DTYPE).reshape(n).copy()
    series = min(series, n)
    pick = rng.integers(0, series, n)
    base = rec[:series].copy()
    for name in ("strike_px", "expiry", "underlying_id", "root", "put_call"):
        rec[name] = base[name][pick]
    rec["root_len"] = rng.integers(0, 7, series)[pick]
    rec["hdr"]["flags"] &= 0xFF
    rec["hdr"]["stamps"]["fh_in"] = np.sort(rng.integers(0, 1 << 40, n))
    no_app = rng.random(n) < 0.7
    for name in ("best_bid_px", "best_offer_px", "best_bid_size", "best_offer_size", "best_bid_part",
                 "best_offer_part"):
        rec[name][no_app] = 0
    return rec


def _part(staged: np.ndarray, tables: StageTables, line: int = 1) -> StagedPart:
    return StagedPart(line, staged, tables.series(), tables.extras())


def test_pack_expand_keep_the_staged_fields_and_zero_the_rest() -> None:
    rec = _records(2000)
    tables = StageTables()
    staged = pack(rec, tables)
    assert len(tables.series()) == len(np.unique(rec[["strike_px", "expiry", "underlying_id", "root", "root_len",
                                                      "put_call"]]))
    has_app = (rec["best_bid_px"] != 0) | (rec["best_offer_px"] != 0) | (rec["best_bid_size"] != 0) | \
        (rec["best_offer_size"] != 0) | (rec["best_bid_part"] != 0) | (rec["best_offer_part"] != 0)
    assert np.array_equal(staged["extra"] != NO_EXTRA, has_app) and len(tables.extras()) == has_app.sum()
    back = next(StagedBucket([_part(staged, tables, line=7)], [Path("x")]).merged(
        np.empty(len(rec), OPRA_MSG_DTYPE))).copy()
    for name in KEPT:
        assert np.array_equal(back[name], rec[name]), name
    for name in ZEROED:
        assert (back[name] == 0).all(), name
    assert (back["line"] == 7).all()
    assert np.array_equal(back["hdr"]["stamps"]["fh_in"], rec["hdr"]["stamps"]["fh_in"])
    assert np.array_equal(back["hdr"]["stamps"]["intended"], rec["hdr"]["stamps"]["fh_in"])
    assert np.array_equal(back["hdr"]["flags"], rec["hdr"]["flags"])
    assert (back["hdr"]["type"] == RT_OPRA_MSG).all() and (back["hdr"]["length"] == 256).all()


def test_an_order_gathers_and_bad_input_is_refused() -> None:
    rec = _records(300, seed=2)
    order = np.arange(299, -1, -3)
    staged = pack(rec, StageTables(), order)
    assert np.array_equal(staged["msg_seq"], rec["msg_seq"][order])
    with pytest.raises(ValueError, match="out of range"):
        pack(rec, StageTables(), np.array([0, 300]))
    with pytest.raises(ValueError, match="at least 5"):
        pack(rec[:5], StageTables(), out=np.empty(4, STAGE_DTYPE))
    wide = rec.copy()
    wide["hdr"]["flags"][3] = 0x100
    with pytest.raises(ValueError, match="flags"):
        pack(wide, StageTables())
    buf = np.empty(len(rec) + 3, STAGE_DTYPE)
    assert np.array_equal(pack(rec, StageTables(), out=buf), pack(rec, StageTables()))


def test_lines_merge_back_in_time_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lines = {}
    for line in (2, 1, 3):
        rec = _records(500, seed=line)
        rec["hdr"]["stamps"]["fh_in"] = np.sort(rng.integers(0, 200, 500))  # ties across lines
        rec["line"] = line
        rec["msg_seq"] = np.arange(500)
        engines = rng.integers(0, 2, 500).astype(np.uint16)
        with BucketWriter(tmp_path, line, 2) as w:
            for s in range(0, 500, 128):                    # a chunk at a time: one table for the line
                w.write(rec[s:s + 128], engines[s:s + 128])
        lines[line] = (rec, engines)
    for bucket in (0, 1):
        got = np.concatenate([c.copy() for c in read_bucket(tmp_path, bucket, [3, 1, 2]).merged(
            np.empty(100, OPRA_MSG_DTYPE))])                # 100 at a time: the merge goes on where it stopped
        want = np.concatenate([lines[ln][0][lines[ln][1] == bucket] for ln in (1, 2, 3)])
        key = np.lexsort((want["line"], want["hdr"]["stamps"]["fh_in"]))  # stable: line, then the line's order
        for name in ("msg_seq", "line", "root", "strike_px", "best_bid_px"):
            assert np.array_equal(got[name], want[name][key]), name
    bad = stage_path(tmp_path, 0, 2)
    bad.write_bytes(bad.read_bytes()[:-5])
    with pytest.raises(ValueError, match="line02.stage"):
        read_bucket(tmp_path, 0, [1, 2, 3])
    table_path(tmp_path, 3, "series").unlink()
    with pytest.raises(FileNotFoundError, match="line03.series"):
        read_bucket(tmp_path, 1, [1, 3])


def test_a_failed_line_leaves_no_part(tmp_path: Path) -> None:
    rec = _records(10)
    with pytest.raises(ValueError, match="engine 3 of 2"):
        with BucketWriter(tmp_path, 1, 2) as w:
            w.write(rec, np.array([0, 1, 3, 0, 0, 0, 0, 0, 0, 0], np.uint16))
    assert not list(tmp_path.rglob("*line01*"))


def test_route_array_is_the_c_route_table() -> None:
    """backtest_feed.route_array builds omdp_fh_route_t entries in numpy: the same bytes as a
    cffi array filled entry by entry; a root that cannot be one is refused by name."""
    from ops.spark.backtest.backtest_feed import Routes, route_array

    routes = Routes(3, ("IBM", "A", "QQQQQ", "SPXW12"), (0, 7, 70_000, 2**32 - 2), (2, 0, 1, 2))
    want = ffi.new("omdp_fh_route_t[]", 4)
    for i, (root, uid, eng) in enumerate(zip(routes.roots, routes.underlying_ids, routes.root_engines)):
        ffi.memmove(want[i].root, root.encode(), len(root))
        want[i].underlying_id, want[i].engine = uid, eng
    assert route_array(routes).tobytes() == bytes(ffi.buffer(want))
    assert len(route_array(Routes(1, (), (), ()))) == 1
    for bad in ("TOOLONGROOT", "IBMé"):
        with pytest.raises(ValueError, match="root"):
            route_array(Routes(1, (bad,), (0,), (0,)))


def test_bucket_sizes_count_series_and_groups_per_bucket() -> None:
    series = np.zeros(6, SERIES_DTYPE)
    series["underlying_id"] = [1, 1, 1, 2, 3, 3]
    series["expiry"] = [20080216, 20080216, 20080322, 20080216, 20080216, 20080216]
    routes = np.array([0, 0, 0, 1, 1 | (2 << 24), NO_ROUTE], dtype=np.uint32)  # the top byte is routing's answer
    sizes = BucketSizes.of(series, routes, 3)
    # bucket 0: three series in two groups; bucket 1: two series, two groups; the unrouted
    # series counts in every bucket with its group
    assert sizes.series == (4, 3, 1) and sizes.groups == (3, 3, 1)
    with pytest.raises(ValueError, match="bucket 1 of 1"):
        BucketSizes.of(series, routes, 1)


def test_series_entered_by_pack_carry_no_route() -> None:
    """The offline feed handler routes every series it stages; ``pack`` routes none (the
    sizes then count them in every bucket)."""
    rec = _records(40)
    tables = StageTables()
    pack(rec, tables)
    assert len(tables.routes()) == len(tables.series()) > 0
    assert (tables.routes() == NO_ROUTE).all()
