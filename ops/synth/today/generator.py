"""``omdp synth --market today``: a capture of today's OPRA binary feed (OBI v6).

Per chunk of time (at most a second): messages per 10 ms bucket from the burst profile
(profile.py) -> each message an exchange re-quoting one series of one underlying (chosen by
activity) around its Black-Scholes value at the underlying's current price (a random walk
per bucket) -> the quotes applied in time order to every exchange's book by C, which gives
each its BBO indicator and appendages (book.py) -> a few last sales, 'Y' and 'C' on line 4
-> per line, MSNs, blocks encoded by C, pcaps A and B with injected faults
(line_writer.py). Array work per chunk; Python runs per chunk and per line.
"""
from __future__ import annotations

import datetime as dt
import time as wallclock
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from ops.capture.checksums import file_check
from ops.progress import SECONDS_BAR_FORMAT
from ops.synth.calendar import EASTERN, NS_PER_S, SESSION_CLOSE, SESSION_OPEN, CaptureClock
from ops.synth.generator import check_target, write_staged
from ops.synth.ground_truth import GROUND_TRUTH_FILE, SCHEMA
from ops.synth.manifest import (Endpoint, GroundTruthInfo, LineInfo, Manifest, ProfileInfo, RateInfo, UnderlyingInfo,
                                UniverseInfo, write_manifest)
from ops.synth.records import as_records, as_void
from ops.synth.stage_timer import StageTimer
from ops.synth.today.book import CROSSED, LOCKED, NBBO_STATES, NO_EXCH, AppliedQuotes, QuoteBook
from ops.synth.today.line_writer import Faults, ObiLineWriter
from ops.synth.today.lines import ADMIN_LINE, assign_series_lines, obi_line_address
from ops.synth.today.profile import (BUCKET_NS, DEFAULT_PEAK_RATIO, LINES, PEAK_MSGS_PER_S, burst_profile,
                                     mean_msgs_per_s)
from ops.synth.today.records import TodayRecords, admin, control, underlying_values
from ops.synth.today.universe import (DEFAULT_SERIES, DEFAULT_UNDERLYINGS, EXCHANGE_CODES, PARTICIPANTS, SHARE,
                                      build_today_universe)

FAULTS_FILE = "faults.parquet"
DEFAULT_DATE = dt.date(2026, 3, 2)
DEFAULT_RATE = 0.02
"""``--rate`` of today's market unless given: 300,000 messages/s at the default ratio."""
TRADE_SHARE = 0.0005
"""Last sales per quote message (ours: quotes vastly outnumber trades)."""
ADMIN_PER_SECOND = 0.05
CHUNK_NS = NS_PER_S // 2
MESSAGES_PER_BLOCK = 20.0
"""Mean records a block is cut at (fewer where 1,000 bytes come first)."""
INDEX_VALUES = ("SPX", "NDX", "RUT", "VIX", "XSP")
NBBO_RULE = ("per series over the latest quote of every participant: best bid = highest bid > 0, best offer = lowest "
             "offer > 0; ties: larger size, then participant order " + EXCHANGE_CODES + ". BBO indicator (spec 7.6) = 'A' + "
             "4*bid_state + offer_state against the BBO just before the quote; a change is any change of price, size "
             "or participant of the best quote. A normal quote that would lock or cross the others is pulled back one tick.")


