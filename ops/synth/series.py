"""The option series of the day: expirations per class, strikes on the grids of 2008 around
the opening spot, and the root that carries each (strike letters repeat every $100, so an
underlying whose strikes span several $100 bands needs one root per band).

The table is struct-of-arrays, series of one underlying contiguous and each call directly
followed by its put, which is what the quoting engine's index arithmetic relies on.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import numpy as np

from ops.synth.calendar import broad_expirations, leaps_expirations, regular_expirations
from ops.synth.symbols import LEAPS_PREFIXES, month_codes, strike_band, strike_codes
from ops.synth.universe import EXCHANGES, Underlying, Universe

MAX_STRIKES_PER_EXPIRY = 60


@dataclass
class SeriesTable:
    """Every series of the day, one entry per array element."""

    underlying: np.ndarray     # int32 underlying id
    root: np.ndarray           # int32 root index into Universe.roots
    expiry: np.ndarray         # uint32 YYYYMMDD
    month_code: np.ndarray     # uint8 ASCII 'A'..'X'
    expiry_day: np.ndarray     # uint8
    expiry_year: np.ndarray    # uint8, two digits
    is_put: np.ndarray         # bool
    strike_milli: np.ndarray   # int64 strike in thousandths of a dollar
    strike_den: np.ndarray     # uint8 ASCII denominator code of the explicit strike
    strike_raw: np.ndarray     # uint32 explicit strike in units of its denominator
    strike_code: np.ndarray    # uint8 ASCII legacy strike letter
    t_years: np.ndarray        # float64 time to expiration
    listed: np.ndarray         # bool [n, 6]: exchange e (EXCHANGES order) lists the series
    first: np.ndarray          # int64 [n_underlyings]: first series of each underlying
    count: np.ndarray          # int64 [n_underlyings]: its number of series

    def __len__(self) -> int:
        return int(self.underlying.shape[0])

    @property
    def strike(self) -> np.ndarray:
        """Strikes in dollars."""
        return self.strike_milli / 1000.0


def twin_series(table: SeriesTable) -> np.ndarray:
    """Each series' other leg (same root, expiry and strike, the other of put and call), -1
    where the table has none: what a parity check pairs."""
    order = np.lexsort((table.is_put, table.strike_milli, table.expiry, table.root))
    key = np.stack([table.root[order].astype(np.int64), table.expiry[order].astype(np.int64), table.strike_milli[order]])
    same = (key[:, 1:] == key[:, :-1]).all(axis=0) & (table.is_put[order][1:] != table.is_put[order][:-1])
    twin = np.full(len(table), -1, dtype=np.int64)
    twin[order[:-1][same]] = order[1:][same]
    twin[order[1:][same]] = order[:-1][same]
    return twin


def strike_step(level: float, kind: str) -> float:
    """The strike interval of 2008 at a price level: $2.50 below $25, $5 to $200, $10 above;
    index classes use $5 near the money at high levels (see ``strike_grid``)."""
    if level < 25:
        return 2.5
    if level < 200:
        return 5.0
    if kind == "index" and level >= 500:
        return 25.0
    return 10.0


def strike_grid(u: Underlying, t_years: float, near: bool) -> np.ndarray:
    """Strikes (dollars) listed for one expiration of ``u`` around its opening spot.

    The range widens with volatility and time, more on the downside; index ETFs get $1
    strikes near the money in the near months, indices $5 strikes near the money.
    """
    s = u.spot
    width = min(max(2.5 * u.vol * math.sqrt(max(t_years, 1.0 / 12)), 0.25), 1.2)
    lo, hi = s * math.exp(-width), s * math.exp(0.7 * width)
    step = strike_step(lo, u.kind)
    k = math.ceil(lo / step) * step
    strikes: set[float] = set()
    while k <= hi:
        strikes.add(round(k, 2))
        k += strike_step(k, u.kind)
    if u.kind == "etf" and near:
        strikes.update(float(x) for x in range(math.ceil(s * 0.85), math.floor(s * 1.15) + 1))
    if u.kind == "index" and s >= 500:
        strikes.update(float(x) for x in range(math.ceil(s * 0.95 / 5) * 5, math.ceil(s * 1.05), 5))
    grid = sorted(x for x in strikes if x >= 2.5)
    if len(grid) > MAX_STRIKES_PER_EXPIRY:
        grid = sorted(sorted(grid, key=lambda x: abs(math.log(x / s)))[:MAX_STRIKES_PER_EXPIRY])
    return np.array(grid, dtype=np.float64)


def _ymd(d: dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


def build_series(uni: Universe, trade_date: dt.date) -> SeriesTable:
    """Lay out every series of ``uni`` on ``trade_date``; the built-in universe gets a new
    root for every strike band its listing lacks."""
    und_l: list[int] = []
    exp_l: list[int] = []
    t_l: list[float] = []
    grids: list[np.ndarray] = []
    roots: list[np.ndarray] = []
    first = np.zeros(len(uni.underlyings), dtype=np.int64)
    count = np.zeros(len(uni.underlyings), dtype=np.int64)
    n = 0
    for uid, u in enumerate(uni.underlyings):
        first[uid] = n
        for leaps_year, exps in _expiration_groups(uni, uid, trade_date):
            per_exp = [(exp, strike_grid(u, (exp - trade_date).days / 365.0, near=i < 3 and not leaps_year))
                       for i, exp in enumerate(exps)]
            per_exp = [(e, g) for e, g in per_exp if g.size]
            if not per_exp:
                continue
            root_of_band = _roots_by_band(uni, uid, leaps_year, np.concatenate([g for _, g in per_exp]), trade_date)
            for exp, grid in per_exp:
                milli = np.round(grid * 1000).astype(np.int64)
                und_l.append(uid)
                exp_l.append(_ymd(exp))
                t_l.append((exp - trade_date).days / 365.0)
                grids.append(milli)
                roots.append(root_of_band[strike_band(milli)])
                n += 2 * grid.size
        count[uid] = n - first[uid]
    sizes = np.array([g.size for g in grids], dtype=np.int64) * 2
    strikes = np.concatenate(grids) if grids else np.zeros(0, np.int64)
    cols = {
        "und": np.repeat(np.array(und_l, dtype=np.int32), sizes),
        "root": np.repeat(np.concatenate(roots) if roots else np.zeros(0, np.int32), 2),
        "exp": np.repeat(np.array(exp_l, dtype=np.uint32), sizes),
        "put": np.tile(np.array([False, True]), int(sizes.sum()) // 2),
        "strike": np.repeat(strikes, 2),
        "t": np.repeat(np.array(t_l, dtype=np.float64), sizes),
    }
    return _to_table(uni, cols, first, count)


def _expiration_groups(uni: Universe, uid: int, trade_date: dt.date) -> list[tuple[int, tuple[dt.date, ...]]]:
    """(LEAPS year or 0, expirations) of an underlying: regular months, then each LEAPS year
    it has roots for."""
    u = uni.underlyings[uid]
    regular = broad_expirations(trade_date) if u.broad else regular_expirations(trade_date, u.cycle)
    if u.kind == "currency":
        regular = regular[:3]
    groups = [(0, regular)]
    for exp in leaps_expirations(trade_date):
        if uni.leaps_roots(uid, exp.year) and exp not in regular:
            groups.append((exp.year, (exp,)))
    return groups


def _roots_by_band(uni: Universe, uid: int, leaps_year: int, strikes: np.ndarray, trade_date: dt.date) -> np.ndarray:
    """A lookup band -> root index for one expiration group: the band of the spot gets the
    first root, the next nearest bands the next ones (cycling when the listing has fewer
    roots than bands; the built-in universe makes a root per band instead)."""
    u = uni.underlyings[uid]
    roots = uni.leaps_roots(uid, leaps_year) if leaps_year else uni.regular_roots(uid)
    if not roots:
        roots = list(u.roots)
    bands = np.unique(strike_band(np.round(strikes * 1000).astype(np.int64)))
    spot_band = int(strike_band(np.array([int(round(u.spot * 1000))]))[0])
    order = sorted(bands.tolist(), key=lambda b: (abs(b - spot_band), b))
    if uni.namer is not None:
        prefixes = LEAPS_PREFIXES.get(leaps_year - trade_date.year, "")
        while len(roots) < len(order):
            sym = uni.namer.fresh(prefixes)
            roots.append(uni.add_root(sym, uid, uni.roots[roots[0]].exchanges, leaps_year))
    lookup = np.zeros(int(bands.max()) + 1, dtype=np.int32)
    for i, b in enumerate(order):
        lookup[b] = roots[i % len(roots)]
    return lookup


def _to_table(uni: Universe, cols: dict[str, np.ndarray], first: np.ndarray, count: np.ndarray) -> SeriesTable:
    exp = cols["exp"].astype(np.int64)
    is_put = cols["put"].astype(bool)
    mc = month_codes((exp // 100) % 100, is_put)
    strike_milli = cols["strike"].astype(np.int64)
    big = strike_milli >= 1_000_000
    # Denominator 'C' (thousandths) keeps the 6-digit field for strikes under $1000; 'B' above.
    strike_den = np.where(big, ord("B"), ord("C")).astype(np.uint8)
    strike_raw = np.where(big, strike_milli // 10, strike_milli).astype(np.uint32)
    roots = cols["root"].astype(np.int32)
    root_listed = np.array([[c in r.exchanges for c in EXCHANGES] for r in uni.roots], dtype=bool).reshape(-1, len(EXCHANGES))
    return SeriesTable(
        underlying=cols["und"].astype(np.int32),
        root=roots,
        expiry=exp.astype(np.uint32),
        month_code=mc,
        expiry_day=(exp % 100).astype(np.uint8),
        expiry_year=((exp // 10000) % 100).astype(np.uint8),
        is_put=is_put,
        strike_milli=strike_milli,
        strike_den=strike_den,
        strike_raw=strike_raw,
        strike_code=strike_codes(strike_milli),
        t_years=cols["t"].astype(np.float64),
        listed=root_listed[roots] if roots.size else np.zeros((0, len(EXCHANGES)), dtype=bool),
        first=first,
        count=count,
    )
