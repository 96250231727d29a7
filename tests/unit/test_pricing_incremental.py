"""A refresh that prices only the groups that changed (compute_pricing's ``prev``) gives the
same numbers, bit for bit, as pricing every series, refresh after refresh, while series
appear, quotes move and nothing moves."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig, PricingConfig
from decision_engines.engine_records import NO_SLOT
from decision_engines.pricing.refresher import PricingRefresher, PricingState, compute_pricing
from ops.bench.model_market import model_market, quote_stream

AS_OF = dt.date(2008, 2, 4)
CFG = PricingConfig(as_of=AS_OF)
MAX_SERIES, MAX_GROUPS = 1 << 13, 512


def assert_same(a: PricingState, b: PricingState) -> None:
    """Every array of two states equal (NaN equal to NaN)."""
    pairs = [(a.years, b.years), (a.mid_iv, b.mid_iv), (a.value, b.value),
             (a.forwards.forward, b.forwards.forward), (a.forwards.discount, b.forwards.discount),
             (a.forwards.pairs, b.forwards.pairs), (a.forwards.discount_fitted, b.forwards.discount_fitted),
             (a.smiles.coef, b.smiles.coef), (a.smiles.points, b.smiles.points), (a.smiles.k_min, b.smiles.k_min),
             (a.smiles.k_max, b.smiles.k_max)]
    pairs += [(a.refs[f], b.refs[f]) for f in a.refs.dtype.names]
    pairs += [(a.group_refs[f], b.group_refs[f]) for f in a.group_refs.dtype.names]
    for x, y in pairs:
        assert x.shape == y.shape
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f")


@pytest.fixture(scope="module")
def market() -> tuple:
    m = model_market(24, [20080216, 20080322, 20080719], 6, AS_OF, seed=21)
    return m, quote_stream(m, 30_000, seed=22)


def test_refresh_after_refresh_equals_pricing_everything(market: tuple) -> None:
    m, stream = market
    e = DecisionEngine(EngineConfig(max_series=MAX_SERIES, max_groups=MAX_GROUPS, sample_every=0))
    try:
        prev, partial = None, 0
        # small steps first (series keep appearing: the warm-up quotes every series), then
        # re-quotes, then a step with nothing new
        steps = [600] * 10 + [150] * 30 + [0]
        at = 0
        for n in steps:
            e.process(stream[at:at + n], batch=64)
            at += n
            snap, groups = e.snapshot(), e.groups()
            full = compute_pricing(snap, groups, MAX_SERIES, CFG, MAX_GROUPS)
            inc = compute_pricing(snap, groups, MAX_SERIES, CFG, MAX_GROUPS, prev=prev)
            assert full.repriced == -1
            assert_same(full, inc)
            if 0 <= inc.repriced < len(snap):
                partial += 1
            if n == 0:
                assert inc.repriced == 0
            prev = inc
        assert partial >= 20  # the steady state prices a part, not everything
    finally:
        e.close()


@pytest.fixture(scope="module")
def priced_once(market: tuple) -> tuple[np.ndarray, np.ndarray, PricingState]:
    """A snapshot, its groups and pricing them all, after the first 12,000 quotes."""
    m, stream = market
    e = DecisionEngine(EngineConfig(max_series=MAX_SERIES, max_groups=MAX_GROUPS, sample_every=0))
    try:
        e.process(stream[:12_000], batch=256)
        snap, groups = e.snapshot(), e.groups()
    finally:
        e.close()
    return snap, groups, compute_pricing(snap, groups, MAX_SERIES, CFG, MAX_GROUPS)


def test_changed_group_and_twin_fields(priced_once: tuple) -> None:
    """A series leaving its group, and a call losing its twin, price again what they touch."""
    snap, groups, prev = priced_once
    moved = snap.copy()
    calls = np.nonzero((moved["put_call"] == ord("C")) & (moved["twin"] < len(moved)))[0]
    moved["group"][calls[0]] = NO_SLOT
    moved["twin"][calls[5]] = NO_SLOT
    moved["bid_px"][calls[9]] += 10_000_000
    inc = compute_pricing(moved, groups, MAX_SERIES, CFG, MAX_GROUPS, prev=prev)
    assert 0 < inc.repriced < len(snap)
    assert_same(compute_pricing(moved, groups, MAX_SERIES, CFG, MAX_GROUPS), inc)


def test_a_smaller_snapshot_prices_everything(priced_once: tuple) -> None:
    snap, groups, prev = priced_once
    fewer = snap[: len(snap) // 2]
    inc = compute_pricing(fewer, groups, MAX_SERIES, CFG, MAX_GROUPS, prev=prev)
    assert inc.repriced == -1
    assert_same(compute_pricing(fewer, groups, MAX_SERIES, CFG, MAX_GROUPS), inc)


def test_the_refresher_builds_on_its_last_refresh(market: tuple) -> None:
    m, stream = market
    e = DecisionEngine(EngineConfig(max_series=MAX_SERIES, max_groups=MAX_GROUPS, sample_every=0))
    try:
        r = PricingRefresher(e, CFG)
        e.process(stream[:20_000], batch=256)
        assert r.refresh().repriced == -1
        e.process(stream[20_000:20_050], batch=50)  # the hot path takes the publish in a batch
        state = r.refresh()
        assert 0 < state.repriced < len(state.series)
        assert_same(compute_pricing(e.snapshot(), e.groups(), MAX_SERIES, CFG, MAX_GROUPS), state)
    finally:
        e.close()


def test_the_refreshers_state_and_buffers_equal_pricing_everything(market: tuple) -> None:
    """The refresher prices from its mirror, updates its last state in place and writes only
    the rows its back buffer lacks: after every publish the state and the buffer just
    published equal pricing a fresh full snapshot, bit for bit."""
    m, stream = market
    e = DecisionEngine(EngineConfig(max_series=MAX_SERIES, max_groups=MAX_GROUPS, sample_every=0))
    try:
        r = PricingRefresher(e, CFG)
        begin, group_back, written = e.begin_refs, e.group_refs_back, []
        e.begin_refs = lambda: written.append(begin()) or written[-1]
        e.group_refs_back = lambda: written.append(group_back()) or written[-1]
        at, partial = 0, 0
        for n in [600] * 10 + [150] * 30 + [0]:
            e.process(stream[max(at + n - 1, 0):at + n] if n == 0 else stream[at:at + n], batch=64)
            at += n
            state = r.refresh()
            assert state is not None
            full = compute_pricing(e.snapshot(), e.groups(), MAX_SERIES, CFG, MAX_GROUPS)
            assert_same(full, state)
            refs, grefs = written[-2:]
            assert refs.tobytes() == full.refs.tobytes() and grefs.tobytes() == full.group_refs.tobytes()
            partial += 0 <= state.repriced < len(state.series)
            if n == 0:
                assert state.repriced == 0
        assert partial >= 20 and r.published == 41
    finally:
        e.close()


def test_series_in_no_group_get_no_limits(market: tuple) -> None:
    """An engine whose group table is full keeps series in no group (NO_SLOT): pricing
    gives them no limits instead of failing (it once indexed with the wrapped -1)."""
    m, stream = market
    e = DecisionEngine(EngineConfig(max_series=MAX_SERIES, max_groups=4, sample_every=0))
    try:
        e.process(stream[:12_000], batch=256)
        r = PricingRefresher(e, CFG)
        state = r.refresh()
        lost = state.series["group"] == NO_SLOT
        assert lost.any() and (~lost).any()
        assert (state.refs["band_lo"][:len(lost)][lost] == np.iinfo(np.int64).min).all()
        assert np.isnan(state.mid_iv[lost]).all()
    finally:
        e.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), moved=st.floats(0.0, 0.6), grow=st.integers(0, 200))
def test_random_changes_price_as_everything_would(priced_once: tuple, seed: int, moved: float, grow: int) -> None:
    """Any mix of moved quotes, series leaving or changing groups, twins, strikes or put/call,
    series appended and groups appended, prices bit for bit as pricing everything."""
    snap, groups, prev = priced_once
    rng = np.random.default_rng(seed)
    now = np.concatenate([snap, snap[rng.integers(0, len(snap), grow)]])  # appended: copies of existing series
    n = len(now)
    more_groups = np.concatenate([groups, groups[: rng.integers(0, 4)]])  # new groups, none with a series yet
    pick = rng.random(n) < moved
    now["bid_px"][pick] += rng.integers(-5, 6, pick.sum()) * 10_000_000
    now["offer_px"][pick] = np.maximum(now["offer_px"][pick], now["bid_px"][pick])
    regroup = rng.random(n) < moved / 20
    now["group"][regroup] = rng.integers(0, len(more_groups) + 1, regroup.sum())  # the top one: NO_SLOT below
    now["group"][now["group"] == len(more_groups)] = NO_SLOT
    retwin = rng.random(n) < moved / 20
    now["twin"][retwin] = rng.choice([NO_SLOT, *range(n)], retwin.sum())
    restrike = rng.random(n) < moved / 20
    now["strike_px"][restrike] += 2_500_000_000
    flip = rng.random(n) < moved / 20
    now["put_call"][flip] = np.where(now["put_call"][flip] == ord("C"), ord("P"), ord("C"))
    full = compute_pricing(now, more_groups, MAX_SERIES, CFG, MAX_GROUPS)
    assert_same(full, compute_pricing(now, more_groups, MAX_SERIES, CFG, MAX_GROUPS, prev=prev))
