"""Pre-2010 OPRA symbology: month codes, strike codes, and the plausible tickers and option
roots of the built-in universe.

Month code: 'A'..'L' are January..December calls, 'M'..'X' the puts. Strike code: 'A'..'T'
stand for 5, 10, ..., 100 and 'U'..'Z' for 7.5, 12.5, ..., 32.5, all modulo 100; a strike
with no standard letter ($1 pilot strikes, 2.50, 37.50 ...) gets the letter of the standard
strike just below it (the explicit strike, slot 11, is what identifies a series).
"""
from __future__ import annotations

import string

import numpy as np

LETTERS = string.ascii_uppercase

LEAPS_PREFIXES = {1: "VLOK", 2: "WZGJ"}
"""First letters tried for new roots of the first and second LEAPS year."""


def month_codes(month: np.ndarray, put: np.ndarray) -> np.ndarray:
    """Expiration month codes (ASCII) of calls and puts expiring in ``month`` (1..12)."""
    month = np.asarray(month, dtype=np.int64)
    return np.where(np.asarray(put, dtype=bool), ord("M") + month - 1, ord("A") + month - 1).astype(np.uint8)


def strike_codes(strike_milli: np.ndarray) -> np.ndarray:
    """Strike code letters (as ASCII byte values) of strikes given in thousandths of a dollar."""
    k = np.asarray(strike_milli, dtype=np.int64)
    cents = (k // 10) % 10_000  # modulo $100
    quarter = cents % 500
    # 'U'..'Z': 7.50, 12.50, ..., 32.50 (mod 100).
    half = (quarter == 250) & (cents >= 750) & (cents <= 3250) & (k % 10 == 0)
    half_code = ord("U") + (cents - 750) // 500
    # 'A'..'T': multiples of 5 (mod 100), 0 being 100 ('T'); others fall to the five below.
    fives = (cents // 500) % 20
    five_code = np.where(fives == 0, ord("T"), ord("A") + fives - 1)
    return np.where(half, half_code, five_code).astype(np.uint8)


def strike_band(strike_milli: np.ndarray) -> np.ndarray:
    """Which $100 span of strike codes a strike falls in: strikes 0..100 -> 0, 100..200 -> 1.

    Strike letters repeat every $100, so a root carries strikes of one band only; an
    underlying whose strikes span several bands needs several roots (as real classes did).
    """
    k = np.asarray(strike_milli, dtype=np.int64)
    return np.maximum((k - 1) // 100_000, 0)


def make_tickers(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """``count`` distinct plausible stock tickers not in ``taken``: 1-3 letters (listed
    exchange style) for about 60%, 4 letters (NASDAQ style) for the rest."""
    out: list[str] = []
    seen = set(taken)
    lengths = rng.choice([1, 2, 3, 4], size=count * 2, p=[0.01, 0.12, 0.47, 0.40])
    i = 0
    while len(out) < count:
        n = int(lengths[i % lengths.size])
        i += 1
        sym = "".join(LETTERS[j] for j in rng.integers(0, 26, n))
        if sym not in seen:
            seen.add(sym)
            out.append(sym)
    return out


class RootNamer:
    """Hands out fresh three-letter option roots, never one already taken.

    Every three-letter root sits in a per-first-letter queue shuffled once by ``rng``, so a
    request preferring some first letters (LEAPS roots of 2008 started with V, W, L, O ...)
    is a pop, not a search.
    """

    def __init__(self, rng: np.random.Generator, taken: set[str]) -> None:
        self.taken = taken
        self._rng = rng
        self._queues: dict[str, list[str]] = {}
        for head in LETTERS:
            names = [head + a + b for a in LETTERS for b in LETTERS]
            order = rng.permutation(len(names))
            self._queues[head] = [names[i] for i in order[::-1]]

    def fresh(self, prefer: str = "") -> str:
        """A root starting with the first letter of ``prefer`` that has one free, else with a
        letter drawn at random (so made roots spread over the alphabet, and the lines)."""
        for head in prefer + "".join(LETTERS[i] for i in self._rng.permutation(26)):
            queue = self._queues[head]
            while queue:
                root = queue.pop()
                if root not in self.taken:
                    self.taken.add(root)
                    return root
        raise RuntimeError("every three-letter root is taken")


def main_root(ticker: str, namer: RootNamer) -> str:
    """The main option root of a ticker: the ticker itself up to three letters, else the
    NASDAQ style of 2008 (two letters of the ticker and 'Q', e.g. MSFT -> MSQ)."""
    if len(ticker) <= 3 and ticker not in namer.taken:
        namer.taken.add(ticker)
        return ticker
    for third in "Q" + LETTERS:
        root = ticker[:2] + third
        if root not in namer.taken:
            namer.taken.add(root)
            return root
    return namer.fresh()