@dataclass
class TodayConfig:
    """What ``omdp synth --market today`` makes."""

    data: Path
    date: dt.date = DEFAULT_DATE
    seconds: float = 5.0
    rate: float = DEFAULT_RATE
    peak_ratio: float = DEFAULT_PEAK_RATIO
    seed: int = 0
    num_lines: int = LINES
    underlyings: int = DEFAULT_UNDERLYINGS
    series: int = DEFAULT_SERIES
    b_copy: bool = False
    start: dt.time = SESSION_OPEN
    anomalies_per_second: dict[str, float] = field(default_factory=lambda: {"locked": 1.0, "crossed": 1.0})
    """Locked / crossed events per second of capture at the default rate (scaled with it)."""
    gaps_per_second: float = 1.0
    checksums_per_second: float = 1.0
    rotate_bytes: int = 256 * 1024 * 1024
    progress: bool = True
    force: bool = False
    """Replace a capture already at the date's directory (otherwise: CaptureExistsError)."""

    @property
    def directory(self) -> Path:
        """DATA/captures/<date>/: where the capture goes."""
        return Path(self.data) / "captures" / self.date.isoformat()

    def __post_init__(self) -> None:
        checks = [(self.seconds > 0, "seconds must be positive"), (self.rate > 0, "rate must be positive"),
                  (1 <= self.num_lines <= LINES, f"num_lines must be 1..{LINES}"),
                  (self.peak_ratio >= 1, "peak_ratio must be at least 1"),
                  (self.gaps_per_second >= 0 and self.checksums_per_second >= 0, "fault rates must be >= 0"),
                  (set(self.anomalies_per_second) <= {"locked", "crossed"}, "anomaly kinds of today's market: locked, crossed")]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)


@dataclass
class TodayResult:
    """Where the capture went and what it holds."""

    directory: Path
    manifest: Manifest
    elapsed_s: float
    setup_s: float
    cpu_s: float
    stages: dict[str, dict[str, float]]


