"""How many series slots a pipeline gives each engine when its topology does not say
(ops/pipeline/assemble.py engine_series_slots): a today capture routes about 245,000 series
to each of two engines, beyond the engines' default; unsized, they refused a million quotes
a run as table_full. Sized from the capture's manifest, with headroom for the series listed
during the day, never below the default, and for every series when buckets may move."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from decision_engines.engine_config import DEFAULT_MAX_SERIES
from feedhandlers.routing import RoutingTable
from ops.pipeline.assemble import SERIES_HEADROOM, engine_series_slots
from ops.pipeline.capture_info import CaptureInfo

ROUTING = RoutingTable(engines=2, roots=["SPX", "SPXW", "QQQ", "AAPL"], underlying_ids=[0, 0, 1, 2],
                       root_engines=[0, 0, 1, 1])


def capture(series: dict[int, int]) -> CaptureInfo:
    return CaptureInfo(directory=Path("."), date=dt.date(2026, 3, 2), lines=[1], files={1: []}, endpoints={1: {}},
                       root_underlying={"SPX": 0, "SPXW": 0, "QQQ": 1, "AAPL": 2},
                       underlying_symbols={0: "SPX", 1: "QQQ", 2: "AAPL"}, recorded_pps=0.0, messages_per_packet=0.0,
                       line_packets={}, feed_format="obi-v6", underlying_series=series)


def test_each_engine_holds_the_most_series_one_engine_is_routed_with_headroom() -> None:
    slots = engine_series_slots(capture({0: 200_000, 1: 100_000, 2: 60_000}), ROUTING)
    assert slots == int(200_000 * SERIES_HEADROOM) + 1 > DEFAULT_MAX_SERIES


def test_with_movable_buckets_an_engine_may_hold_every_series() -> None:
    slots = engine_series_slots(capture({0: 200_000, 1: 100_000, 2: 60_000}), ROUTING, movable=True)
    assert slots == int(360_000 * SERIES_HEADROOM) + 1


def test_a_small_or_uncounted_capture_keeps_the_default() -> None:
    assert engine_series_slots(capture({0: 5_000, 1: 300}), ROUTING) == DEFAULT_MAX_SERIES
    assert engine_series_slots(capture({}), ROUTING) == DEFAULT_MAX_SERIES
