"""The option universe of a synthetic day: underlyings (spot, volatility smile, expiration
cycle, listing exchanges, activity) and their option roots.

Two sources fill it: the built-in generator (``universe_builtin``) and the real 2008 root
list (``listed_options``). Both return this shape, so everything downstream (series, lines,
quoting) is the same for either.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ops.synth.symbols import RootNamer

EXCHANGES = "ABCIPX"
"""The six options exchanges of February 2008, in the order used for NBBO tie-breaks."""

EXCHANGE_NAMES = {
    "A": "AMEX",
    "B": "BOX",
    "C": "CBOE",
    "I": "ISE",
    "P": "NYSE Arca",
    "X": "PHLX",
    "O": "OPRA (administrative and control messages)",
}

PENNY_PILOT = ("QQQQ", "IWM", "SMH", "AAPL", "AMD", "AMZN", "CSCO", "GE", "INTC", "MSFT", "ORCL", "YHOO", "MO")
"""Our choice of the 13 Penny Pilot classes (the exact 2007 list is not confirmed)."""

RISK_FREE_RATE = 0.03
"""Fed funds after the cut of 30 January 2008."""


@dataclass
class Root:
    """One option root: its symbol, its underlying, the exchanges listing it, and whether
    it carries LEAPS (``leaps_year``, 0 for regular expirations)."""

    symbol: str
    underlying: int
    exchanges: str
    leaps_year: int = 0


@dataclass
class Underlying:
    """One underlying: what the price model and the quoting need to know about it."""

    symbol: str
    kind: str               # "equity", "etf", "index" or "currency"
    spot: float             # opening price in dollars
    vol: float              # at-the-money implied volatility
    skew: float             # slope of the smile in log-moneyness (downside skew > 0)
    cycle: int              # quarterly expiration cycle 1, 2 or 3
    exchanges: str          # union of its roots' listing exchanges
    weight: float           # relative share of the day's quote messages
    penny: bool = False     # Penny Pilot class
    broad: bool = False     # index-style listing: more months, finer strikes
    company: str = ""
    roots: list[int] = field(default_factory=list)
    id: int = 0


@dataclass
class Universe:
    """Underlyings and roots, each underlying knowing its roots' indices."""

    source: str
    underlyings: list[Underlying]
    roots: list[Root]
    namer: RootNamer | None = None
    """Makes new roots for strike bands the listing lacks (built-in universe only)."""

    def regular_roots(self, u: int) -> list[int]:
        """Root indices of underlying ``u`` for regular expirations."""
        return [r for r in self.underlyings[u].roots if self.roots[r].leaps_year == 0]

    def leaps_roots(self, u: int, year: int) -> list[int]:
        """Root indices of underlying ``u`` for the LEAPS of ``year``."""
        return [r for r in self.underlyings[u].roots if self.roots[r].leaps_year == year]

    def add_root(self, symbol: str, u: int, exchanges: str, leaps_year: int) -> int:
        """Append a root of underlying ``u`` and return its index."""
        self.roots.append(Root(symbol, u, exchanges, leaps_year))
        idx = len(self.roots) - 1
        self.underlyings[u].roots.append(idx)
        return idx


def stable_unit(text: str, salt: str = "") -> float:
    """A number in [0, 1) fixed by ``text``: per-name properties that stay the same whatever
    else is in the universe or the run's seed."""
    digest = hashlib.blake2b((salt + ":" + text).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64
