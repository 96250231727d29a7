"""The limits the hot path checks, from forwards and smiles: per series a price band around
the smile's Black-76 value, per call/put pair the parity band around D (F - K).

Band half-width = max(band_abs, band_rel x value, band_vol x vega) + band_residual x |NBBO
mid - value|: wide enough for a normal quote's spread and the smile's fitting error, narrow
enough that a quote far off the smile falls outside. Parity tolerance = max(parity_abs, parity_rel x D F): the costs of trading the
synthetic forward. Limits are rounded outwards to the 1e-9 price grid.
"""
from __future__ import annotations

import numpy as np

from decision_engines.engine_config import PricingConfig
from decision_engines.engine_records import GROUP_REF_DTYPE, REF_DISABLED_HI, REF_DISABLED_LO, SERIES_REF_DTYPE
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


def series_bands(strike: np.ndarray, is_call: np.ndarray, group: np.ndarray, T: np.ndarray, mid: np.ndarray,
                 fwd: Forwards, smiles: Smiles, cfg: PricingConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per series: model value (NaN where none), band low and high in dollars (NaN where none).

    No band where the group has no forward or smile, or where the strike lies beyond the
    smile's fitted log-moneyness range (a quadratic is not trusted outside its data). Where
    the series' own NBBO mid (``mid``, NaN where none) sits away from the model, the band
    widens by that distance: the smile, not the quote, is wrong there.
    """
    n = len(strike)
    value = np.full(n, np.nan)
    lo = np.full(n, np.nan)
    hi = np.full(n, np.nan)
    has = (group >= 0) & (group < len(fwd.forward))
    gi = np.where(has, group, 0)
    has &= np.isfinite(fwd.forward[gi]) & (smiles.points[gi] > 0) & (T[gi] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.log(strike / fwd.forward[gi])
    has &= (k >= smiles.k_min[gi] - cfg.band_k_margin) & (k <= smiles.k_max[gi] + cfg.band_k_margin)
    if not has.any():
        return value, lo, hi
    g = gi[has]
    F, D, t, K = fwd.forward[g], fwd.discount[g], T[g], strike[has]
    sigma = smiles.vol(g, k[has])
    v = black_price(F, K, t, sigma, D, is_call[has])
    vega = black_vega(F, K, t, sigma, D)
    misfit = np.nan_to_num(np.abs(mid[has] - v), nan=0.0)
    half = np.maximum.reduce([np.full_like(v, cfg.band_abs), cfg.band_rel * v, cfg.band_vol * vega])
    half = half + cfg.band_residual * misfit
    value[has], lo[has], hi[has] = v, v - half, v + half
    return value, lo, hi


def build_refs(max_series: int, strike: np.ndarray, is_call: np.ndarray, twin: np.ndarray, group: np.ndarray,
               T: np.ndarray, mid: np.ndarray, fwd: Forwards, smiles: Smiles,
               cfg: PricingConfig) -> tuple[np.ndarray, np.ndarray]:
    """SERIES_REF_DTYPE limits for slots 0..max_series-1 (slots beyond the snapshot disabled)
    and the model value per snapshot series."""
    refs = disabled_refs(max_series)
    n = len(strike)
    value, lo, hi = series_bands(strike, is_call, group, T, mid, fwd, smiles, cfg)
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


def build_group_refs(max_groups: int, T: np.ndarray, fwd: Forwards, smiles: Smiles, cfg: PricingConfig) -> np.ndarray:
    """GROUP_REF_DTYPE models for groups 0..max_groups-1 (zero, i.e. disabled, where a group
    has no forward): what the hot path prices a new series with until the next refresh."""
    out = np.zeros(max_groups, dtype=GROUP_REF_DTYPE)
    n = min(len(fwd.forward), max_groups)
    ok = np.isfinite(fwd.forward[:n]) & (fwd.pairs[:n] > 0) & np.isfinite(T[:n]) & (T[:n] > 0)
    idx = np.nonzero(ok)[0]
    out["forward"][idx] = fwd.forward[idx]
    out["discount"][idx] = fwd.discount[idx]
    out["years"][idx] = T[idx]
    out["parity_tol"][idx] = np.maximum(cfg.parity_abs, cfg.parity_rel * fwd.discount[idx] * fwd.forward[idx])
    smile = idx[(smiles.points[idx] > 0) & np.isfinite(smiles.coef[idx, 0])]
    out["has_smile"][smile] = 1
    out["smile_a"][smile], out["smile_b"][smile], out["smile_c"][smile] = smiles.coef[smile].T
    out["k_min"][smile] = smiles.k_min[smile] - cfg.band_k_margin
    out["k_max"][smile] = smiles.k_max[smile] + cfg.band_k_margin
    out["band_abs"][smile] = cfg.band_abs
    out["band_rel"][smile] = cfg.band_rel
    out["band_vol"][smile] = cfg.band_vol
    return out
