"""Pins the metrics C contracts to their Python twins: hop order, sample identity rows,
line counters, the stats segment geometry."""
from __future__ import annotations

import pytest

from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import BUCKETS, MAX_VALUE_NS
from omdp.metrics.ingest_collector import LINE_COUNTS_DTYPE
from omdp.metrics.sample_identity import IDENTITY_COLUMNS, SAMPLE_ID_DTYPE
from omdp.metrics.stats_segment import LINE_COUNTER_NAMES
from omdp.native import ffi, lib
from omdp.record import HOPS


def test_hop_keys_follow_the_c_indexes() -> None:
    assert [getattr(lib, f"OMDP_LAT_{k.upper()}") for k in HOP_KEYS] == list(range(len(HOP_KEYS)))
    assert lib.OMDP_LAT_HOPS == lib.OMDP_STATS_HOPS == len(HOP_KEYS)


@pytest.mark.parametrize("column", sorted(IDENTITY_COLUMNS))
def test_identity_column_widths_match_c(column: str) -> None:
    assert IDENTITY_COLUMNS[column] == SAMPLE_ID_DTYPE.fields[column][0].itemsize


def test_sample_columns_cover_every_stamp() -> None:
    fields = [name for name, _ in ffi.typeof("omdp_sample_columns_t").fields]
    assert fields[: len(HOPS)] == list(HOPS)


def test_line_counters_match_c() -> None:
    assert [name for name, _ in ffi.typeof("omdp_line_counts_t").fields] == list(LINE_COUNTER_NAMES)
    assert LINE_COUNTS_DTYPE.names[1:] == LINE_COUNTER_NAMES


def test_histogram_geometry() -> None:
    assert BUCKETS == (lib.OMDP_HIST_MAX_BITS - lib.OMDP_HIST_SUB_BITS + 1) * lib.OMDP_HIST_SUB_COUNT
    assert MAX_VALUE_NS == 2**36 - 1
    assert ffi.sizeof("omdp_hist_t") == 64 + 8 * BUCKETS


def test_stats_layout_is_pinned() -> None:
    # Readers in other processes (and languages) rely on this layout: a change of size is a
    # layout change and must bump OMDP_STATS_VERSION together with this number.
    assert lib.OMDP_STATS_VERSION == 2  # 2: 128 lines (OBI has 96)
    assert lib.omdp_stats_layout_size() == 12_101_800