class TodayGenerator:
    """Builds today's universe and books once, then writes the capture chunk by chunk."""

    def __init__(self, cfg: TodayConfig) -> None:
        t0 = wallclock.perf_counter()
        self.cfg = cfg
        self.timer = StageTimer()
        seeds = np.random.SeedSequence(cfg.seed).spawn(4)
        self.rng = np.random.default_rng(seeds[0])
        self.rng_profile = np.random.default_rng(seeds[1])
        self.line_seeds = seeds[2].spawn(cfg.num_lines)
        self.clock = CaptureClock(cfg.date, cfg.start, cfg.seconds)
        uni = self.uni = build_today_universe(cfg.date, cfg.underlyings, cfg.series)
        n = len(uni)
        # activity of a series: its underlying's share times its share within the underlying
        within = uni.ser_weight / np.bincount(uni.ser_underlying, weights=uni.ser_weight)[uni.ser_underlying]
        self.ser_activity = uni.und_weight[uni.ser_underlying] * within
        self.cum_und = np.cumsum(uni.und_weight)
        self.cum_ser = np.cumsum(within)  # each underlying's series add up to 1
        self.cum_exch = np.cumsum(SHARE / SHARE.sum())
        self.series_line, self.root_lines = assign_series_lines(uni.root_symbol, uni.ser_root, self.ser_activity, cfg.num_lines)
        self.n_exch = len(EXCHANGE_CODES)
        self.exch_mult = 1.0 + 0.6 * np.random.default_rng(seeds[3]).random(self.n_exch)
        self.book = QuoteBook(n, self.n_exch)
        self.builder = TodayRecords(uni)
        self.price = uni.und_spot.copy()
        self.mean_rate = mean_msgs_per_s(cfg.rate, cfg.peak_ratio)
        n_buckets = max(1, int(np.ceil(self.clock.end_rel / BUCKET_NS)))
        self.profile = burst_profile(self.rng_profile, n_buckets, cfg.peak_ratio)
        self.index_und = [uni.und_symbol.index(s) for s in INDEX_VALUES if s in uni.und_symbol]
        self._gt: list[dict] = []
        self.faults = Faults()
        self.next_event = 0
        self.setup_s = wallclock.perf_counter() - t0

    def run(self) -> TodayResult:
        """Write the capture; returns its manifest."""
        cfg = self.cfg
        t_run, cpu_run = wallclock.perf_counter(), wallclock.process_time()
        manifest = write_staged(cfg.directory, self._write)
        return TodayResult(cfg.directory, manifest, wallclock.perf_counter() - t_run, self.setup_s,
                           wallclock.process_time() - cpu_run, self.timer.report())

    def _write(self, out_dir: Path) -> Manifest:
        """Every file of the capture into ``out_dir``, the manifest last; returns it."""
        cfg = self.cfg
        writers = [ObiLineWriter(ln, out_dir, MESSAGES_PER_BLOCK, np.random.default_rng(self.line_seeds[ln - 1]), cfg.b_copy,
                                 cfg.rotate_bytes) for ln in range(1, cfg.num_lines + 1)]
        end = self.clock.end_rel
        with tqdm(total=round(end / NS_PER_S, 3), unit="s", desc="synth today: ", disable=not cfg.progress, leave=False,
                  bar_format=SECONDS_BAR_FORMAT) as bar:
            for t0 in range(0, end, CHUNK_NS):
                t1 = min(t0 + CHUNK_NS, end)
                self._chunk(t0, t1, writers)
                bar.n = round(t1 / NS_PER_S, 3)
                bar.refresh()
        with self.timer.stage("finish"):
            files = [w.close() for w in writers]
            gt = self._ground_truth()
            pq.write_table(gt, out_dir / GROUND_TRUTH_FILE)
            faults = self._faults_table()
            pq.write_table(faults, out_dir / FAULTS_FILE)
            checksums = {p.name: file_check(p) for p in sorted(out_dir.iterdir()) if p.is_file()}
            manifest = self._manifest(writers, files, gt, faults, checksums)
            write_manifest(manifest, out_dir)
        return manifest

    # -- one chunk ------------------------------------------------------------------------
    def _chunk(self, t0: int, t1: int, writers: list[ObiLineWriter]) -> None:
        cfg, rng, uni = self.cfg, self.rng, self.uni
        with self.timer.stage("market"):
            b0, b1 = t0 // BUCKET_NS, (t1 + BUCKET_NS - 1) // BUCKET_NS
            width = np.minimum(np.arange(b0 + 1, b1 + 1) * BUCKET_NS, t1) - np.maximum(np.arange(b0, b1) * BUCKET_NS, t0)
            lam = self.mean_rate * self.profile[b0:b1] * width / NS_PER_S
            counts = rng.poisson(lam)
            n = int(counts.sum())
            bucket = np.repeat(np.arange(b0, b1), counts)
            lo = np.maximum(bucket * BUCKET_NS, t0)
            hi = np.minimum((bucket + 1) * BUCKET_NS, t1)
            time = np.sort(lo + (rng.random(n) * (hi - lo)).astype(np.int64))
            und = np.minimum(np.searchsorted(self.cum_und, rng.random(n) * self.cum_und[-1]), len(uni.und_symbol) - 1)
            first, cnt = uni.und_first[und], uni.und_count[und]
            base = np.where(first > 0, self.cum_ser[np.maximum(first - 1, 0)], 0.0)
            top = self.cum_ser[first + cnt - 1]
            s = np.clip(np.searchsorted(self.cum_ser, base + rng.random(n) * (top - base), side="right"), first, first + cnt - 1)
            exch = np.minimum(np.searchsorted(self.cum_exch, rng.random(n)), self.n_exch - 1).astype(np.uint8)
            # underlyings walk per bucket: a normal step of their volatility over 10 ms
            nb = b1 - b0
            sd = uni.und_vol * np.sqrt(BUCKET_NS / NS_PER_S / (252 * 23_400.0))
            path = self.price[:, None] * np.exp(np.cumsum(rng.standard_normal((len(uni.und_symbol), nb)) * sd[:, None], axis=1))
            self.price = path[:, -1].copy()
            spot = path[und, bucket - b0]
            fair = uni.pricer.value(s, spot)
            penny = uni.und_penny[und]
            tick = np.where(fair < 3.0, np.where(penny, 1, 5), np.where(penny, 5, 10)).astype(np.int64)
            hs = (np.maximum(tick / 100.0, 0.015 * np.minimum(fair, 10.0) + 0.004 * np.maximum(fair - 10.0, 0.0))
                  * self.exch_mult[exch] * (1.0 + 0.5 * rng.random(n)))
            fc = fair * 100.0
            bid = np.maximum(np.floor((fc - hs * 100.0) / tick) * tick, 0).astype(np.int64)
            offer = np.maximum(np.ceil((fc + hs * 100.0) / tick) * tick, tick).astype(np.int64)
            size = np.minimum(1 + rng.geometric(0.02, (2, n)), 9_999)
            bsz = np.where(bid > 0, size[0], 0)
            anomaly = np.zeros(n, dtype=np.uint8)
            secs = (t1 - t0) / NS_PER_S
            scale = cfg.rate / DEFAULT_RATE
            for kind, code in (("locked", LOCKED), ("crossed", CROSSED)):
                k = int(rng.poisson(cfg.anomalies_per_second.get(kind, 0.0) * scale * secs))
                cand = np.flatnonzero((fair >= 0.30) & (anomaly == 0))
                anomaly[rng.permutation(cand)[:k]] = code
            fair_bid, fair_offer = bid.copy(), offer.copy()
        with self.timer.stage("book"):
            q = self.book.apply(s, exch, bid, bsz, offer, size[1], anomaly, tick)
        with self.timer.stage("records"):
            recs = self.builder.quotes(s, exch, q, self.clock.opra(time))
            gt_id = np.full(n, -1, dtype=np.int64)
            hit = np.flatnonzero(q.anomaly)
            if hit.size:
                gt_id[hit] = self._add_truth(hit, s, exch, q, fair_bid, fair_offer, tick)
            # last sales: a few quotes trade at once at that exchange's offer
            tr = np.flatnonzero((rng.random(n) < TRADE_SHARE) & (q.offer > 0))
            t_time = np.minimum(time[tr] + 1_000, t1 - 1)
            trades = self.builder.trades(s[tr], exch[tr], q.offer[tr], rng.integers(1, 50, tr.size).astype(np.uint32),
                                         self.clock.opra(t_time))
            parts = [(recs, time, self.series_line[s], gt_id), (trades, t_time, self.series_line[s[tr]], np.full(tr.size, -1))]
            parts += self._line4(t0, t1)
            if t0 == 0:
                for ln in range(1, cfg.num_lines + 1):
                    parts.append((control("C", self.clock.opra(np.array([0]))[0]), np.array([-1]), np.array([ln]), np.array([-1])))
            all_recs = np.concatenate([as_void(p[0]) for p in parts])
            all_time = np.concatenate([p[1] for p in parts]).astype(np.int64)
            all_line = np.concatenate([p[2] for p in parts]).astype(np.int64)
            all_gt = np.concatenate([p[3] for p in parts]).astype(np.int64)
            order = np.lexsort((all_time, all_line))
            all_recs = as_records(all_recs[order])
            all_time, all_line, all_gt = all_time[order], all_line[order], all_gt[order]
            bounds = np.searchsorted(all_line, np.arange(1, cfg.num_lines + 2))
        side = self._side
        lines_w = np.bincount(self.series_line, weights=self.ser_activity, minlength=cfg.num_lines + 1)[1:]
        lines_w = lines_w / max(lines_w.sum(), 1e-12)
        n_gaps = rng.poisson(cfg.gaps_per_second * secs * lines_w)
        n_sums = rng.poisson(cfg.checksums_per_second * secs * lines_w)
        with self.timer.stage("encode"):
            for w in writers:
                a, b = int(bounds[w.line - 1]), int(bounds[w.line])
                if a == b:
                    continue
                seq = w.write(all_recs[a:b], self.clock.epoch(np.maximum(all_time[a:b], 0)), side, int(n_gaps[w.line - 1]),
                              int(n_sums[w.line - 1]), self.faults)
                placed = np.flatnonzero(all_gt[a:b] >= 0)
                for i in placed.tolist():
                    row = self._gt[int(all_gt[a + i])]
                    row["line"], row["seq"] = w.line, int(seq[i])
                    row["time"] = int(all_recs["time"][a + i])
                    row["ts_ns"] = int(self.clock.epoch(all_time[a + i]))

    _side = b"".join([b"OPRA: synthetic capture, not for trading. ",  # 'C' texts, offsets in TEXTS
                      b"FLEX I SPX   QTE 00001 synthetic FLEX quote"])
    TEXTS = ((0, 42), (42, 43))

    def _line4(self, t0: int, t1: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """'Y' every second for the cash indices and occasional 'C' texts, on line 4."""
        out = []
        if self.cfg.num_lines < ADMIN_LINE:
            return out
        secs = np.arange((t0 + NS_PER_S - 1) // NS_PER_S, (t1 + NS_PER_S - 1) // NS_PER_S) * NS_PER_S
        secs = secs[(secs >= t0) & (secs < t1)]
        if secs.size and self.index_und:
            times = np.repeat(secs, len(self.index_und)) + 1_000
            syms = [self.uni.und_symbol[u].encode() for u in self.index_und] * secs.size
            cents = np.round(np.tile(self.price[self.index_und], secs.size) * 100)
            out.append((underlying_values(syms, cents, self.clock.opra(times)), times, np.full(times.size, ADMIN_LINE),
                        np.full(times.size, -1)))
        for _ in range(int(self.rng.poisson(ADMIN_PER_SECOND * (t1 - t0) / NS_PER_S))):
            off, ln = self.TEXTS[int(self.rng.integers(0, len(self.TEXTS)))]
            t = int(self.rng.integers(t0, t1))
            out.append((admin(off, ln, int(self.clock.opra(np.array([t]))[0])), np.array([t]), np.array([ADMIN_LINE]),
                        np.array([-1])))
        return out

    # -- ground truth ---------------------------------------------------------------------
    def _add_truth(self, hit: np.ndarray, s: np.ndarray, exch: np.ndarray, q: AppliedQuotes, fair_bid: np.ndarray,
                   fair_offer: np.ndarray, tick: np.ndarray) -> np.ndarray:
        """Ground-truth rows of the anomalous quotes at ``hit`` (placed on a line later)."""
        uni = self.uni
        ids = []
        for i in hit.tolist():
            si = int(s[i])
            kind = "locked" if int(q.anomaly[i]) == LOCKED else "crossed"
            u = int(uni.ser_underlying[si])
            bbp = int(q.bb_price[i]) if int(q.bb_exch[i]) != NO_EXCH else 0
            bop = int(q.bo_price[i]) if int(q.bo_exch[i]) != NO_EXCH else 0
            ids.append(len(self._gt))
            self._gt.append({
                "event": self.next_event, "kind": kind, "line": 0, "seq": -1, "time": 0, "ts_ns": 0,
                "participant": EXCHANGE_CODES[int(exch[i])], "root": uni.root_symbol[int(uni.ser_root[si])],
                "underlying": uni.und_symbol[u], "underlying_id": u, "series_id": si,
                "expiry": int(uni.ser_expiry[si]), "strike_px": int(uni.ser_strike_milli[si]) * 1_000_000,
                "put_call": "P" if uni.ser_put[si] else "C", "bid": int(q.bid[i]), "offer": int(q.offer[i]),
                "fair_bid": int(fair_bid[i]), "fair_offer": int(fair_offer[i]), "nbbo_bid": bbp, "nbbo_offer": bop,
                "nbbo_state": NBBO_STATES[int(q.nbbo_state[i])],
                "magnitude": float(tick[i]) / 100.0 if kind == "crossed" else 0.0})
            self.next_event += 1
        return np.array(ids, dtype=np.int64)

    def _ground_truth(self) -> pa.Table:
        rows = self._gt
        cols = {f.name: [r[f.name] for r in rows] for f in SCHEMA}
        table = pa.table({k: pa.array(v, type=SCHEMA.field(k).type) for k, v in cols.items()}, schema=SCHEMA)
        return table.sort_by([("line", "ascending"), ("seq", "ascending")])

    def _faults_table(self) -> pa.Table:
        rows = self.faults.rows
        schema = pa.schema([("kind", pa.string()), ("line", pa.int16()), ("copy", pa.string()), ("block_seq", pa.int64()),
                            ("msg_count", pa.int32()), ("ts_ns", pa.int64())])
        table = pa.table({f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in schema}, schema=schema)
        return table.sort_by([("line", "ascending"), ("block_seq", "ascending")])

    def _manifest(self, writers: list[ObiLineWriter], files: list[dict[str, list[str]]], gt: pa.Table,
                  faults: pa.Table, checksums: dict[str, dict[str, int]]) -> Manifest:
        cfg, c, uni = self.cfg, self.clock, self.uni
        roots_by_line: dict[int, list[str]] = {}
        for r, ls in enumerate(self.root_lines):
            for ln in ls:
                roots_by_line.setdefault(ln, []).append(uni.root_symbol[r])
        lines = []
        for w, f in zip(writers, files):
            syms = sorted(roots_by_line.get(w.line, []))
            t = w.totals
            a, b = obi_line_address(w.line, "a"), obi_line_address(w.line, "b")
            lines.append(LineInfo(line=w.line, first_root=syms[0] if syms else "", last_root=syms[-1] if syms else "",
                                  roots=len(syms), a=Endpoint(**a.__dict__), b=Endpoint(**b.__dict__), files=f,
                                  packets=t.packets, messages=t.messages, payload_bytes=t.payload_bytes,
                                  first_seq=t.first_seq, last_seq=t.last_seq,
                                  categories=dict(sorted(t.categories.items()))))
        packets = sum(w.totals.packets for w in writers)
        messages = sum(w.totals.messages for w in writers)
        secs = cfg.seconds
        kinds = {str(k): int(v) for k, v in zip(*np.unique(np.array(gt.column("kind").to_pylist(), dtype=object), return_counts=True))} if gt.num_rows else {}
        fk = faults.column("kind").to_pylist()
        return Manifest(
            feed_format="obi-v6", generator="omdp synth --market today", date=cfg.date, start_time=cfg.start.isoformat(),
            seconds=cfg.seconds, seed=cfg.seed, timezone=str(EASTERN), session_open=SESSION_OPEN.isoformat(),
            session_close=SESSION_CLOSE.isoformat(), exchanges={**PARTICIPANTS, "O": "OPRA (control, administrative, underlying values)"},
            universe=UniverseInfo(source="today-builtin", underlyings=len(uni.und_symbol), roots=len(uni.root_symbol),
                                  series=len(uni)),
            rate=RateInfo(multiplier=cfg.rate, target_packets_per_second=self.mean_rate / MESSAGES_PER_BLOCK,
                          target_messages_per_packet=MESSAGES_PER_BLOCK, session_seconds=secs, packets=packets,
                          messages=messages, packets_per_second=packets / secs, messages_per_second=messages / secs,
                          messages_per_packet=messages / packets if packets else 0.0),
            lines=lines,
            roots={r: uni.und_symbol[int(u)] for r, u in zip(uni.root_symbol, uni.root_underlying.tolist())},
            underlyings=[UnderlyingInfo(id=i, symbol=sym, kind=uni.und_kind[i], spot=float(uni.und_spot[i]),
                                        vol=round(float(uni.und_vol[i]), 4), exchanges=EXCHANGE_CODES,
                                        penny=bool(uni.und_penny[i]), weight=round(float(uni.und_weight[i]), 8),
                                        series=int(uni.und_count[i])) for i, sym in enumerate(uni.und_symbol)],
            ground_truth=GroundTruthInfo(file=GROUND_TRUTH_FILE, rows=gt.num_rows, events=self.next_event, kinds=kinds,
                                         faults_file=FAULTS_FILE, faults={k: fk.count(k) for k in sorted(set(fk))}),
            nbbo_rule=NBBO_RULE,
            profile=ProfileInfo(peak_ratio=cfg.peak_ratio, peak_msgs_per_second_1x=PEAK_MSGS_PER_S,
                                mean_msgs_per_second_1x=PEAK_MSGS_PER_S / cfg.peak_ratio,
                                target_msgs_per_second=self.mean_rate, bucket_ns=BUCKET_NS),
            checksums=checksums,
        )


def synthesize_today(cfg: TodayConfig) -> TodayResult:
    """Generate today's capture ``cfg`` describes into a hidden directory beside its place,
    moved into place when whole (as the 2008 market's: ``write_staged``)."""
    check_target(cfg.directory, cfg.force)
    return TodayGenerator(cfg).run()
