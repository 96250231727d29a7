"""Pricing off the hot path: implied forwards, smiles, bands and the refresher, on a
model-consistent market (ops.bench.model_market) whose true forwards and vols are known."""
from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pytest

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig, PricingConfig
from decision_engines.pricing.black import black_price
from decision_engines.pricing.forward import implied_forwards, parity_pairs
from decision_engines.pricing.refresher import PricingRefresher, years_to_expiry
from decision_engines.pricing.smile import fit_smiles
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIG_OFF_SMILE
from ops.bench.model_market import model_market, quote_stream

AS_OF = dt.date(2008, 2, 4)
EXPIRIES = [20080216, 20080322, 20080719]


@pytest.fixture(scope="module")
def priced() -> tuple:
    m = model_market(30, EXPIRIES, 8, AS_OF, seed=5)
    stream = quote_stream(m, 0, seed=6)  # every series on every exchange, once: slot i = series i
    e = DecisionEngine(EngineConfig(max_series=1 << 14, max_groups=256, sample_every=0))
    e.process(stream, batch=512)
    state = PricingRefresher(e, PricingConfig(as_of=AS_OF)).refresh()
    return m, e, state


def test_group_median() -> None:
    v = np.array([5.0, 1.0, 3.0, 10.0, 2.0, 7.0])
    g = np.array([0, 0, 0, 2, 2, 2])
    # the median a flat smile sits at: every point at one k, so no quadratic can be fitted
    flat = fit_smiles(np.full(6, 0.5), v, g, 3, 1, 4.0, 0.01, rounds=1)
    assert np.allclose(flat.coef[:, 0], [3.0, np.nan, 7.0], equal_nan=True)


def test_years_to_expiry() -> None:
    y = years_to_expiry(np.array([20080216, 20080204, 20080203, 20081340]), AS_OF, 4.0)
    assert y[0] == pytest.approx((12 + 4 / 24) / 365)
    assert y[1] == pytest.approx(4 / 24 / 365)
    assert np.isnan(y[2]) and np.isnan(y[3])


def test_forwards_match_the_model(priced: tuple) -> None:
    m, e, state = priced
    groups = state.groups
    truth = {(int(u), int(x)): f for u, x, f in zip(m.underlying_id, m.expiry, m.forward)}
    true_f = np.array([truth[(int(u), int(x))] for u, x in zip(groups["underlying_id"], groups["expiry"])])
    ok = state.forwards.pairs > 0
    assert ok.mean() > 0.9
    rel = np.abs(state.forwards.forward[ok] / true_f[ok] - 1)
    assert np.median(rel) < 5e-4 and rel.max() < 5e-3


def test_forward_ignores_a_parity_break() -> None:
    k = np.arange(80.0, 121.0, 5.0)
    F, D = 101.3, 0.99
    y = D * (F - k)
    y[3] += 2.0  # one broken pair
    n = len(k)
    pairs = parity_pairs(np.concatenate([k, k]), np.concatenate([y + 10, np.full(n, 10.0)]) - 0.05,
                         np.concatenate([y + 10, np.full(n, 10.0)]) + 0.05, np.r_[np.ones(n, bool), np.zeros(n, bool)],
                         np.r_[np.arange(n, 2 * n), np.arange(n)], np.zeros(2 * n, np.int64), np.ones(2 * n, bool))
    fwd = implied_forwards(pairs, 1, np.array([0.97]), min_pairs=6, outlier_mads=4.0)
    assert fwd.forward[0] == pytest.approx(F, abs=1e-6)
    assert fwd.discount[0] == pytest.approx(D, abs=1e-9) and fwd.discount_fitted[0]
    assert fwd.pairs[0] == n - 1


def test_smile_fit_is_robust_to_outliers() -> None:
    k = np.linspace(-0.4, 0.4, 17)
    vol = 0.3 - 0.2 * k + 0.4 * k * k
    noisy = vol.copy()
    noisy[[2, 11]] += [0.2, -0.15]
    sm = fit_smiles(k, noisy, np.zeros(17, np.int64), 1, 3, 4.0, 0.01)
    assert sm.points[0] == 15
    assert np.allclose(sm.coef[0], [0.3, -0.2, 0.4], atol=1e-9)
    assert sm.vol(np.array([0]), np.array([1.0]))[0] == pytest.approx(0.3 - 0.2 * 0.4 + 0.4 * 0.16)  # clamped k


def test_model_values_inside_their_bands(priced: tuple) -> None:
    m, e, state = priced
    n = len(state.series)
    has = np.isfinite(state.value)
    assert has.mean() > 0.5  # no band beyond a smile's fitted range (far wings without bids)
    err = np.abs(state.value[has] - m.value[:n][has])
    assert np.median(err) < 0.02
    lo, hi = state.refs["band_lo"][:n][has] / 1e9, state.refs["band_hi"][:n][has] / 1e9
    assert ((m.value[:n][has] >= lo) & (m.value[:n][has] <= hi)).all()


