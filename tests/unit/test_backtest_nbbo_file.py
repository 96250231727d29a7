"""The NBBO file streamed a row group at a time: the same rows as converting all the changes
at once, each row group naming only the distinct roots it uses, nothing left behind on abort."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from ops.spark.backtest.backtest_nbbo import BACKTEST_NBBO_SCHEMA, NbboFile, RootNames, nbbo_arrow


def changes(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = np.zeros(n, NBBO_CHANGE_DTYPE)
    c["ts_ns"] = np.arange(n) * 1_000
    c["msg_seq"] = np.arange(n) + 1
    c["line"] = rng.integers(1, 25, n)
    c["slot"] = rng.integers(0, 300, n) * 7            # sparse slots, as an engine's are
    c["root"] = [f"R{s % 97:02d}".encode().ljust(6, b" ") for s in c["slot"]]
    c["root_len"] = 3
    c["strike_px"] = (c["slot"].astype(np.int64) + 1) * 1_000_000_000
    c["put_call"] = np.where(c["slot"] % 2 == 0, ord("C"), ord("P"))
    c["bid_px"] = rng.integers(1, 500, n) * 10_000_000
    c["bid_size"] = rng.integers(1, 100, n)
    c["bid_part"] = np.where(rng.random(n) < 0.1, 0, ord("C"))   # some with no bid: null
    c["offer_px"] = c["bid_px"] + 50_000_000
    c["offer_size"] = rng.integers(1, 100, n)
    c["offer_part"] = ord("X")
    c["quote_part"] = ord("I")
    c["underlying_id"] = c["slot"] // 70
    c["expiry"] = 20080216
    return c


@pytest.mark.parametrize("feed", [1, 333, 5_000])
def test_streamed_rows_equal_converting_all_at_once(tmp_path: Path, feed: int) -> None:
    c = changes(5_000)
    f = NbboFile(tmp_path / "nbbo.parquet", row_group=1_024)
    for s in range(0, len(c), feed):
        f.extend(c[s:s + feed])
    assert f.close() == len(c)
    back = pq.read_table(tmp_path / "nbbo.parquet")
    assert back.schema == BACKTEST_NBBO_SCHEMA
    assert back.to_pylist() == nbbo_arrow(c).cast(BACKTEST_NBBO_SCHEMA).to_pylist()
    meta = pq.ParquetFile(tmp_path / "nbbo.parquet").metadata
    assert meta.num_row_groups == 5 and meta.row_group(4).num_rows == 5_000 - 4 * 1_024
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbbo.parquet"]


def test_a_row_group_names_only_its_roots() -> None:
    c = changes(2_000)
    c["slot"][:1_000] += 5_000     # the later rows use lower slots than the earlier ones
    roots = RootNames()
    for part in (c[:1_000], c[1_000:1_010]):
        col = nbbo_arrow(part, roots).column("root").chunk(0)
        assert sorted(col.dictionary.to_pylist()) == sorted({bytes(r).decode().strip() for r in part["root"]})
        assert col.to_pylist() == [bytes(r).decode().strip() for r in part["root"]]


def test_abort_leaves_nothing_and_an_empty_bucket_has_its_file(tmp_path: Path) -> None:
    f = NbboFile(tmp_path / "a" / "nbbo.parquet")
    f.extend(changes(10))
    f.abort()
    assert list((tmp_path / "a").iterdir()) == []
    empty = NbboFile(tmp_path / "b" / "nbbo.parquet")
    assert empty.close() == 0 and pq.read_table(tmp_path / "b" / "nbbo.parquet").num_rows == 0
    with pytest.raises(ValueError, match="already closed"):
        empty.close()
