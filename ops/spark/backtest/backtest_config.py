"""Engine configurations of the backtest (``omdp analytics backtest --config FILE``).

A configuration is a small TOML file: a name (the ``config=<name>`` partition of the output),
the engine's sampling, the pricing refresh period in capture time, and any of the pricing
knobs of ``decision_engines.engine_config.PricingConfig`` (band widths, parity costs)::

    name = "wide-bands"
    sample_every = 1600
    max_series = 131072       # series slots per engine (default: as many as the bucket's series)
    refresh_ms = 100          # pricing refresh every 100 ms of capture time
    pricing = true            # false: book checks only (crossed/locked), no bands, no parity
    nbbo = true               # false: no NBBO-changes table (one row per quote that moved a series' NBBO)
    [pricing_knobs]
    band_abs = 0.50
    parity_abs = 0.20

Without ``--config`` the backtest runs ``default``: the live engine's defaults.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from decision_engines.engine_config import DEFAULT_SAMPLE_EVERY, PricingConfig
from omdp.errors import InputError

PRICING_KNOBS = tuple(n for n in PricingConfig.model_fields if n not in ("as_of", "period_s"))
"""The PricingConfig fields a backtest configuration may set."""


class BacktestConfigError(InputError):
    """A configuration file that cannot be used; the message names the file and field."""


class BacktestConfig(BaseModel):
    """One engine configuration of a backtest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("default", pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="output partition config=<name>")
    sample_every: int = Field(DEFAULT_SAMPLE_EVERY, ge=0, le=1 << 31, description="forward 1 in N messages")
    max_series: int | None = Field(None, ge=1, le=1 << 24,
                                   description="series slots per engine (bucket); default: the bucket's series")
    max_groups: int | None = Field(None, ge=1, le=1 << 24,
                                   description="(underlying, expiry) groups per engine; default: the bucket's groups")
    refresh_ms: float = Field(100.0, gt=0, le=3_600_000, description="pricing refresh period in capture time")
    pricing: bool = Field(True, description="false: no pricing (book checks only)")
    nbbo: bool = Field(True, description="false: no nbbo table (every change of a series' NBBO)")
    pricing_knobs: dict[str, float] = Field(default_factory=dict, description="PricingConfig overrides")

    def slots(self, series: int, groups: int) -> tuple[int, int]:
        """The engine's (max_series, max_groups) for a bucket that holds ``series`` series in
        ``groups`` groups: the configured ones, else exactly what the bucket needs, so that
        no engine fills because of how the day was cut into buckets."""
        return (self.max_series or max(1, series), self.max_groups or max(1, groups))

    def pricing_config(self, as_of: str) -> PricingConfig:
        """The refresher's configuration for a capture of ``as_of``."""
        return PricingConfig(as_of=as_of, **self.pricing_knobs)


def load_config(path: str | Path) -> BacktestConfig:
    """Read and check one configuration file (errors name the file and the field)."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise BacktestConfigError(f"--config {p}: no such file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BacktestConfigError(f"--config {p}: not readable TOML ({exc})") from None
    try:
        cfg = BacktestConfig.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or "(file)"
        raise BacktestConfigError(f"--config {p}: {field}: {first['msg']}") from None
    unknown = sorted(set(cfg.pricing_knobs) - set(PRICING_KNOBS))
    if unknown:
        raise BacktestConfigError(f"--config {p}: pricing_knobs.{unknown[0]}: not a pricing knob "
                                f"(one of {', '.join(PRICING_KNOBS)})")
    try:
        cfg.pricing_config("2008-02-04")
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BacktestConfigError(f"--config {p}: pricing_knobs.{first['loc'][0]}: {first['msg']}") from None
    return cfg


def load_configs(paths: list[str]) -> list[BacktestConfig]:
    """The configurations of ``--config`` (default: one ``default``); names must differ."""
    configs = [load_config(p) for p in paths] or [BacktestConfig()]
    names = [c.name for c in configs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BacktestConfigError(f"--config: name {dup[0]!r} given by two files (each names its output partition)")
    return configs
