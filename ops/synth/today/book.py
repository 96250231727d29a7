"""Every exchange's latest quote of every series and the BBO over them, kept in C
(``omdp_obi_synth_quotes``): the state is per series, the loop sequential in time."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from omdp.native import ffi, lib

LOCKED = lib.OMDP_OBI_SYNTH_LOCKED
CROSSED = lib.OMDP_OBI_SYNTH_CROSSED
NO_EXCH = lib.OMDP_OBI_SYNTH_NO_EXCH
NBBO_STATES = ("normal", "locked", "crossed")


@dataclass
class AppliedQuotes:
    """What the book made of a batch of quotes (per message)."""

    bid: np.ndarray
    bid_size: np.ndarray
    offer: np.ndarray
    offer_size: np.ndarray
    anomaly: np.ndarray   # uint8: 0, LOCKED or CROSSED where applied
    bbo_ind: np.ndarray   # uint8 'A'..'P'
    bb_exch: np.ndarray   # uint8 exchange index, NO_EXCH: none
    bb_price: np.ndarray
    bb_size: np.ndarray
    bo_exch: np.ndarray
    bo_price: np.ndarray
    bo_size: np.ndarray
    nbbo_state: np.ndarray  # uint8 index into NBBO_STATES
    pulled: int


def _u32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.uint32)


class QuoteBook:
    """Quotes [series, exchange] in cents and contracts (0 price: none)."""

    def __init__(self, n_series: int, n_exch: int) -> None:
        self.n_series, self.n_exch = n_series, n_exch
        self.state = [np.zeros(n_series * n_exch, dtype=np.uint32) for _ in range(4)]

    def apply(self, series: np.ndarray, exch: np.ndarray, bid: np.ndarray, bid_size: np.ndarray, offer: np.ndarray,
              offer_size: np.ndarray, anomaly: np.ndarray, tick: np.ndarray) -> AppliedQuotes:
        """Apply quotes in time order; returns them as sent with their BBO indicators."""
        n = int(series.shape[0])
        given = {"exch": exch, "bid": bid, "bid_size": bid_size, "offer": offer, "offer_size": offer_size,
                 "anomaly": anomaly, "tick": tick}
        short = [name for name, a in given.items() if np.shape(a) != (n,)]
        if short:  # the C reads n of each: a shorter array would be read past its end
            raise ValueError(f"quotes: {', '.join(short)} must have one value per quote ({n})")
        q = [_u32(bid).copy(), _u32(bid_size).copy(), _u32(offer).copy(), _u32(offer_size).copy()]
        an = np.ascontiguousarray(anomaly, dtype=np.uint8).copy()
        out8 = [np.zeros(n, dtype=np.uint8) for _ in range(4)]  # bbo, bb_exch, bo_exch, state
        out32 = [np.zeros(n, dtype=np.uint32) for _ in range(4)]  # bb_price, bb_size, bo_price, bo_size
        ser = _u32(series)
        ex = np.ascontiguousarray(exch, dtype=np.uint8)
        tk = _u32(tick)

        def p(a: np.ndarray, t: str) -> object:
            return ffi.from_buffer(f"{t}[]", a if a.size else np.zeros(1, a.dtype))

        rc = lib.omdp_obi_synth_quotes(
            self.n_series, self.n_exch, *(p(s, "uint32_t") for s in self.state), n, p(ser, "uint32_t"), p(ex, "uint8_t"),
            *(p(a, "uint32_t") for a in q), p(an, "uint8_t"), p(tk, "uint32_t"), p(out8[0], "uint8_t"),
            p(out8[1], "uint8_t"), p(out32[0], "uint32_t"), p(out32[1], "uint32_t"), p(out8[2], "uint8_t"),
            p(out32[2], "uint32_t"), p(out32[3], "uint32_t"), p(out8[3], "uint8_t"))
        if rc < 0:
            raise ValueError("a quote names a series or exchange outside the book")
        return AppliedQuotes(q[0], q[1], q[2], q[3], an, out8[0], out8[1], out32[0], out32[1], out8[2], out32[2],
                             out32[3], out8[3], int(rc))
