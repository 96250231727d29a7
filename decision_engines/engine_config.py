"""Configuration of a decision engine: the hot path's capacities and sampling (passed to C)
and the pricing refresher's parameters. The defaults live here and only here; the C default
for sampling is checked against ``DEFAULT_SAMPLE_EVERY`` by a test."""
from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_SAMPLE_EVERY = 1600
"""Forward 1 in N messages to the latency collector (the paper's 1 in 1,600)."""
DEFAULT_MAX_SERIES = 1 << 17
DEFAULT_MAX_GROUPS = 1 << 14


class EngineConfig(BaseModel):
    """What the C engine is created with (``omdp_engine_config_t``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_series: int = Field(DEFAULT_MAX_SERIES, ge=1, le=1 << 24, description="series slots, preallocated")
    max_groups: int = Field(DEFAULT_MAX_GROUPS, ge=1, le=1 << 24, description="(underlying, expiry) groups")
    sample_every: int = Field(DEFAULT_SAMPLE_EVERY, ge=0, le=1 << 31, description="forward 1 in N messages; 0: none")
    engine_id: int = Field(0, ge=0, le=0xFFFF, description="written into every signal")


class PricingConfig(BaseModel):
    """How the refresher turns NBBO mids into forwards, smiles, price bands and parity limits.

    Prices are in dollars (price units), volatilities annualised, times in years of 365 days.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    as_of: dt.date = Field(description="valuation date: time to expiry counts from here")
    hours_left_on_expiry_day: float = Field(
        4.0, gt=0, le=24, description="time to expiry is days + this many hours (no option is at T = 0)"
    )
    rate: float = Field(0.03, ge=-0.1, le=0.5, description="prior rate for the discount factor where too few pairs fit one")
    min_pairs_for_discount: int = Field(6, ge=2, description="call/put pairs needed to fit the discount factor of a group")
    min_smile_points: int = Field(4, ge=1, description="out-of-the-money mids needed to fit a smile")
    outlier_mads: float = Field(4.0, gt=0, description="robust fits drop residuals beyond this many scaled MADs")
    outlier_floor_vol: float = Field(0.01, ge=0, description="smile residuals below this are never outliers")
    band_abs: float = Field(0.25, ge=0, description="band half-width, at least this many dollars")
    band_rel: float = Field(0.10, ge=0, description="band half-width, at least this fraction of the model value")
    band_vol: float = Field(0.05, ge=0, description="band half-width, at least this vol move times vega")
    band_residual: float = Field(1.0, ge=0, description="plus this times |NBBO mid - model value| (the smile's misfit there)")
    band_k_margin: float = Field(0.02, ge=0, description="no band beyond the fitted log-moneyness range by more than this")
    parity_abs: float = Field(0.10, ge=0, description="parity tolerance in dollars (costs), at least")
    parity_rel: float = Field(0.0005, ge=0, description="parity tolerance as a fraction of the discounted forward")
    period_s: float = Field(0.1, gt=0, description="background refresh period")
