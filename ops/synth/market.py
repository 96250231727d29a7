"""The quoting market: every exchange's quote of every series, moved tick by tick, with the
NBBO and the BBO indicator of every quote message - vectorized over a chunk of time.

A chunk's work is laid out in *units*: one unit is one series at one tick of its
underlying. Each tick expands to every series of its underlying, so the unit of the same
series at the underlying's previous tick is exactly ``count`` units earlier - the previous
quotes come by index arithmetic, no sort. At a tick the listing exchanges requote one
after another (``rank``, by their latency), so the NBBO around each exchange's requote is a
mix of the tick's new quotes and the previous ones (nbbo.nbbo_by_step). An exchange sends a
quote message only when its quote changed.

The market starts empty: a consumer that reads the capture from its first packet sees
every quote the generator's NBBO is made of.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ops.synth import anomalies as anom
from ops.synth.nbbo import (bbo_letter, bbo_states, bid_keys, bid_of, locked_or_crossed, nbbo_by_step,
                            offer_keys, offer_of)
from ops.synth.price_walk import PriceWalk, Ticks
from ops.synth.pricing import SeriesPricer
from ops.synth.quoting import QuoteBook, quote
from ops.synth.series import SeriesTable

N_EXCH = 6
EXCHANGE_LATENCY_NS = np.array([400_000, 150_000, 250_000, 80_000, 200_000, 320_000], dtype=np.int64)
"""Typical delay from an underlying tick to each exchange's requote (A B C I P X), ours."""
LATENCY_JITTER_NS = 150_000
MAX_LATENCY_NS = 1_200_000
SERIES_SPACING_NS = 25
"""An exchange sends the series of an underlying one after another, this far apart."""


class SynthInvariantError(RuntimeError):
    """The generator produced a locked or crossed NBBO that no injected anomaly explains."""


@dataclass
class QuoteRows:
    """The quote messages of a chunk, in (unit, exchange) order (not time order)."""

    series: np.ndarray       # int64
    exch: np.ndarray         # int64 0..5 (EXCHANGES order)
    time: np.ndarray         # int64 ns, capture-relative
    bid: np.ndarray          # int32 cents (0: no bid)
    offer: np.ndarray        # int32 cents
    bid_size: np.ndarray     # int32
    offer_size: np.ndarray   # int32
    bbo: np.ndarray          # uint8 BBO indicator letter
    bid_state: np.ndarray    # uint8 (nbbo.BID_*)
    offer_state: np.ndarray  # uint8 (nbbo.OFFER_*)
    nb_exch: np.ndarray      # int64 best bid exchange after the quote (-1: none)
    nb_price: np.ndarray     # int64 cents
    nb_size: np.ndarray      # int64
    no_exch: np.ndarray      # int64 best offer exchange after the quote (-1: none)
    no_price: np.ndarray     # int64 cents (0: none)
    no_size: np.ndarray      # int64
    anomaly: np.ndarray      # int64 index into the chunk's anomalies, -1 for normal quotes

    def __len__(self) -> int:
        return int(self.series.shape[0])


@dataclass
class ChunkQuotes:
    """What one chunk of the market produced."""

    rows: QuoteRows
    anomalies: dict[str, np.ndarray]  # anomalies.Injected arrays plus "row"
    ticks: Ticks
    units: int


