"""The decision engine's C constants and defaults against Python's, the counters and the signals table."""
from __future__ import annotations

import numpy as np

from decision_engines.engine import COUNTER_NAMES
from decision_engines.engine_config import DEFAULT_SAMPLE_EVERY
from decision_engines.engine_records import NO_SLOT
from decision_engines.signal_record import (SIG_CROSSED, SIG_CUSTOM, SIG_LOCKED, SIG_OFF_SMILE, SIG_PARITY,
                                            SIGNAL_DTYPE, SIGNAL_SIZE)
from omdp.native import ffi, lib
from omdp.record import RT_SIGNAL

def test_signal_constants() -> None:
    assert SIGNAL_SIZE == lib.OMDP_SIGNAL_SIZE == 152 and SIGNAL_SIZE % 8 == 0
    assert ffi.alignof("omdp_signal_t") == 8
    assert RT_SIGNAL == lib.OMDP_RT_SIGNAL
    assert (SIG_CROSSED, SIG_LOCKED, SIG_OFF_SMILE, SIG_PARITY, SIG_CUSTOM) == (
        lib.OMDP_SIG_CROSSED, lib.OMDP_SIG_LOCKED, lib.OMDP_SIG_OFF_SMILE, lib.OMDP_SIG_PARITY, lib.OMDP_SIG_CUSTOM)


def test_defaults_agree_with_c() -> None:
    assert DEFAULT_SAMPLE_EVERY == lib.OMDP_ENGINE_DEFAULT_SAMPLE_EVERY == 1600
    assert NO_SLOT == lib.OMDP_ENGINE_NO_SLOT
    assert lib.OMDP_ENGINE_MAX_OUT_PER_MSG == 256 + lib.OMDP_ENGINE_MAX_SIGNALS_PER_MSG * SIGNAL_SIZE


def test_counter_names_are_the_struct_fields() -> None:
    assert ffi.sizeof("omdp_engine_counters_t") == 8 * len(COUNTER_NAMES)
    assert "processed" in COUNTER_NAMES and "bbo_bid_mismatch" in COUNTER_NAMES


def test_signals_table_matches_the_run_schema() -> None:
    from decision_engines.signal_table import signals_table
    from omdp.metrics.run_records import RUN_SIGNALS_SCHEMA

    sig = np.zeros(3, dtype=SIGNAL_DTYPE)
    sig["kind"] = [SIG_CROSSED, SIG_PARITY, SIG_CUSTOM + 1]
    sig["root"] = [b"JPM  ", b"Q", b"IBM"]
    sig["put_call"] = [ord("C"), ord("P"), ord("C")]
    sig["hdr"]["stamps"]["de_out"] = [10, 20, 30]
    t = signals_table(sig)
    assert t.schema == RUN_SIGNALS_SCHEMA
    assert t.column("kind").to_pylist() == ["crossed", "parity", "custom1"]
    assert t.column("root").to_pylist() == ["JPM", "Q", "IBM"]
    assert t.column("ts_ns").to_pylist() == [10, 20, 30]
