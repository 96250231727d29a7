"""Today's option universe: the participant exchanges of spec 8.1, several thousand
underlyings and about a million series, built with array work per underlying.

Names: a few dozen heavy names of today (index ETFs, cash indices, the large caps) at
illustrative levels (ours), then plausible made-up tickers. The option root is the
underlying's symbol (OSI symbology, since 2010), plus a few adjusted classes whose root
starts with a digit (spec 2.7 puts those on line 4). Series per underlying follow its
activity (a power law of rank): the heavy names list daily and weekly expirations and
hundreds of strikes, a quiet name two expirations of a few strikes.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from ops.synth.pricing import SeriesPricer, smile_vol
from ops.synth.symbols import make_tickers, month_codes

PARTICIPANTS = {
    "A": "NYSE American", "B": "BOX Options", "C": "Cboe Options", "D": "MIAX Emerald",
    "E": "Cboe EDGX Options", "H": "Nasdaq GEMX", "I": "Nasdaq ISE", "J": "Nasdaq MRX", "M": "MIAX",
    "N": "NYSE Arca", "P": "MIAX Pearl", "Q": "Nasdaq Options Market", "S": "MIAX Sapphire",
    "T": "Nasdaq BX Options", "U": "MEMX Options", "W": "Cboe C2", "X": "Nasdaq PHLX", "Z": "Cboe BZX Options",
}
"""The 18 exchanges of spec 8.1 that quote today (G MX2 and V IEX, added in rev 6.3a, are
left out: not yet trading), in NBBO tie-break order."""
EXCHANGE_CODES = "".join(PARTICIPANTS)
SHARE = np.array([4, 4, 12, 5, 5, 4, 7, 3, 6, 6, 5, 8, 3, 3, 5, 5, 7, 8], dtype=np.float64)
"""Each exchange's share of quote messages (ours, illustrative)."""
RISK_FREE_RATE = 0.04
UNIVERSE_SEED = 20260302
"""Names, spots and series never depend on the capture's seed."""
DEFAULT_UNDERLYINGS = 5_000
DEFAULT_SERIES = 1_000_000
HEAVY_SHARE = 0.5
"""Share of the quote traffic carried by the heavy names."""
DIGIT_ROOTS = 20
"""Adjusted classes (root '1' + ticker) riding on line 4."""

HEAVY = [
    # symbol, kind, spot, weight
    ("SPX", "index", 6800.0, 10.0), ("SPY", "etf", 680.0, 10.0), ("QQQ", "etf", 610.0, 7.0),
    ("IWM", "etf", 245.0, 4.0), ("NDX", "index", 24800.0, 2.0), ("RUT", "index", 2450.0, 1.5),
    ("VIX", "index", 17.0, 1.5), ("XSP", "index", 680.0, 0.8), ("TSLA", "equity", 430.0, 6.0),
    ("NVDA", "equity", 185.0, 6.0), ("AAPL", "equity", 270.0, 4.0), ("AMZN", "equity", 230.0, 3.5),
    ("META", "equity", 700.0, 3.0), ("MSFT", "equity", 510.0, 3.0), ("AMD", "equity", 220.0, 3.0),
    ("GOOGL", "equity", 290.0, 2.5), ("GOOG", "equity", 290.0, 1.0), ("PLTR", "equity", 180.0, 2.5),
    ("AVGO", "equity", 350.0, 2.0), ("MSTR", "equity", 300.0, 2.0), ("COIN", "equity", 320.0, 1.5),
    ("NFLX", "equity", 1100.0, 1.5), ("SMCI", "equity", 45.0, 1.0), ("MU", "equity", 200.0, 1.0),
    ("TLT", "etf", 90.0, 1.0), ("GLD", "etf", 380.0, 1.0), ("SLV", "etf", 45.0, 0.8), ("HYG", "etf", 80.0, 0.8),
    ("XLF", "etf", 53.0, 0.8), ("EEM", "etf", 52.0, 0.6), ("FXI", "etf", 40.0, 0.5), ("USO", "etf", 72.0, 0.5),
    ("BAC", "equity", 52.0, 0.8), ("JPM", "equity", 300.0, 0.8), ("INTC", "equity", 38.0, 0.8),
    ("BABA", "equity", 170.0, 0.8), ("UBER", "equity", 95.0, 0.6), ("SOFI", "equity", 28.0, 0.6),
    ("HOOD", "equity", 130.0, 0.8), ("ORCL", "equity", 230.0, 0.8), ("BA", "equity", 210.0, 0.6),
    ("DIS", "equity", 112.0, 0.5), ("NKE", "equity", 65.0, 0.5), ("WMT", "equity", 103.0, 0.5),
]


