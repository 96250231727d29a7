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
from ops.synth.nbbo import (NO_OFFER, bbo_letter, bbo_states, bid_keys, bid_of, locked_or_crossed, nbbo_by_step,
                            offer_keys, offer_of)
from ops.synth.price_walk import PriceWalk, Ticks
from ops.synth.pricing import SeriesPricer
from ops.synth.quoting import QuoteBook, quote
from ops.synth.series import SeriesTable, twin_series

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
    """The quote messages of a chunk, in (line, time) order."""

    series: np.ndarray       # int64
    exch: np.ndarray         # int64 0..5 (EXCHANGES order)
    time: np.ndarray         # int64 ns, capture-relative
    line: np.ndarray         # int64 OPRA line (1-based)
    bid: np.ndarray          # int32 cents (0: no bid)
    offer: np.ndarray        # int32 cents
    bid_size: np.ndarray     # int32
    offer_size: np.ndarray   # int32
    bbo: np.ndarray          # uint8 BBO indicator letter
    bid_state: np.ndarray    # uint8 (nbbo.BID_*)
    offer_state: np.ndarray  # uint8 (nbbo.OFFER_*)
    best_bid: np.ndarray     # int64 NBBO bid key after the quote (nbbo.bid_of decodes it)
    best_offer: np.ndarray   # int64 NBBO offer key after the quote (nbbo.offer_of decodes it)
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
    """Every exchange's shown quotes, carried from chunk to chunk as NBBO keys ([6, n],
    exchange-major: a key holds price and size, so an unchanged key is an unchanged quote)."""

    def __init__(self, table: SeriesTable, book: QuoteBook, pricer: SeriesPricer, walk: PriceWalk,
                 series_line: np.ndarray, rng: np.random.Generator) -> None:
        self.table = table
        self.twin = twin_series(table)
        # calls a parity anomaly may shift: their put is listed somewhere (its quotes set the shift)
        self.paired = (self.twin >= 0) & book.listed[:, np.maximum(self.twin, 0)].any(axis=0)
        self.series_line = np.asarray(series_line, dtype=np.int64)
        self.book = book
        self.pricer = pricer
        self.walk = walk
        self.rng = rng
        n = len(table)
        self.bid_key = np.zeros((N_EXCH, n), dtype=np.int64)
        self.offer_key = np.full((N_EXCH, n), NO_OFFER, dtype=np.int64)
        self.anomalous = np.zeros(n, dtype=bool)
        """The series' shown quotes include an anomaly."""
        self.last_nbb = np.zeros(n, dtype=np.int64)
        self.last_nbo = np.full(n, NO_OFFER, dtype=np.int64)
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
        step_exch_t = np.argsort(lat, axis=0, kind="stable")
        rank_t = np.argsort(step_exch_t, axis=0, kind="stable").astype(np.int8)
        rank = rank_t[:, unit_tick]
        has_prev = ~ticks.first_of_und[unit_tick]
        prev_unit = np.arange(n_units, dtype=np.int64) - nser[unit_tick]

        injected = anom.Injected()
        self._inject(anomaly_counts, series, theo, quotes, rank, has_prev, prev_unit, ticks, unit_tick, injected)
        inj = injected.arrays()
        unit_anom = np.zeros(n_units, dtype=bool)
        unit_anom[inj["unit"]] = True

        # Keys of the new quotes; the keys shown before this tick are the same series' keys
        # at the underlying's previous tick (or the carried state at its first tick).
        kb, ka = bid_keys(bid, bsz), offer_keys(ask, asz)
        idx = np.flatnonzero(has_prev)
        src = prev_unit[idx]
        first = np.flatnonzero(~has_prev)
        kb_prev = np.empty_like(kb)
        ka_prev = np.empty_like(ka)
        kb_prev[:, idx], ka_prev[:, idx] = kb[:, src], ka[:, src]
        kb_prev[:, first], ka_prev[:, first] = self.bid_key[:, series[first]], self.offer_key[:, series[first]]
        prev_anom = np.empty(n_units, dtype=bool)
        prev_anom[idx] = unit_anom[src]
        prev_anom[first] = self.anomalous[series[first]]

        changed = (kb != kb_prev) | (ka != ka_prev)
        changed[inj["exch"], inj["unit"]] = True
        best_bid, best_offer = nbbo_by_step(kb, kb_prev, ka, ka_prev, step_exch_t[:, unit_tick])
        self._check_invariant(best_bid, best_offer, unit_anom | prev_anom, series, ticks, unit_tick)

        # Quote messages, ordered by (line, time): each line's messages are then one slice.
        flat = np.flatnonzero(changed.ravel())
        e = flat // n_units
        u = flat - e * n_units
        j = rank[e, u].astype(np.int64)
        tick_of_row = unit_tick[u]
        # + j: exchanges with equal latency still send in their step order.
        time = ticks.time[tick_of_row] + lat[e, tick_of_row] + local[u] * SERIES_SPACING_NS + j
        line = self.series_line[series[u]]
        order = np.argsort((line << 44) | (time - t0 + (1 << 40)))
        e, u, j, time, line = e[order], u[order], j[order], time[order], line[order]
        bb1, bo1 = best_bid[j + 1, u], best_offer[j + 1, u]
        bid_state, offer_state = bbo_states(e, best_bid[j, u], bb1, best_offer[j, u], bo1)
        anomaly = np.full(flat.shape[0], -1, dtype=np.int64)
        sorted_pos = np.empty(flat.shape[0], dtype=np.int64)
        sorted_pos[order] = np.arange(flat.shape[0])
        inj_row = sorted_pos[np.searchsorted(flat, inj["exch"] * n_units + inj["unit"])]
        anomaly[inj_row] = np.arange(inj_row.shape[0])
        inj["row"] = inj_row
        rows = QuoteRows(series[u], e, time, line, bid[e, u], ask[e, u], bsz[e, u], asz[e, u],
                         bbo_letter(bid_state, offer_state), bid_state, offer_state, bb1, bo1, anomaly)

        # Carry each series' quotes at the last tick of its underlying.
        last_tick = np.append(ticks.underlying[1:] != ticks.underlying[:-1], True) if k else np.zeros(0, bool)
        m = np.flatnonzero(last_tick[unit_tick])
        s = series[m]
        self.bid_key[:, s] = kb[:, m]
        self.offer_key[:, s] = ka[:, m]
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

        parity_units = choose(eligible & ~self.table.is_put[series] & self.paired[series], counts.get("parity", 0))
        chosen = series[parity_units]
        put_units = parity_units + self.twin[chosen] - chosen   # the same tick's quote of the put
        self.next_event = anom.apply_parity(rng, parity_units, put_units, ticks.price[unit_tick[parity_units]] / 100.0,
                                            series, theo, self.book, quotes, out, self.next_event)

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
        pb = np.where(has_prev[units], bid[:, prev_unit[units]], bid_of(self.bid_key[:, s])[0])
        pa = np.where(has_prev[units], ask[:, prev_unit[units]], offer_of(self.offer_key[:, s])[0])
        cols = np.arange(units.size)
        before = rank[:, units] < rank[exch, units]
        shown_b = np.where(before, bid[:, units], pb)
        shown_a = np.where(before, ask[:, units], pa)
        others = self.book.listed[:, s].copy()
        others[exch, cols] = False
        none = np.iinfo(np.int64).max
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

