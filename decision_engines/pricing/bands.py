"""The limits the hot path checks, from forwards and smiles: per series a price band around
the smile's Black-76 value, per call/put pair the parity band around D (F - K).

Band half-width = max(band_abs, band_rel x value, band_vol x vega): wide enough for a normal
quote's spread and the smile's fitting error, narrow enough that a quote far off the smile
falls outside. Parity tolerance = max(parity_abs, parity_rel x D F): the costs of trading the
synthetic forward. Limits are rounded outwards to the 1e-9 price grid.
"""
from __future__ import annotations

import numpy as np

from decision_engines.engine_config import PricingConfig
from decision_engines.engine_records import REF_DISABLED_HI, REF_DISABLED_LO, SERIES_REF_DTYPE
from decision_engines.pricing.black import black_price, black_vega
from decision_engines.pricing.forward import Forwards
from decision_engines.pricing.smile import Smiles
from feedhandlers.opra_record import PRICE_SCALE

_I64_LIMIT = 2.0**62


def disabled_refs(n: int) -> np.ndarray:
    """n limits that check nothing."""
    refs = np.empty(n, dtype=SERIES_REF_DTYPE)
    refs["band_lo"] = REF_DISABLED_LO
    refs["band_hi"] = REF_DISABLED_HI
    refs["parity_lo"] = REF_DISABLED_LO
    refs["parity_hi"] = REF_DISABLED_HI
    return refs


def _to_px(dollars: np.ndarray, round_up: bool) -> np.ndarray:
    scaled = np.clip(dollars * PRICE_SCALE, -_I64_LIMIT, _I64_LIMIT)
    return (np.ceil(scaled) if round_up else np.floor(scaled)).astype(np.int64)


def series_bands(strike: np.ndarray, is_call: np.ndarray, group: np.ndarray, T: np.ndarray,
                 fwd: Forwards, smiles: Smiles, cfg: PricingConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per series: model value (NaN where none), band low and high in dollars (NaN where none)."""
    n = len(strike)
    value = np.full(n, np.nan)
    lo = np.full(n, np.nan)
    hi = np.full(n, np.nan)
    has = (group >= 0) & (group < len(fwd.forward))
    gi = np.where(has, group, 0)
    has &= np.isfinite(fwd.forward[gi]) & (smiles.points[gi] > 0) & (T[gi] > 0)
    if not has.any():
        return value, lo, hi
    g = gi[has]
    F, D, t, K = fwd.forward[g], fwd.discount[g], T[g], strike[has]
    sigma = smiles.vol(g, np.log(K / F))
    v = black_price(F, K, t, sigma, D, is_call[has])
    vega = black_vega(F, K, t, sigma, D)
    half = np.maximum.reduce([np.full_like(v, cfg.band_abs), cfg.band_rel * v, cfg.band_vol * vega])
    value[has], lo[has], hi[has] = v, v - half, v + half
    return value, lo, hi


def build_refs(max_series: int, strike: np.ndarray, is_call: np.ndarray, twin: np.ndarray, group: np.ndarray,
               T: np.ndarray, fwd: Forwards, smiles: Smiles, cfg: PricingConfig) -> tuple[np.ndarray, np.ndarray]:
    """SERIES_REF_DTYPE limits for slots 0..max_series-1 (slots beyond the snapshot disabled)
    and the model value per snapshot series."""
    refs = disabled_refs(max_series)
    n = len(strike)
    value, lo, hi = series_bands(strike, is_call, group, T, fwd, smiles, cfg)
    banded = np.isfinite(lo)
    idx = np.nonzero(banded)[0]
    refs["band_lo"][idx] = _to_px(lo[banded], round_up=False)
    refs["band_hi"][idx] = _to_px(hi[banded], round_up=True)

    calls = np.nonzero(is_call & (twin < n) & (group >= 0) & (group < len(fwd.forward)))[0]
    g = group[calls]
    ok = np.isfinite(fwd.forward[g]) & (fwd.pairs[g] > 0)
    calls, g = calls[ok], g[ok]
    D, F = fwd.discount[g], fwd.forward[g]
    expected = D * (F - strike[calls])
    tol = np.maximum(cfg.parity_abs, cfg.parity_rel * D * F)
    refs["parity_lo"][calls] = _to_px(expected - tol, round_up=False)
    refs["parity_hi"][calls] = _to_px(expected + tol, round_up=True)
    return refs, value
