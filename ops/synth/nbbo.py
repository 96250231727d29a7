"""The NBBO the generator maintains, and the BBO indicator and appendages it puts on quotes.

The rule (documented for consumers in docs/synth.md): per series, the best bid is the
highest bid above zero among every exchange's latest quote; ties go to the larger size,
then to the exchange earlier in A, B, C, I, P, X. The best offer is the lowest offer above
zero, ties the same way. A quote's BBO indicator compares the NBBO just before and just
after it, side by side:

  bid side:   no change (0) | this quote is the new best bid (1) | no best bid (2) |
              another exchange holds the new best bid: best bid appendage (3)
  offer side: no change (0) | this quote is the new best offer (1) |
              appendage (2) | no best offer (3)

and the indicator letter is ``'A' + 4 * bid_state + offer_state`` (OPRA's table: 'A' no
change on either side ... 'O' both appendages). "Change" means any of price, size or
exchange of the best quote changed.

Best quotes are packed into int64 keys that order exactly by that rule, so the NBBO over
exchanges is one max (bids) or min (offers) along an axis.
"""
from __future__ import annotations

import numpy as np

SIZE_BITS = 17
SIZE_CAP = (1 << SIZE_BITS) - 1
NO_OFFER = np.int64(1) << 62

BID_SAME, BID_THIS, BID_NONE, BID_APPENDAGE = 0, 1, 2, 3
OFFER_SAME, OFFER_THIS, OFFER_APPENDAGE, OFFER_NONE = 0, 1, 2, 3


def bid_keys(bid: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Keys of bids [6, n] (exchange-major): larger is better; 0 is no bid."""
    exch = (7 - np.arange(bid.shape[0], dtype=np.int64))[:, None]
    key = (bid.astype(np.int64) << (SIZE_BITS + 3)) | (np.minimum(size, SIZE_CAP).astype(np.int64) << 3) | exch
    return np.where(bid > 0, key, 0)


def offer_keys(offer: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Keys of offers [6, n]: smaller is better; ``NO_OFFER`` is none."""
    exch = np.arange(offer.shape[0], dtype=np.int64)[:, None]
    key = (offer.astype(np.int64) << (SIZE_BITS + 3)) | ((SIZE_CAP - np.minimum(size, SIZE_CAP)).astype(np.int64) << 3) | exch
    return np.where(offer > 0, key, NO_OFFER)


def bid_of(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(price cents, size, exchange index) of bid keys; exchange -1 where there is no bid."""
    price = key >> (SIZE_BITS + 3)
    size = (key >> 3) & SIZE_CAP
    exch = np.where(key > 0, 7 - (key & 7), -1)
    return price, size, exch


def offer_of(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(price cents, size, exchange index) of offer keys; zeros and -1 where there is none."""
    none = key >= NO_OFFER
    price = np.where(none, 0, key >> (SIZE_BITS + 3))
    size = np.where(none, 0, SIZE_CAP - ((key >> 3) & SIZE_CAP))
    exch = np.where(none, -1, key & 7)
    return price, size, exch


def nbbo_by_step(kb_cur: np.ndarray, kb_prev: np.ndarray, ka_cur: np.ndarray, ka_prev: np.ndarray,
                 step_exch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NBBO keys of units whose exchanges requote one after another.

    A unit is one series at one underlying tick: before the tick every exchange shows its
    ``prev`` quote; at step j the exchange ``step_exch[j]`` replaces it with its ``cur``
    quote. Keys are [6, n] (exchange-major). Returns ``(best_bid, best_offer)``, each
    [7, n]: row j is the NBBO after step j - 1 (row 0: before any step). After step j the
    exchanges of steps 0..j show ``cur`` and the others ``prev``, so the NBBO is a running
    best of the new quotes in step order against a running best of the old ones in reverse.
    """
    n = kb_cur.shape[1]
    flat = step_exch.astype(np.int64) * n + np.arange(n, dtype=np.int64)
    out = []
    for cur, prev, best in ((kb_cur, kb_prev, np.maximum), (ka_cur, ka_prev, np.minimum)):
        new = cur.ravel()[flat]
        old = prev.ravel()[flat]
        for j in range(1, 6):  # running best of the new quotes, in step order
            best(new[j - 1], new[j], out=new[j])
        for j in range(4, -1, -1):  # and of the old ones, from the last step back
            best(old[j + 1], old[j], out=old[j])
        res = np.empty((7, n), dtype=np.int64)
        res[0] = old[0]
        best(new[:5], old[1:], out=res[1:6])
        res[6] = new[5]
        out.append(res)
    return out[0], out[1]


def bbo_states(exch: np.ndarray, bb_before: np.ndarray, bb_after: np.ndarray, bo_before: np.ndarray,
               bo_after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bid and offer states (module docstring) of quotes by exchange ``exch``."""
    bid_state = np.where(
        bb_after == bb_before, BID_SAME,
        np.where(bb_after == 0, BID_NONE, np.where(7 - (bb_after & 7) == exch, BID_THIS, BID_APPENDAGE)))
    offer_state = np.where(
        bo_after == bo_before, OFFER_SAME,
        np.where(bo_after >= NO_OFFER, OFFER_NONE, np.where((bo_after & 7) == exch, OFFER_THIS, OFFER_APPENDAGE)))
    return bid_state.astype(np.uint8), offer_state.astype(np.uint8)


def bbo_letter(bid_state: np.ndarray, offer_state: np.ndarray) -> np.ndarray:
    """OPRA's BBO indicator letters (ASCII) of bid and offer states."""
    return (ord("A") + 4 * bid_state.astype(np.int32) + offer_state).astype(np.uint8)


def locked_or_crossed(best_bid: np.ndarray, best_offer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(locked, crossed) masks of NBBO keys: best bid equal to / above the best offer."""
    bp = best_bid >> (SIZE_BITS + 3)
    op = np.where(best_offer >= NO_OFFER, np.iinfo(np.int64).max, best_offer >> (SIZE_BITS + 3))
    both = (best_bid > 0) & (best_offer < NO_OFFER)
    return both & (bp == op), both & (bp > op)
