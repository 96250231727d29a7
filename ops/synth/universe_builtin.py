"""The built-in universe: about 3,500 underlyings shaped like the listed options of early
2008, generated deterministically (the same names every run, whatever ``--seed`` is).

A few dozen heavy names - index ETFs, cash indices, PHLX currencies and the large caps of
the day, at illustrative early-February-2008 levels - carry most of the quote traffic; the
rest are plausible made-up tickers whose activity falls off as a power law.
"""
from __future__ import annotations

import numpy as np

from ops.synth.symbols import LEAPS_PREFIXES, RootNamer, main_root, make_tickers
from ops.synth.universe import EXCHANGES, PENNY_PILOT, Underlying, Universe

UNIVERSE_SEED = 20080204
"""Seed of the built-in universe; fixed so that names, roots and lines never move."""

DEFAULT_UNDERLYINGS = 3500

# symbol, kind, spot, activity weight, listing exchanges ("" = all six)
HEAVY: tuple[tuple[str, str, float, float, str], ...] = (
    ("QQQQ", "etf", 44.0, 6.0, ""), ("SPY", "etf", 138.0, 5.0, ""), ("IWM", "etf", 71.0, 3.5, ""),
    ("DIA", "etf", 124.0, 1.0, ""), ("XLF", "etf", 27.0, 1.5, ""), ("XLE", "etf", 72.0, 0.8, ""),
    ("SMH", "etf", 30.0, 0.8, ""), ("GLD", "etf", 89.0, 0.9, ""), ("EEM", "etf", 140.0, 1.0, ""),
    ("FXI", "etf", 150.0, 1.0, ""), ("OIH", "etf", 170.0, 0.6, ""), ("USO", "etf", 72.0, 0.5, ""),
    ("EWZ", "etf", 75.0, 0.5, ""), ("XHB", "etf", 21.0, 0.4, ""),
    ("SPX", "index", 1380.0, 1.5, "C"), ("NDX", "index", 1800.0, 0.6, "C"), ("OEX", "index", 640.0, 0.6, "C"),
    ("DJX", "index", 124.0, 0.3, "C"), ("RUT", "index", 715.0, 0.6, "C"), ("VIX", "index", 25.0, 0.4, "C"),
    ("XEO", "index", 640.0, 0.2, "C"), ("MNX", "index", 180.0, 0.2, "C"), ("SOX", "index", 350.0, 0.15, "X"),
    ("XAU", "index", 190.0, 0.15, "X"), ("BKX", "index", 85.0, 0.15, "IX"),
    ("XDE", "currency", 147.0, 0.05, "X"), ("XDB", "currency", 197.0, 0.04, "X"), ("XDN", "currency", 93.0, 0.04, "X"),
    ("AAPL", "equity", 133.0, 3.5, ""), ("GOOG", "equity", 505.0, 3.0, ""), ("RIMM", "equity", 95.0, 2.0, ""),
    ("C", "equity", 28.0, 2.0, ""), ("BAC", "equity", 43.0, 1.8, ""), ("MSFT", "equity", 30.0, 1.5, ""),
    ("GS", "equity", 200.0, 1.5, ""), ("LEH", "equity", 64.0, 1.4, ""), ("MER", "equity", 56.0, 1.2, ""),
    ("BIDU", "equity", 300.0, 1.2, ""), ("AMZN", "equity", 75.0, 1.2, ""), ("YHOO", "equity", 28.0, 1.2, ""),
    ("JPM", "equity", 46.0, 1.0, ""), ("INTC", "equity", 21.0, 1.0, ""), ("CSCO", "equity", 24.0, 0.9, ""),
    ("GE", "equity", 35.0, 0.9, ""), ("XOM", "equity", 87.0, 0.9, ""), ("AIG", "equity", 55.0, 0.9, ""),
    ("WB", "equity", 34.0, 0.6, ""), ("BSC", "equity", 90.0, 0.7, ""), ("CFC", "equity", 8.0, 0.7, ""),
    ("MO", "equity", 75.0, 0.6, ""), ("AMD", "equity", 7.0, 0.6, ""), ("ORCL", "equity", 20.0, 0.5, ""),
    ("QCOM", "equity", 42.0, 0.5, ""), ("POT", "equity", 150.0, 0.7, ""), ("MON", "equity", 115.0, 0.7, ""),
    ("FCX", "equity", 92.0, 0.7, ""), ("SLB", "equity", 80.0, 0.5, ""), ("IBM", "equity", 106.0, 0.6, ""),
    ("NVDA", "equity", 24.0, 0.5, ""), ("DNA", "equity", 72.0, 0.4, ""), ("WM", "equity", 19.0, 0.5, ""),
    ("CAT", "equity", 72.0, 0.4, ""), ("BA", "equity", 83.0, 0.4, ""), ("HPQ", "equity", 44.0, 0.4, ""),
)

