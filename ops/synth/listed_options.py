"""The real listed-options root file of 2007-2008 as a synthetic universe (``--universe``).

Fixed-width records of 83 characters: root(7) underlying(7) company(31) listing
exchanges(12) position limit(12 digits, hundredths of contracts, then a space) cusip(10)
type(3). Kept types: EU equity, EL equity LEAPS, IU index, IL index LEAPS, CU currency;
flex (EF, IF), futures (SF, FC) and anything else carry no OPRA quotes and are skipped.

The file names roots, listings and position limits, nothing about prices: spots,
volatilities and activity come from the same model as the built-in universe, fixed per
name (``stable_unit``), with the position limit tier as the activity proxy.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from omdp.errors import InputError
from ops.synth.universe import EXCHANGES, PENNY_PILOT, Underlying, Universe, stable_unit
from ops.synth.universe_builtin import HEAVY, HEAVY_SHARE

RECORD_WIDTH = 83
KEPT_TYPES = {"EU": ("equity", False), "EL": ("equity", True), "IU": ("index", False),
              "IL": ("index", True), "CU": ("currency", False)}
_LEAPS_YEAR = re.compile(r"\((\d\d) ?L")
_ROOT_OK = re.compile(r"^[A-Z]{1,5}$")


class ListedOptionsError(InputError):
    """A line of the listed-options file that does not have the fixed-width layout."""


@dataclass
class ListedRoot:
    """One kept record of the file."""

    root: str
    underlying: str
    company: str
    exchanges: str
    position_limit: int
    kind: str
    leaps: bool
    leaps_year: int  # 0 when the company text names no year


def parse_line(line: str, lineno: int, path: str) -> ListedRoot | None:
    """One record, or None for a type we skip. Raises ``ListedOptionsError`` on bad layout."""
    text = line.rstrip("\r\n")
    if len(text) < RECORD_WIDTH - 1:
        raise ListedOptionsError(f"{path}:{lineno}: {len(text)} characters, a record has {RECORD_WIDTH}")
    typ = text[80:83].strip()
    if typ not in KEPT_TYPES:
        return None
    limit_field = text[57:69]
    if not limit_field.isdigit():
        raise ListedOptionsError(f"{path}:{lineno}: columns 58-69 {limit_field!r} are not the 12-digit position limit")
    root = text[0:7].strip()
    if not _ROOT_OK.match(root):
        return None
    exchanges = "".join(c for c in EXCHANGES if c in text[45:57])
    if not exchanges:
        return None
    company = text[14:45].strip()
    kind, leaps = KEPT_TYPES[typ]
    m = _LEAPS_YEAR.search(company)
    return ListedRoot(root, text[7:14].strip(), company, exchanges, int(limit_field) // 100, kind, leaps,
                      2000 + int(m.group(1)) if (leaps and m) else 0)


def read_listed_options(path: str | Path) -> list[ListedRoot]:
    """Every kept record of the file, in file order."""
    path = Path(path)
    out: list[ListedRoot] = []
    with open(path, encoding="latin-1") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec = parse_line(line, lineno, str(path))
            if rec is not None:
                out.append(rec)
    if not out:
        raise ListedOptionsError(f"{path}: no option roots of the kept types {sorted(KEPT_TYPES)}")
    return out


def _tier_weight(limit: int) -> float:
    for floor, w in ((250_000, 1.0), (200_000, 0.6), (75_000, 0.25), (50_000, 0.12), (25_000, 0.05)):
        if limit >= floor:
            return w
    return 0.1


def _spot(sym: str, kind: str) -> float:
    u = stable_unit(sym, "spot")
    if kind == "index":
        return round(50.0 * math.exp(3.0 * u), 2)
    if kind == "currency":
        return round(90.0 + 110.0 * u, 2)
    return round(min(600.0, 30.0 * math.exp(2.0 * (u - 0.5)) * math.exp(1.2 * (stable_unit(sym, "spot2") - 0.5))), 2)


def listed_universe(path: str | Path, year: int = 2008) -> Universe:
    """Build the universe of the roots in ``path`` for a trade date in ``year``.

    LEAPS roots carry the January of their year when the company text names it (``(09LPS``)
    and it is still ahead; roots of an expired LEAPS year become regular roots; LEAPS roots
    without a year alternate between the two LEAPS years by name.
    """
    records = read_listed_options(path)
    heavy = {h[0]: h for h in HEAVY}
    by_und: dict[str, list[ListedRoot]] = {}
    for rec in records:
        by_und.setdefault(rec.underlying, []).append(rec)
    unds: list[Underlying] = []
    for sym in sorted(by_und):
        recs = by_und[sym]
        kind = recs[0].kind
        if sym in heavy:
            _, hkind, spot, weight, _ = heavy[sym]
            kind = hkind
        else:
            spot = _spot(sym, kind)
            noise = math.exp(3.0 * (stable_unit(sym, "activity") - 0.5))
            weight = max(_tier_weight(r.position_limit) for r in recs) * noise
        broad = kind in ("etf", "index")
        vol_u = stable_unit(sym, "vol")
        vol = 0.25 + 0.05 * vol_u if broad else 0.25 + 0.35 * vol_u
        skew = 0.20 + 0.10 * stable_unit(sym, "skew") if broad else 0.06 + 0.14 * stable_unit(sym, "skew")
        exchanges = "".join(c for c in EXCHANGES if any(c in r.exchanges for r in recs))
        cycle = 1 + int(3 * stable_unit(sym, "cycle"))
        unds.append(Underlying(sym, kind, spot, vol, skew, cycle, exchanges, weight,
                               penny=sym in PENNY_PILOT, broad=broad, company=recs[0].company))
    heavy_total = sum(u.weight for u in unds if u.symbol in heavy)
    rest_total = sum(u.weight for u in unds if u.symbol not in heavy)
    if heavy_total > 0 and rest_total > 0:
        scale = heavy_total * (1 - HEAVY_SHARE) / HEAVY_SHARE / rest_total
        for u in unds:
            if u.symbol not in heavy:
                u.weight *= scale
    uni = Universe(source=f"file:{Path(path).name}", underlyings=unds, roots=[])
    for uid, u in enumerate(unds):
        u.id = uid
        for rec in sorted(by_und[u.symbol], key=lambda r: r.root):
            uni.add_root(rec.root, uid, rec.exchanges, _leaps_year(rec, year))
    return uni


def _leaps_year(rec: ListedRoot, year: int) -> int:
    if not rec.leaps:
        return 0
    if rec.leaps_year == 0:
        return year + 1 + int(2 * stable_unit(rec.root, "leaps"))
    if rec.leaps_year <= year:
        return 0
    return min(rec.leaps_year, year + 2)