class QuoteMarket:
    """Every exchange's quotes, carried from chunk to chunk (exchange-major arrays [6, n])."""

    def __init__(self, table: SeriesTable, book: QuoteBook, pricer: SeriesPricer, walk: PriceWalk,
                 rng: np.random.Generator) -> None:
        self.table = table
        self.book = book
        self.pricer = pricer
        self.walk = walk
        self.rng = rng
        n = len(table)
        self.bid = np.zeros((N_EXCH, n), dtype=np.int32)
        self.offer = np.zeros((N_EXCH, n), dtype=np.int32)
        self.bid_size = np.zeros((N_EXCH, n), dtype=np.int32)
        self.offer_size = np.zeros((N_EXCH, n), dtype=np.int32)
        self.anomalous = np.zeros(n, dtype=bool)
        """The series' shown quotes include an anomaly."""
        self.last_nbb = np.zeros(n, dtype=np.int64)
        self.last_nbo = np.zeros(n, dtype=np.int64)
        self.next_event = 0

    def step(self, t0: int, t1: int, scale: float, anomaly_counts: dict[str, int]) -> ChunkQuotes:
        """Advance the market over [t0, t1) with tick rates times ``scale``, injecting
        ``anomaly_counts`` anomalies of each kind where the chunk allows."""
        rng = self.rng
        ticks = self.walk.ticks(t0, t1, scale)
        k = ticks.time.shape[0]
        nser = self.table.count[ticks.underlying]
        n_units = int(nser.sum())
        unit_tick = np.repeat(np.arange(k, dtype=np.int64), nser)
        local = np.arange(n_units, dtype=np.int64) - np.repeat(np.cumsum(nser) - nser, nser)
        series = self.table.first[ticks.underlying][unit_tick] + local
        theo = self.pricer.value(series, ticks.price[unit_tick] / 100.0)
        quotes = quote(self.book, series, theo)
        bid, ask, bsz, asz = quotes
        lat = np.minimum(EXCHANGE_LATENCY_NS[:, None] + rng.exponential(LATENCY_JITTER_NS, (N_EXCH, k)).astype(np.int64),
                         MAX_LATENCY_NS)
        rank_t = np.argsort(np.argsort(lat, axis=0, kind="stable"), axis=0, kind="stable").astype(np.int8)
        rank = rank_t[:, unit_tick]
        has_prev = ~ticks.first_of_und[unit_tick]
        prev_unit = np.arange(n_units, dtype=np.int64) - nser[unit_tick]

        injected = anom.Injected()
        self._inject(anomaly_counts, series, theo, quotes, rank, has_prev, prev_unit, ticks, unit_tick, injected)
        inj = injected.arrays()
        unit_anom = np.zeros(n_units, dtype=bool)
        unit_anom[inj["unit"]] = True

        # The quotes shown before this tick: the same series' quotes at the previous tick.
        idx = np.flatnonzero(has_prev)
        src = prev_unit[idx]
        shown = []
        for cur, state in ((bid, self.bid), (ask, self.offer), (bsz, self.bid_size), (asz, self.offer_size)):
            prev = state[:, series]
            prev[:, idx] = cur[:, src]
            shown.append(prev)
        pb, pa, pbs, pas = shown
        prev_anom = self.anomalous[series]
        prev_anom[idx] = unit_anom[src]

        changed = (bid != pb) | (ask != pa) | (bsz != pbs) | (asz != pas)
        changed &= self.book.listed[:, series]
        changed[inj["exch"], inj["unit"]] = True
        best_bid, best_offer = nbbo_by_step(bid_keys(bid, bsz), bid_keys(pb, pbs), offer_keys(ask, asz),
                                            offer_keys(pa, pas), rank)
        self._check_invariant(best_bid, best_offer, unit_anom | prev_anom, series, ticks, unit_tick)

        # Quote messages in unit order, the exchanges of a unit in EXCHANGES order.
        flat = np.flatnonzero(changed.T.ravel())
        u = flat // N_EXCH
        e = flat % N_EXCH
        j = rank[e, u].astype(np.int64)
        bb0, bb1 = best_bid[j, u], best_bid[j + 1, u]
        bo0, bo1 = best_offer[j, u], best_offer[j + 1, u]
        bid_state, offer_state = bbo_states(e, bb0, bb1, bo0, bo1)
        nb_price, nb_size, nb_exch = bid_of(bb1)
        no_price, no_size, no_exch = offer_of(bo1)
        tick_of_row = unit_tick[u]
        # + rank: exchanges with equal latency still send in their step order.
        time = ticks.time[tick_of_row] + lat[e, tick_of_row] + local[u] * SERIES_SPACING_NS + j
        anomaly = np.full(flat.shape[0], -1, dtype=np.int64)
        inj_row = np.searchsorted(flat, inj["unit"] * N_EXCH + inj["exch"])
        anomaly[inj_row] = np.arange(inj_row.shape[0])
        inj["row"] = inj_row
        rows = QuoteRows(series[u], e, time, bid[e, u], ask[e, u], bsz[e, u], asz[e, u],
                         bbo_letter(bid_state, offer_state), bid_state, offer_state,
                         nb_exch, nb_price, nb_size, no_exch, no_price, no_size, anomaly)

        # Carry each series' quotes at the last tick of its underlying.
        last_tick = np.append(ticks.underlying[1:] != ticks.underlying[:-1], True) if k else np.zeros(0, bool)
        m = np.flatnonzero(last_tick[unit_tick])
        s = series[m]
        for cur, state in ((bid, self.bid), (ask, self.offer), (bsz, self.bid_size), (asz, self.offer_size)):
            state[:, s] = cur[:, m]
        self.anomalous[s] = unit_anom[m]
        self.last_nbb[s] = best_bid[N_EXCH, m]
        self.last_nbo[s] = best_offer[N_EXCH, m]
        return ChunkQuotes(rows, inj, ticks, n_units)

    def _inject(self, counts: dict[str, int], series: np.ndarray, theo: np.ndarray, quotes: tuple[np.ndarray, ...],
                rank: np.ndarray, has_prev: np.ndarray, prev_unit: np.ndarray, ticks: Ticks, unit_tick: np.ndarray,
                out: anom.Injected) -> None:
        """Choose and apply this chunk's anomalies on distinct units whose previous quotes
        are normal (so each anomaly's effect on the NBBO is its own)."""
        rng = self.rng
        n_units = series.shape[0]
        if n_units == 0 or not any(counts.values()):
            return
        listed = self.book.listed
        eligible = theo >= anom.MIN_VALUE
        eligible &= np.where(has_prev, True, ~self.anomalous[series])
        taken = np.zeros(n_units, dtype=bool)
        unit_nser = np.arange(n_units) - prev_unit

        def choose(mask: np.ndarray, k: int) -> np.ndarray:
            chosen = anom.pick(rng, np.flatnonzero(mask & ~taken), k)
            chosen = chosen[listed[:, series[chosen]].any(axis=0)]
            # No two anomalies on consecutive ticks of one series, either way round.
            nxt = np.minimum(chosen + unit_nser[chosen], n_units - 1)
            clash = (has_prev[chosen] & taken[prev_unit[chosen]]) | (has_prev[nxt] & (prev_unit[nxt] == chosen) & taken[nxt])
            chosen = chosen[~clash]
            taken[chosen] = True
            return chosen

        parity_units = choose(eligible & ~self.table.is_put[series], counts.get("parity", 0))
        self.next_event = anom.apply_parity(rng, parity_units, series, theo, self.book, quotes, out, self.next_event)

        off_units = choose(eligible, 4 * counts.get("off_smile", 0))
        if off_units.size:
            exch = _random_listed(rng, listed[:, series[off_units]])
            s = series[off_units]
            vol = self.pricer.vsqrt[s] / np.sqrt(self.pricer.t[s])
            dvol = rng.uniform(0.10, 0.25, off_units.size) * np.where(rng.random(off_units.size) < 0.5, -1.0, 1.0)
            spot = ticks.price[unit_tick[off_units]] / 100.0
            theo_off = self.pricer.value_at_vol(s, spot, np.maximum(vol + dvol, 0.05))
            tick = self.book.tick_hi[s] / 100.0
            visible = np.abs(theo_off - theo[off_units]) >= np.maximum(3 * tick, 0.2 * theo[off_units])
            keep = np.flatnonzero(visible)[: counts.get("off_smile", 0)]
            unused = np.ones(off_units.size, dtype=bool)
            unused[keep] = False
            taken[off_units[unused]] = False
            self.next_event = anom.apply_off_smile(rng, off_units[keep], exch[keep], series, theo_off[keep], dvol[keep],
                                                   self.book, quotes, out, self.next_event)

        lc_units = choose(eligible, counts.get("locked", 0) + counts.get("crossed", 0))
        if lc_units.size:
            crossed = np.zeros(lc_units.size, dtype=bool)
            crossed[rng.permutation(lc_units.size)[: counts.get("crossed", 0)]] = True
            exch = _random_listed(rng, listed[:, series[lc_units]])
            other_bid, other_offer = self._others_shown(lc_units, exch, series, quotes, rank, has_prev, prev_unit)
            ok = (other_bid > 0) | (other_offer > 0)
            self.next_event = anom.apply_lock_cross(rng, lc_units[ok], exch[ok], crossed[ok], other_bid[ok], other_offer[ok],
                                                    series, self.book, quotes, out, self.next_event)

    def _others_shown(self, units: np.ndarray, exch: np.ndarray, series: np.ndarray, quotes: tuple[np.ndarray, ...],
                      rank: np.ndarray, has_prev: np.ndarray, prev_unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best bid and offer (cents, 0 = none) of the exchanges other than ``exch`` at the
        moment ``exch`` requotes each unit."""
        bid, ask, _, _ = quotes
        s = series[units]
        pb = np.where(has_prev[units], bid[:, prev_unit[units]], self.bid[:, s])
        pa = np.where(has_prev[units], ask[:, prev_unit[units]], self.offer[:, s])
        cols = np.arange(units.size)
        before = rank[:, units] < rank[exch, units]
        shown_b = np.where(before, bid[:, units], pb)
        shown_a = np.where(before, ask[:, units], pa)
        others = self.book.listed[:, s].copy()
        others[exch, cols] = False
        none = np.iinfo(np.int32).max
        best_b = np.where(others & (shown_b > 0), shown_b, 0).max(axis=0)
        best_a = np.where(others & (shown_a > 0), shown_a, none).min(axis=0)
        return best_b.astype(np.int64), np.where(best_a == none, 0, best_a).astype(np.int64)

    def _check_invariant(self, best_bid: np.ndarray, best_offer: np.ndarray, explained: np.ndarray, series: np.ndarray,
                         ticks: Ticks, unit_tick: np.ndarray) -> None:
        locked, crossed = locked_or_crossed(best_bid[1:], best_offer[1:])
        bad = (locked | crossed).any(axis=0) & ~explained
        if bad.any():
            u = int(np.flatnonzero(bad)[0])
            raise SynthInvariantError(
                f"{int(bad.sum())} units show a locked or crossed NBBO no anomaly explains; first: series {int(series[u])} "
                f"at tick time {int(ticks.time[unit_tick[u]])} ns")


def _random_listed(rng: np.random.Generator, listed: np.ndarray) -> np.ndarray:
    """One listed exchange per column of ``listed`` [6, n], drawn uniformly."""
    score = np.where(listed, rng.random(listed.shape), -1.0)
    return score.argmax(axis=0).astype(np.int64)

