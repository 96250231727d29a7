"""The feed's messages other than quotes: last sales, open interest, underlying values,
administrative text, control messages and end-of-day summaries.

- 'a' last sales: about 0.03% of quote messages; a trade hits the NBBO just after a quote
  (a buy at the best offer or a sell at the best bid), on the exchange showing it.
- 'd' open interest in the first minute of the session. OPRA sent it for every series
  before the open; we send it for the most active series only, about 0.04% of the
  minute's messages, so that a capture of the open keeps the intraday quote share.
- 'Y' underlying values every 5 s per line (staggered): index values (type ' ') and, every
  third time, PHLX currency spot values (type 'F'); consecutive entries of a group always
  differ in every field (SIAC's encoder needs that).
- 'C' administrative text, about one per line per 90 s, mostly from OPRA.
- 'H' control: "START OF DAY" (type 'C') first on every line when the capture covers the
  open, "END OF DAY" (type 'J') 30 s after the close.
- 'f' end-of-day summaries, for every series that traded, in the 20 s after the close.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ops.synth.calendar import NS_PER_S, CaptureClock
from ops.synth.market import QuoteMarket, QuoteRows
from ops.synth.messages import Messages
from ops.synth.nbbo import bid_of, offer_of
from ops.synth.pricing import SeriesPricer
from ops.synth.records import SeriesRecords, currency_spots_message, index_values_message, text_message
from ops.synth.series import SeriesTable
from ops.synth.universe import Universe

TRADE_SHARE = 0.0003
OPEN_INTEREST_SHARE = 0.0004
OPEN_INTEREST_WINDOW_NS = 60 * NS_PER_S
Y_INTERVAL_NS = 5 * NS_PER_S
Y_MAX_ENTRIES = 6
ADMIN_PER_LINE_PER_S = 1.0 / 90
SUMMARY_DELAY_NS = 1 * NS_PER_S
SUMMARY_SPREAD_NS = 20 * NS_PER_S
END_OF_DAY_DELAY_NS = 30 * NS_PER_S
SALE_CONDITIONS = b"ABCDFGHIJKL"

ADMIN_TEXTS = (
    ("O", b"OPRA SYSTEM STATUS: ALL LINES NORMAL"),
    ("O", b"OPRA: RETRANSMISSION REQUESTS HONORED UNTIL 16:30 ET"),
    ("O", b"NEW SERIES ADDED EFFECTIVE NEXT BUSINESS DAY"),
    ("C", b"CBOE: HYBRID OPENING ROTATION COMPLETE"),
    ("P", b"NYSE ARCA OPTIONS: ALL CLASSES OPEN"),
    ("X", b"PHLX: TRADING RESUMED IN ALL CLASSES"),
)


@dataclass
class DayStats:
    """Per-series trading of the day, for the summaries."""

    volume: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    last: np.ndarray

    @staticmethod
    def new(n: int) -> "DayStats":
        """No trades yet."""
        z = np.zeros(n, dtype=np.int64)
        return DayStats(z.copy(), z.copy(), z.copy(), np.full(n, np.iinfo(np.int64).max), z.copy())

    def add(self, series: np.ndarray, time: np.ndarray, price: np.ndarray, volume: np.ndarray) -> None:
        """Record trades (any order)."""
        order = np.argsort(time, kind="stable")
        s, p, v = series[order], price[order], volume[order]
        np.add.at(self.volume, s, v)
        np.maximum.at(self.high, s, p)
        np.minimum.at(self.low, s, p)
        first = np.unique(s, return_index=True)[1]
        fresh = self.open[s[first]] == 0
        self.open[s[first][fresh]] = p[first][fresh]
        last = len(s) - 1 - np.unique(s[::-1], return_index=True)[1]
        self.last[s[last]] = p[last]


class DayEvents:
    """Plans and emits the non-quote messages of a capture."""

    def __init__(self, uni: Universe, table: SeriesTable, series_line: np.ndarray, num_lines: int, clock: CaptureClock,
                 quotes_per_second: float, series_activity: np.ndarray, rng: np.random.Generator) -> None:
        self.uni = uni
        self.table = table
        self.series_line = series_line
        self.num_lines = num_lines
        self.clock = clock
        self.rng = rng
        n = len(table)
        self.stats = DayStats.new(n)
        x = np.abs(np.log(table.strike / np.array([u.spot for u in uni.underlyings])[table.underlying]))
        weight = np.array([u.weight for u in uni.underlyings])[table.underlying] / np.maximum(table.count[table.underlying], 1)
        self.open_interest = np.minimum(np.round(rng.lognormal(0, 1, n) * 2e6 * weight * np.exp(-3 * x)), 9_999_999).astype(np.int64)
        self.indices = [u.id for u in uni.underlyings if u.kind == "index" and len(u.symbol) <= 3][:Y_MAX_ENTRIES]
        self.currencies = [u.id for u in uni.underlyings if u.kind == "currency" and len(u.symbol) <= 3][:Y_MAX_ENTRIES]
        self.planned = self._plan(quotes_per_second, series_activity)
        self._next = 0
        self.summaries_done = False

    def _plan(self, quotes_per_second: float, series_activity: np.ndarray) -> list[tuple[int, int, str, int]]:
        """(time, line, kind, detail) of the messages known in advance, time-sorted."""
        c, rng = self.clock, self.rng
        plan: list[tuple[int, int, str, int]] = []
        lines = range(1, self.num_lines + 1)
        if c.open_rel >= 0:
            plan += [(0, ln, "sod", 0) for ln in lines]
        lo, hi = c.session_start, min(c.session_end, c.open_rel + OPEN_INTEREST_WINDOW_NS)
        if hi > lo:
            n_oi = int(round(OPEN_INTEREST_SHARE * quotes_per_second * (hi - lo) / NS_PER_S))
            p = series_activity / series_activity.sum()
            n_oi = min(n_oi, int(np.count_nonzero(p)))
            chosen = rng.choice(len(p), size=n_oi, replace=False, p=p) if n_oi else np.zeros(0, np.int64)
            times = np.sort(rng.integers(lo, hi, n_oi))
            plan += [(int(t), int(self.series_line[s]), "oi", int(s)) for t, s in zip(times, chosen)]
        for ln in lines:
            k = 0
            t = c.session_start + (ln - 1) * Y_INTERVAL_NS // self.num_lines
            while t < c.session_end:
                kind = "yf" if (k % 3 == 2 and self.currencies) else "yi"
                if self.indices or kind == "yf":
                    plan.append((t, ln, kind, 0))
                t += Y_INTERVAL_NS
                k += 1
            n_admin = rng.poisson(ADMIN_PER_LINE_PER_S * c.end_rel / NS_PER_S)
            for t_admin, which in zip(rng.integers(0, max(c.end_rel, 1), n_admin), rng.integers(0, len(ADMIN_TEXTS), n_admin)):
                plan.append((int(t_admin), ln, "admin", int(which)))
            if c.close_rel + END_OF_DAY_DELAY_NS < c.end_rel:
                plan.append((c.close_rel + END_OF_DAY_DELAY_NS, ln, "eod", 0))
        plan.sort()
        return plan

    def trades(self, rows: QuoteRows, builder: SeriesRecords) -> Messages:
        """Last sales hitting the NBBO just after some of ``rows`` (quote messages)."""
        rng = self.rng
        n_rows = len(rows)
        pick = np.unique(rng.integers(0, n_rows, rng.binomial(n_rows, TRADE_SHARE))) if n_rows else np.zeros(0, np.int64)
        buy = rng.random(pick.size) < 0.5
        bid_px, _, bid_ex = bid_of(rows.best_bid[pick])
        offer_px, _, offer_ex = offer_of(rows.best_offer[pick])
        price = np.where(buy, offer_px, bid_px)
        exch = np.where(buy, offer_ex, bid_ex)
        ok = (price > 0) & (exch >= 0)
        pick, price, exch = pick[ok], price[ok], exch[ok]
        n = pick.size
        if n == 0:
            return Messages.empty()
        series = rows.series[pick]
        time = rows.time[pick] + 1 + rng.exponential(300_000, n).astype(np.int64)
        volume = np.minimum(rng.geometric(0.08, n), 999_999)
        sale = np.where(rng.random(n) < 0.9, ord(" "), np.frombuffer(SALE_CONDITIONS, np.uint8)[rng.integers(0, len(SALE_CONDITIONS), n)])
        self.stats.add(series, time, price, volume)
        recs = builder.trades(series, exch, self.clock.opra(time), price.astype(np.uint32), volume.astype(np.uint32), sale)
        return Messages(recs, time, self.series_line[series].astype(np.int64), np.full(n, -1, dtype=np.int64))

    def emit(self, t0: int, t1: int, builder: SeriesRecords, prices: np.ndarray, market: QuoteMarket,
             pricer: SeriesPricer) -> Messages:
        """The planned messages with times in [t0, t1), and the summaries once the close is
        behind ``t1``. ``prices`` are the underlyings' current prices (cents)."""
        parts: list[Messages] = []
        oi: list[tuple[int, int, str, int]] = []
        while self._next < len(self.planned) and self.planned[self._next][0] < t1:
            event = self.planned[self._next]
            self._next += 1
            if event[2] == "oi":
                oi.append(event)
            else:
                parts.append(self._one(max(event[0], t0), event[1], event[2], event[3], prices))
        if oi:
            time = np.maximum(np.array([e[0] for e in oi], dtype=np.int64), t0)
            series = np.array([e[3] for e in oi], dtype=np.int64)
            recs = builder.open_interest(series, self.clock.opra(time), self.open_interest[series].astype(np.uint32))
            parts.append(Messages(recs, time, self.series_line[series].astype(np.int64), np.full(len(oi), -1, np.int64)))
        if not self.summaries_done and t1 > self.clock.close_rel and self.clock.close_rel < self.clock.end_rel:
            self.summaries_done = True
            parts.append(self._summaries(builder, prices, market, pricer))
        return Messages.concat(parts)

    def _one(self, t: int, line: int, kind: str, detail: int, prices: np.ndarray) -> Messages:
        opra_t = int(self.clock.opra(np.array([t]))[0])
        if kind == "sod":
            rec, text = text_message("H", "C", "O", opra_t, b"START OF DAY")
            return Messages.one(rec, t, line, text)
        if kind == "eod":
            rec, text = text_message("H", "J", "O", opra_t, b"END OF DAY")
            return Messages.one(rec, t, line, text)
        if kind == "admin":
            who, text = ADMIN_TEXTS[detail]
            rec, text = text_message("C", " ", who, opra_t, text)
            return Messages.one(rec, t, line, text)
        if kind == "yi":
            syms = [self.uni.underlyings[u].symbol for u in self.indices]
            values = _distinct_neighbours([int(prices[u]) for u in self.indices], 1)
            rec, data = index_values_message(opra_t, syms, [f"{v / 100:08.2f}" for v in values])
            return Messages.one(rec, t, line, data)
        syms = [self.uni.underlyings[u].symbol for u in self.currencies]
        decimals = [2 if i % 2 == 0 else 4 for i in range(len(syms))]
        spots = [int(prices[u]) * (1 if d == 2 else 100) for u, d in zip(self.currencies, decimals)]
        rec, data = currency_spots_message(opra_t, syms, decimals, _distinct_neighbours(spots, 1))
        return Messages.one(rec, t, line, data)

    def _summaries(self, builder: SeriesRecords, prices: np.ndarray, market: QuoteMarket, pricer: SeriesPricer) -> Messages:
        st, c, rng = self.stats, self.clock, self.rng
        series = np.flatnonzero(st.volume > 0)
        n = series.size
        start = c.close_rel + SUMMARY_DELAY_NS
        time = np.sort(rng.integers(start, start + SUMMARY_SPREAD_NS, n)) if n else np.zeros(0, np.int64)
        keep = time < c.end_rel
        series, time = series[keep], time[keep]
        if series.size == 0:
            return Messages.empty()
        und = self.table.underlying[series]
        opening = np.array([self.uni.underlyings[u].spot for u in und])
        prev_close = np.round(pricer.value(series, opening) * 100).astype(np.int64)
        ohlc = np.stack([st.open[series], st.high[series], st.low[series], st.last[series]], axis=1).astype(np.uint32)
        bid = bid_of(market.last_nbb[series])[0].astype(np.uint32)
        offer = offer_of(market.last_nbo[series])[0].astype(np.uint32)
        recs = builder.summaries(series, c.opra(time), np.minimum(st.volume[series], 999_999).astype(np.uint32),
                                 self.open_interest[series].astype(np.uint32), ohlc, st.last[series] - prev_close,
                                 prices[und].astype(np.uint64), bid, offer)
        return Messages(recs, time, self.series_line[series].astype(np.int64), np.full(series.size, -1, dtype=np.int64))


def _distinct_neighbours(values: list[int], step: int) -> list[int]:
    """Values with no two neighbours equal (a later one nudged by ``step``)."""
    out = list(values)
    for i in range(1, len(out)):
        while out[i] == out[i - 1]:
            out[i] += step
    return out
