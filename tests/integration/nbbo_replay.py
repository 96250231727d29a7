"""An NBBO kept from the decoded quotes alone, written independently of the generator, to
check the feed's BBO indicators and appendages (the rule of docs/synth.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

EXCH = "ABCIPX"


@dataclass
class NbboReplay:
    """Replays 'k' messages in feed order; counts disagreements with the feed."""

    books: dict = field(default_factory=dict)
    live_anomaly: dict = field(default_factory=dict)
    checked: int = 0
    mismatches: list = field(default_factory=list)
    unexplained: list = field(default_factory=list)
    states: dict = field(default_factory=dict)

    @staticmethod
    def _best(book: dict) -> tuple:
        bids = [(q[0], q[1], -EXCH.index(e)) for e, q in book.items() if q[0] > 0]
        offers = [(q[2], -q[3], EXCH.index(e)) for e, q in book.items() if q[2] > 0]
        return (max(bids) if bids else None), (min(offers) if offers else None)

    def feed(self, m: np.void, line: int, anomalous: bool) -> None:
        """One decoded quote record; ``anomalous`` when the ground truth lists it."""
        key = (bytes(m["root"]), int(m["expiry"]), int(m["strike_px"]), int(m["put_call"]))
        book = self.books.setdefault(key, {})
        e = chr(int(m["participant"]))
        bb0, bo0 = self._best(book)
        book[e] = (int(m["bid"]), int(m["bid_size"]), int(m["offer"]), int(m["offer_size"]))
        live = self.live_anomaly.setdefault(key, set())
        (live.add if anomalous else live.discard)(e)
        bb1, bo1 = self._best(book)
        sb = 0 if bb1 == bb0 else (2 if bb1 is None else (1 if EXCH[-bb1[2]] == e else 3))
        so = 0 if bo1 == bo0 else (3 if bo1 is None else (1 if EXCH[bo1[2]] == e else 2))
        ok = chr(int(m["bbo_ind"])) == chr(ord("A") + 4 * sb + so)
        if ok and sb == 3:
            ok = (chr(int(m["best_bid_part"])), int(m["best_bid"]), int(m["best_bid_size"])) == (EXCH[-bb1[2]], bb1[0], bb1[1])
        if ok and so == 2:
            ok = (chr(int(m["best_offer_part"])), int(m["best_offer"]), int(m["best_offer_size"])) == (EXCH[bo1[2]], bo1[0], -bo1[1])
        self.checked += 1
        if not ok:
            self.mismatches.append((line, int(m["msg_seq"])))
        state = "normal"
        if bb1 is not None and bo1 is not None and bb1[0] >= bo1[0]:
            state = "crossed" if bb1[0] > bo1[0] else "locked"
            if not live:
                self.unexplained.append((line, int(m["msg_seq"])))
        self.states[(line, int(m["msg_seq"]))] = state
