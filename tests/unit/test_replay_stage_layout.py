"""The replay's staged records (feed_stage.h, ops/spark/replay_stage.py): the numpy twin
pins the C struct; packing and expanding keep every staged field, zero the rest; packing
gathers by an order and refuses one that points outside the input; a line's staged files merge back
in time order (capture time, then line); a part that is not whole records is refused with
its path. Run under ASan/UBSan in CI (the name matches ``layout``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi
from omdp.record import RT_OPRA_MSG
from ops.spark.replay_stage import STAGE_DTYPE, BucketWriter, StagedBucket, pack, read_bucket, stage_path

STAGED = [n for n in STAGE_DTYPE.names if n not in ("ts_ns", "flags", "reserved")]


def test_stage_dtype_matches_the_c_struct() -> None:
    assert STAGE_DTYPE.itemsize == ffi.sizeof("omdp_fh_staged_t") == 128
    for name in STAGE_DTYPE.names:
        assert STAGE_DTYPE.fields[name][1] == ffi.offsetof("omdp_fh_staged_t", name), name


def _records(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(n, OPRA_MSG_DTYPE.itemsize), dtype=np.uint8)
    rec = raw.view(OPRA_MSG_DTYPE).reshape(n).copy()
    rec["root_len"] = rng.integers(0, 7, n)
    return rec


def _expand(staged: np.ndarray, path: Path) -> np.ndarray:
    """Staged records (in time order) back to full records, through a one-part merge."""
    staged.tofile(path)
    return next(StagedBucket([path]).merged(np.empty(len(staged), OPRA_MSG_DTYPE))).copy()


def test_pack_expand_keep_the_staged_fields_and_zero_the_rest(tmp_path: Path) -> None:
    rec = _records(1000)
    rec = rec[np.argsort(rec["hdr"]["stamps"]["fh_in"].view(np.int64), kind="stable")]
    back = _expand(pack(rec), tmp_path / "line01.stage")
    for name in STAGED:
        assert np.array_equal(back[name], rec[name]), name
    assert np.array_equal(back["hdr"]["stamps"]["fh_in"], rec["hdr"]["stamps"]["fh_in"])
    assert np.array_equal(back["hdr"]["stamps"]["intended"], rec["hdr"]["stamps"]["fh_in"])
    assert np.array_equal(back["hdr"]["flags"], rec["hdr"]["flags"])
    assert (back["hdr"]["type"] == RT_OPRA_MSG).all() and (back["hdr"]["length"] == 256).all()
    for name in ("fields", "underlying_raw", "strike", "bid", "offer", "var_off", "var_len", "y_count"):
        assert (back[name] == 0).all(), name


def test_an_order_gathers_and_an_out_of_range_one_is_refused() -> None:
    rec = _records(300, seed=2)
    order = np.arange(299, -1, -3)
    staged = pack(rec, order)
    assert np.array_equal(staged["msg_seq"], rec["msg_seq"][order])
    with pytest.raises(ValueError, match="out of range"):
        pack(rec, np.array([0, 300]))
    with pytest.raises(ValueError, match="at least 5"):
        pack(rec[:5], out=np.empty(4, STAGE_DTYPE))
    buf = np.empty(len(rec) + 3, STAGE_DTYPE)
    assert np.array_equal(pack(rec, out=buf), pack(rec)) and len(pack(rec, out=buf)) == len(rec)


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
            for s in range(0, 500, 128):                    # a chunk at a time
                w.write(rec[s:s + 128], engines[s:s + 128])
        lines[line] = (rec, engines)
    for bucket in (0, 1):
        got = np.concatenate([c.copy() for c in read_bucket(tmp_path, bucket, [3, 1, 2]).merged(
            np.empty(100, OPRA_MSG_DTYPE))])                # 100 at a time: the merge goes on where it stopped
        want = np.concatenate([lines[ln][0][lines[ln][1] == bucket] for ln in (1, 2, 3)])
        key = np.lexsort((want["line"], want["hdr"]["stamps"]["fh_in"]))  # stable: line, then the line's order
        assert np.array_equal(got["msg_seq"], want["msg_seq"][key])
        assert np.array_equal(got["line"], want["line"][key])
    bad = stage_path(tmp_path, 0, 2)
    bad.write_bytes(bad.read_bytes()[:-5])
    with pytest.raises(ValueError, match="line02.stage"):
        read_bucket(tmp_path, 0, [1, 2, 3])


def test_a_failed_line_leaves_no_part(tmp_path: Path) -> None:
    rec = _records(10)
    with pytest.raises(ValueError, match="engine 3 of 2"):
        with BucketWriter(tmp_path, 1, 2) as w:
            w.write(rec, np.array([0, 1, 3, 0, 0, 0, 0, 0, 0, 0], np.uint16))
    assert not list(tmp_path.rglob("*line01*"))