@dataclass
class TodayUniverse:
    """Underlyings (``und_*``), roots and series (``ser_*``, grouped by underlying)."""

    und_symbol: list[str]
    und_kind: list[str]
    und_spot: np.ndarray     # dollars
    und_vol: np.ndarray      # ATM volatility
    und_weight: np.ndarray   # share of quote traffic, sums to 1
    und_penny: np.ndarray    # bool: penny interval class
    und_first: np.ndarray    # first series of the underlying
    und_count: np.ndarray    # its series
    root_symbol: list[str]
    root_underlying: np.ndarray
    ser_root: np.ndarray       # int32
    ser_underlying: np.ndarray # int32
    ser_expiry: np.ndarray     # int32 YYYYMMDD
    ser_month_code: np.ndarray # uint8
    ser_day: np.ndarray        # uint8
    ser_year: np.ndarray       # uint8 (years since 2000)
    ser_strike_milli: np.ndarray  # int64, thousandths of a dollar
    ser_put: np.ndarray        # bool
    ser_weight: np.ndarray     # relative quote activity within the underlying
    pricer: SeriesPricer

    def __len__(self) -> int:
        return int(self.ser_root.shape[0])


def _expirations(trade_date: dt.date, count: int, daily: bool) -> list[dt.date]:
    """The ``count`` nearest expirations: every weekday of the next week for the busiest
    names, Fridays for three months, then monthly third Fridays for three years."""
    out: set[dt.date] = set()
    if daily:
        out.update(trade_date + dt.timedelta(days=k) for k in range(8) if (trade_date + dt.timedelta(days=k)).weekday() < 5)
    friday = trade_date + dt.timedelta(days=(4 - trade_date.weekday()) % 7)
    out.update(friday + dt.timedelta(weeks=k) for k in range(13))
    y, m = trade_date.year, trade_date.month
    for _ in range(36):
        first = dt.date(y, m, 1)
        third = first + dt.timedelta(days=(4 - first.weekday()) % 7 + 14)
        if third >= trade_date:
            out.add(third)
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return sorted(out)[:count]


def _strike_step(spot: float, span: float, k: int) -> float:
    """The listing increment that lays ``k`` strikes over about ``span`` dollars."""
    want = span / max(k, 1)
    steps = np.array([0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0])
    return float(steps[np.argmin(np.abs(np.log(steps / want)))])