def test_refresher_publishes_and_the_engine_flags_off_smile_quotes(priced: tuple) -> None:
    m, e, state = priced
    # The normal market raises nothing once priced.
    quiet = e.process(quote_stream(m, 20000, seed=8)[len(m.value) * 6 :], batch=14)
    assert len(quiet.signals) == 0
    assert e.counters()["refs_published"] == 1
    # A quote bidding 10 cents above its band's top, on series that have a band, is flagged.
    n = len(state.series)
    cand = np.nonzero(np.isfinite(state.value) & (m.value[:n] > 0.5))[0][:20]
    bid = (np.ceil(state.refs["band_hi"][cand] / 10**7) + 10).astype(np.int64) * 10**7
    bad = build_quotes(root=m.root[cand], expiry=m.expiry[cand], strike_px=np.round(m.strike[cand] * 1e9).astype(np.int64),
                       put_call=np.where(m.is_call[cand], ord("C"), ord("P")).astype(np.uint8), participant=b"B",
                       bid_px=bid, bid_size=10, offer_px=bid + 20 * 10**7, offer_size=10,
                       underlying_id=m.underlying_id[cand])
    out = e.process(bad)
    assert list(out.signals["kind"]) == [SIG_OFF_SMILE] * len(cand)
    assert out.signals["value"] == pytest.approx(np.full(len(cand), 0.10), abs=0.0101)


def test_background_refresh_thread() -> None:
    m = model_market(5, EXPIRIES, 4, AS_OF, seed=9)
    e = DecisionEngine(EngineConfig(max_series=1024, max_groups=64, sample_every=0))
    r = PricingRefresher(e, PricingConfig(as_of=AS_OF, period_s=0.01))
    stream = quote_stream(m, 5000, seed=10)
    r.start()
    try:
        # the hot path goes on taking quotes until it has taken a publication of the thread's
        # (the deadline only stops a hang: a loaded host may run the thread late)
        deadline = time.monotonic() + 60
        i = 0
        while e.counters()["refs_published"] == 0 and r.failures == 0:
            assert time.monotonic() < deadline, f"no publication taken ({r.published} published)"
            e.process(stream[i : i + 100])
            i = (i + 100) % len(stream)
            time.sleep(0.001)
    finally:
        r.stop()
    assert r.published >= 1 and r.failures == 0
    assert e.counters()["refs_published"] >= 1


def test_a_series_first_seen_after_the_refresh_is_priced_by_the_hot_path(priced: tuple) -> None:
    m, e, state = priced
    g = int(np.nonzero(state.smiles.points >= 8)[0][0])
    F, D, T = state.forwards.forward[g], state.forwards.discount[g], state.years[g]
    K = round(F * 2) / 2 + 0.25  # a strike nobody quoted: x.25 or x.75
    sigma = state.smiles.vol(np.array([g]), np.array([np.log(K / F)]))[0]
    value = float(black_price(F, K, T, sigma, D, True))
    group = state.groups[g]
    root = state.series["root"][state.series["group"] == g][0]

    def new_quote(bid: float, strike: float) -> np.ndarray:
        return build_quotes(root=root, expiry=int(group["expiry"]), strike_px=int(round(strike * 1e9)), put_call=b"C",
                            participant=b"I", bid_px=int(round(bid * 100)) * 10**7, bid_size=10,
                            offer_px=int(round((bid + 0.10) * 100)) * 10**7, offer_size=10,
                            underlying_id=int(group["underlying_id"]))

    fair = e.process(new_quote(value - 0.05, K))
    assert len(fair.signals) == 0
    off = e.process(new_quote(value * 1.5 + 1.0, K + 0.125))
    assert list(off.signals["kind"]) == [SIG_OFF_SMILE]
    slot = e.find_series(root, int(group["expiry"]), int(round((K + 0.125) * 1e9)), b"C")
    assert slot is not None and slot >= len(state.series)


def test_a_failing_refresh_is_counted_and_the_next_one_runs(priced: tuple) -> None:
    """The background loops' refresh counts a failure (and keeps its message for the run
    report) instead of ending pricing; the figures add up over refreshers."""
    from decision_engines.pricing.refresher import pricing_counters

    m, e, _ = priced
    r = PricingRefresher(e, PricingConfig(as_of=AS_OF))

    def broken() -> np.ndarray:
        raise IndexError("index 4294967295 is out of bounds")

    e.groups = broken
    try:
        assert r.refresh_counted() is None
    finally:
        del e.groups  # the class's method again
    assert r.failures == 1 and r.last_error.startswith("IndexError")
    e.process(quote_stream(m, 10, seed=12)[-10:], batch=10)  # the hot path takes any earlier publish
    state = r.refresh_counted()
    assert state is not None and r.published == 1
    c = pricing_counters([r, r])
    assert c["pricing_published"] == 2 and c["pricing_failures"] == 2
    assert c["pricing_series"] == 2 * len(state.series) and c["pricing_us"] > 0
    assert c["pricing_last_error"].startswith("IndexError")
