"""The backtest's configuration files and the reconciliation rules (no Spark): a live
crossed/locked signal must be the reference's, a reference signal may be missing from the
run only where the run raised off_smile, priced signals must be on accepted messages."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ops.spark.backtest.backtest_config import BacktestConfigError, load_config, load_configs
from ops.spark.backtest.backtest_engine import BACKTEST_SIGNALS_SCHEMA
from ops.spark.backtest.backtest_reconcile import LiveRun, reconcile_run


def test_a_config_file_sets_the_engine_and_pricing(tmp_path: Path) -> None:
    f = tmp_path / "wide.toml"
    f.write_text('name = "wide"\nsample_every = 100\nrefresh_ms = 250\n[pricing_knobs]\nband_abs = 0.5\n')
    cfg = load_config(f)
    assert (cfg.name, cfg.sample_every, cfg.refresh_ms, cfg.pricing) == ("wide", 100, 250.0, True)
    assert cfg.pricing_config("2008-02-04").band_abs == 0.5
    assert [c.name for c in load_configs([])] == ["default"]
    with pytest.raises(BacktestConfigError, match="name 'wide' given by two files"):
        load_configs([str(f), str(f)])
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nrefresh_ms = -1\n')
    with pytest.raises(BacktestConfigError, match="refresh_ms"):
        load_config(bad)
    bad.write_text('name = "x"\n[pricing_knobs]\nband_abs = -1\n')
    with pytest.raises(BacktestConfigError, match="pricing_knobs.band_abs"):
        load_config(bad)


def _sig(line: int, seq: int, kind: str, value: float, root: str = "SPY") -> dict:
    return {"ts_ns": 0, "engine": 0, "line": line, "msg_seq": seq, "underlying_id": 1, "root": root,
            "expiry": 20080322, "strike_px": 100_000_000_000, "put_call": "C", "kind": kind, "value": value,
            "bid_px": 0, "offer_px": 0, "ref_lo": 0, "ref_hi": 0, "participant": "A", "time": 93000000}


def _reference(tmp_path: Path, rows: list[dict]) -> Path:
    d = tmp_path / "ref"
    d.mkdir()
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows, schema=BACKTEST_SIGNALS_SCHEMA), d / "part-b000.parquet")
    return d


def test_reconciliation_rules(tmp_path: Path) -> None:
    ref = _reference(tmp_path, [_sig(1, 10, "crossed", 0.5), _sig(1, 20, "locked", 0.0), _sig(2, 5, "crossed", 0.1)])
    found = [{"line": ln, "msg_seq": seq, "root": "SPY", "expiry": 20080322, "strike_px": 100_000_000_000,
              "put_call": "C"} for ln, seq in ((3, 7), (1, 20))]
    live = [_sig(1, 10, "crossed", 0.5, root="SPY  "),   # padded root, as a run's signals.parquet has it
            _sig(1, 20, "off_smile", 1.2),              # suppresses the reference's locked on that message
            _sig(2, 5, "crossed", 0.1),
            _sig(3, 7, "parity", 0.3)]
    row, bad = reconcile_run(LiveRun("r", "2026-01-01", "2008-02-04", 5.0, live), ref, found)
    assert bad == [] and row["status"] == "ok"
    assert (row["matched"], row["explained_by_off_smile"], row["priced_checked"]) == (2, 1, 2)

    wrong = [_sig(1, 10, "crossed", 0.6), _sig(3, 8, "parity", 0.3), _sig(9, 9, "locked", 0.0)]
    row, bad = reconcile_run(LiveRun("r", "2026-01-01", "2008-02-04", 5.0, wrong), ref, found)
    reasons = sorted(b["reason"].split(" ")[0] for b in bad)
    assert row["status"] == "mismatch" and row["mismatches"] == 5 == len(bad)
    # value differs; 9/9 not in the backtest; 1/20 and 2/5 missing from the run; 3/8 not accepted
    assert sum("value" in b["reason"] for b in bad) == 1
    assert sum(b["side"] == "backtest" for b in bad) == 2 and reasons