def build_today_universe(trade_date: dt.date, n_underlyings: int = DEFAULT_UNDERLYINGS,
                         n_series: int = DEFAULT_SERIES) -> TodayUniverse:
    """The universe for ``trade_date`` with about ``n_series`` series (at least 4 per name)."""
    if n_underlyings < 1:
        raise ValueError("underlyings must be at least 1")
    if n_series < 4 * n_underlyings:
        raise ValueError(f"series must be at least 4 per underlying ({4 * n_underlyings})")
    rng = np.random.default_rng(UNIVERSE_SEED)
    heavy = HEAVY[:n_underlyings]
    n_rest = n_underlyings - len(heavy)
    taken = {h[0] for h in heavy}
    tickers = make_tickers(rng, n_rest, taken)
    syms = [h[0] for h in heavy] + tickers
    kinds = [h[1] for h in heavy] + ["equity"] * n_rest
    spot = np.concatenate([[h[2] for h in heavy], np.clip(np.exp(rng.normal(np.log(40.0), 0.9, n_rest)), 2.0, 900.0)])
    spot = np.round(spot, 2)
    w_heavy = np.array([h[3] for h in heavy], dtype=np.float64)
    w_rest = (np.arange(n_rest) + 8.0) ** -1.1
    w_rest = rng.permutation(w_rest)
    if n_rest and heavy:
        w_rest *= w_heavy.sum() * (1 - HEAVY_SHARE) / HEAVY_SHARE / w_rest.sum()
    weight = np.concatenate([w_heavy, w_rest])
    weight /= weight.sum()
    broad = np.array([k != "equity" for k in kinds])
    vol = np.where(broad, rng.uniform(0.15, 0.25, n_underlyings), np.clip(rng.normal(0.45, 0.15, n_underlyings), 0.2, 1.2))
    vol[[i for i, s in enumerate(syms) if s == "VIX"]] = 0.9
    skew = np.where(broad, rng.uniform(0.2, 0.3, n_underlying := n_underlyings), rng.uniform(0.05, 0.2, n_underlying))
    order = np.argsort(-weight, kind="stable")
    penny = np.zeros(n_underlyings, dtype=bool)
    penny[order[: min(400, n_underlyings)]] = True
    # series per underlying: a floor of 4, the rest by activity^0.7
    share = weight ** 0.7
    count = 4 + np.floor(share / share.sum() * (n_series - 4 * n_underlyings)).astype(np.int64)
    count[order[: int(n_series - count.sum())]] += 1

    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("und", "exp", "strike", "put", "w")}
    for u in range(n_underlyings):
        n_u = int(count[u])
        n_exp = int(np.clip(round((n_u / 2) ** 0.4), 1, 60))
        exps = _expirations(trade_date, n_exp, daily=weight[u] >= 0.01)
        n_exp = len(exps)
        k = max(1, n_u // (2 * n_exp))
        step = _strike_step(spot[u], 2.0 * spot[u] * max(vol[u], 0.2), k)
        centre = round(spot[u] / step) * step
        strikes = centre + (np.arange(k) - k // 2) * step
        strikes = strikes[strikes > 0]
        if strikes.size == 0:
            strikes = np.array([step])
        e_idx, s_idx = np.meshgrid(np.arange(n_exp), np.arange(strikes.size), indexing="ij")
        e_idx, s_idx = e_idx.ravel(), s_idx.ravel()
        m = e_idx.size
        exp_ord = np.array([d.toordinal() for d in exps])[e_idx]
        cols["und"].append(np.full(2 * m, u, dtype=np.int32))
        cols["exp"].append(np.tile(exp_ord, 2))
        cols["strike"].append(np.tile(strikes[s_idx], 2))
        cols["put"].append(np.repeat([False, True], m))
        t = np.maximum(np.tile(exp_ord, 2) - trade_date.toordinal(), 0.5) / 365.0
        x = np.abs(np.log(np.tile(strikes[s_idx], 2) / spot[u])) / (max(vol[u], 0.05) * np.sqrt(t))
        cols["w"].append(np.exp(-0.7 * np.minimum(x, 6.0)) / (1.0 + 2.0 * t))
    und = np.concatenate(cols["und"])
    exp_ord = np.concatenate(cols["exp"])
    strike = np.concatenate(cols["strike"])
    put = np.concatenate(cols["put"])
    sw = np.concatenate(cols["w"])
    first = np.concatenate([[0], np.cumsum(np.bincount(und, minlength=n_underlyings))[:-1]])
    counts = np.bincount(und, minlength=n_underlyings)
    # expiry fields
    uniq = np.unique(exp_ord)
    dates = [dt.date.fromordinal(int(o)) for o in uniq]
    pos = np.searchsorted(uniq, exp_ord)
    yyyymmdd = np.array([d.year * 10000 + d.month * 100 + d.day for d in dates], dtype=np.int32)[pos]
    month = np.array([d.month for d in dates])[pos]
    day = np.array([d.day for d in dates], dtype=np.uint8)[pos]
    year = np.array([d.year - 2000 for d in dates], dtype=np.uint8)[pos]
    # roots: the symbol; a few adjusted classes ('1' + ticker) take one expiration of a name
    root_symbol = list(syms)
    root_und = list(range(n_underlyings))
    ser_root = und.astype(np.int32).copy()
    mid = order[len(heavy) : len(heavy) + 4 * DIGIT_ROOTS] if n_rest else np.zeros(0, dtype=np.int64)
    for u in mid[:: 4][:DIGIT_ROOTS].tolist():
        sl = slice(int(first[u]), int(first[u] + counts[u]))
        last_exp = exp_ord[sl].max()
        sel = np.flatnonzero(exp_ord[sl] == last_exp) + first[u]
        if sel.size == 0 or sel.size == counts[u]:
            continue
        root_symbol.append("1" + syms[u][:4])
        root_und.append(u)
        ser_root[sel] = len(root_symbol) - 1
    t_years = np.maximum(exp_ord - trade_date.toordinal(), 0.5) / 365.0
    logm = np.log(strike / spot[und])
    svol = smile_vol(vol[und], skew[und], logm, t_years)
    pricer = SeriesPricer(strike, t_years, svol, put, RISK_FREE_RATE)
    return TodayUniverse(
        und_symbol=syms, und_kind=kinds, und_spot=spot, und_vol=vol, und_weight=weight, und_penny=penny,
        und_first=first.astype(np.int64), und_count=counts.astype(np.int64),
        root_symbol=root_symbol, root_underlying=np.array(root_und, dtype=np.int64),
        ser_root=ser_root, ser_underlying=und, ser_expiry=yyyymmdd, ser_month_code=month_codes(month, put),
        ser_day=day, ser_year=year, ser_strike_milli=np.round(strike * 1000).astype(np.int64), ser_put=put,
        ser_weight=sw, pricer=pricer)