MAIN_ROOTS = {"QQQQ": "QQQ", "AAPL": "AAQ", "GOOG": "GOP", "MSFT": "MSQ", "INTC": "INQ", "CSCO": "CYQ",
              "AMZN": "QZN", "YHOO": "YHQ", "BIDU": "BDQ", "ORCL": "ORQ", "QCOM": "AAO", "RIMM": "RFY"}
"""The real main roots of heavy four-letter names (2008 root list)."""

HEAVY_SHARE = 0.6
"""Share of the day's quote traffic carried by the heavy names."""

LEAPS_PROBABILITY = 0.45
"""Share of the ordinary names that have LEAPS (the heavy names all do)."""


def _subset(rng: np.random.Generator) -> str:
    if rng.random() < 0.55:
        return EXCHANGES
    k = int(rng.integers(1, 6))
    picked = rng.choice(len(EXCHANGES), size=k, replace=False)
    return "".join(EXCHANGES[i] for i in sorted(picked))


def builtin_universe(n_underlyings: int = DEFAULT_UNDERLYINGS, year: int = 2008) -> Universe:
    """Generate the built-in universe of ``n_underlyings`` names (at least the heavy ones).

    ``year`` is the trade date's year: LEAPS roots are made for ``year + 1`` and ``year + 2``.
    """
    rng = np.random.default_rng(UNIVERSE_SEED)
    heavy = HEAVY[: max(0, min(len(HEAVY), n_underlyings))]
    n_rest = max(0, n_underlyings - len(heavy))
    heavy_syms = {h[0] for h in heavy}
    tickers = make_tickers(rng, n_rest, heavy_syms)
    unds: list[Underlying] = []

    for sym, kind, spot, w, exch in heavy:
        broad = kind in ("etf", "index")
        vol = float(rng.uniform(0.25, 0.30)) if broad else float(rng.uniform(0.30, 0.55))
        skew = float(rng.uniform(0.20, 0.30)) if broad else float(rng.uniform(0.08, 0.20))
        unds.append(Underlying(sym, kind, spot, vol, skew, int(rng.integers(1, 4)), exch or EXCHANGES, w,
                               penny=sym in PENNY_PILOT, broad=broad))
    heavy_total = sum(u.weight for u in unds)
    rest_w = (np.arange(n_rest) + 8.0) ** -1.05
    if n_rest:
        rest_w *= max(heavy_total, 1.0) * (1 - HEAVY_SHARE) / HEAVY_SHARE / rest_w.sum()
    order = rng.permutation(n_rest)  # activity rank is not alphabetical
    for i, sym in enumerate(tickers):
        spot = float(np.clip(np.exp(rng.normal(np.log(30.0), 0.75)), 3.0, 600.0))
        vol = float(np.clip(0.25 + 0.20 * rng.random() + (0.10 if spot < 15 else 0.0) + 0.05 * rng.standard_normal(), 0.25, 0.60))
        skew = float(rng.uniform(0.06, 0.20))
        unds.append(Underlying(sym, "equity", round(spot, 2), vol, skew, int(rng.integers(1, 4)), _subset(rng),
                               float(rest_w[order[i]])))
    unds.sort(key=lambda u: u.symbol)
    namer = RootNamer(rng, set())
    uni = Universe(source="builtin", underlyings=unds, roots=[], namer=namer)
    # Tickers of up to three letters are their own main roots; claim those first so that no
    # made root takes one of them.
    namer.taken.update(u.symbol for u in unds if len(u.symbol) <= 3)
    namer.taken.update(MAIN_ROOTS.values())
    for uid, u in enumerate(unds):
        u.id = uid
        root = u.symbol if len(u.symbol) <= 3 else MAIN_ROOTS.get(u.symbol) or main_root(u.symbol, namer)
        uni.add_root(root, uid, u.exchanges, 0)
    for uid, u in enumerate(unds):
        if u.kind == "currency":
            continue
        if rng.random() < (1.0 if u.weight >= 0.3 else LEAPS_PROBABILITY):
            for k in (1, 2):
                uni.add_root(namer.fresh(LEAPS_PREFIXES[k]), uid, u.exchanges, year + k)
    return uni
