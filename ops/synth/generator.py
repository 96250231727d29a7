"""``omdp synth``: a synthetic OPRA capture of a February-2008-like day, written as one pcap
per line (and B copies), a manifest and a ground-truth file.

The generator runs a market model over the capture in chunks of time: underlying ticks ->
every exchange's requotes with NBBO and BBO indicators (market.py) -> injected anomalies
-> last sales and the other messages (day_events.py) -> records (records.py) -> per line,
time order, sequence numbers, packets cut by the C encoder, pcap (line_writer.py). Every
step is array work over a chunk; Python runs per chunk and per line, never per message.
Everything random comes from ``seed`` through independent streams, so a seed gives the
same capture byte for byte.
"""
from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import time as wallclock
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from omdp.atomic_files import ArtifactWriteError
from ops.capture.checksums import file_check
from ops.progress import SECONDS_BAR_FORMAT
from ops.synth.activity import RateController, messages_per_tick, tick_rates
from ops.synth.anomalies import DEFAULT_RATES, KINDS
from ops.synth.calendar import EASTERN, NS_PER_S, SESSION_CLOSE, SESSION_OPEN, CaptureClock
from ops.synth.day_events import TRADE_SHARE, DayEvents
from ops.synth.ground_truth import GROUND_TRUTH_FILE, GroundTruth
from ops.synth.line_writer import LineWriter
from ops.synth.lines import DEFAULT_LINES, assign_lines, line_address
from ops.synth.listed_options import listed_universe
from ops.synth.manifest import (Endpoint, GroundTruthInfo, LineInfo, Manifest, RateInfo, UnderlyingInfo, UniverseInfo,
                                write_manifest)
from ops.synth.market import ChunkQuotes, QuoteMarket
from ops.synth.messages import Messages
from ops.synth.price_walk import PriceWalk, step_cents
from ops.synth.pricing import SeriesPricer, smile_vol
from ops.synth.quoting import build_quote_book
from ops.synth.records import SeriesRecords
from ops.synth.series import build_series
from ops.synth.stage_timer import StageTimer
from ops.synth.universe import EXCHANGE_NAMES, RISK_FREE_RATE, Universe
from ops.synth.universe_builtin import DEFAULT_UNDERLYINGS, builtin_universe

PACKETS_PER_SECOND_1X = 24_000
"""The paper's "1x the February 2008 OPRA rate", summed over all lines."""
CHUNK_QUOTES = 120_000
"""About this many quote messages per chunk of time."""
ROTATE_BYTES = 256 * 1024 * 1024
NBBO_RULE = ("best bid: highest bid > 0 over every exchange's latest quote of the series; best offer: lowest "
             "offer > 0; ties: larger size, then exchange order A B C I P X. BBO indicator = 'A' + 4*bid_state + "
             "offer_state, bid_state 0 no change / 1 this quote / 2 no best bid / 3 appendage, offer_state 0 no "
             "change / 1 this quote / 2 appendage / 3 no best offer; a change is any change of price, size or "
             "exchange of the best quote.")


@dataclass
class SynthConfig:
    """What ``omdp synth`` makes."""

    data: Path
    date: dt.date = dt.date(2008, 2, 4)
    seconds: float = 10.0
    rate: float = 1.0
    seed: int = 0
    num_lines: int = DEFAULT_LINES
    universe: Path | None = None
    b_copy: bool = False
    start: dt.time = SESSION_OPEN
    messages_per_packet: float = 14.0
    anomalies_per_second: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    """Anomaly events per second of session at 1x (scaled by ``rate``)."""
    underlyings: int = DEFAULT_UNDERLYINGS
    """Size of the built-in universe (ignored with ``universe``)."""
    rotate_bytes: int = ROTATE_BYTES
    progress: bool = True
    force: bool = False
    """Replace a capture already at the date's directory (otherwise: CaptureExistsError)."""

    @property
    def directory(self) -> Path:
        """Where the capture goes: ``<data>/captures/<date>``."""
        return Path(self.data) / "captures" / self.date.isoformat()

    def __post_init__(self) -> None:
        if self.seconds <= 0:
            raise ValueError("seconds must be positive")
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if not 1 <= self.num_lines <= 99:
            raise ValueError("num_lines must be 1..99")
        if self.messages_per_packet < 1:
            raise ValueError("messages_per_packet must be at least 1")
        unknown = set(self.anomalies_per_second) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown anomaly kinds {sorted(unknown)} (known: {', '.join(KINDS)})")


class CaptureExistsError(FileExistsError):
    """The date's capture directory holds a capture and ``force`` was not given."""


@dataclass
class SynthResult:
    """Where the capture went and what it holds."""

    directory: Path
    manifest: Manifest
    elapsed_s: float
    setup_s: float
    cpu_s: float
    stages: dict[str, dict[str, float]]


def parse_rate(text: str) -> float:
    """``1x``, ``0.5x``, ``30X`` or a plain number: the multiple of 24,000 packets/s."""
    value = text.strip().lower().removesuffix("x")
    try:
        rate = float(value)
    except ValueError as exc:
        raise ValueError(f"rate must look like 1x or 0.5x, not {text!r}") from exc
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"rate must be positive, not {text!r}")
    return rate


class Generator:
    """Builds the day's model once, then writes the capture chunk by chunk."""

    def __init__(self, cfg: SynthConfig) -> None:
        t_setup = wallclock.perf_counter()
        self.timer = StageTimer()
        self.cfg = cfg
        # Independent random streams: quote book, walk, market, events, lines, anomaly counts.
        seeds = np.random.SeedSequence(cfg.seed).spawn(6)
        rng_book, rng_walk, rng_market, rng_events, self.rng_misc = (np.random.default_rng(seeds[i]) for i in (0, 1, 2, 3, 5))
        self.line_seeds = seeds[4].spawn(cfg.num_lines)
        self.clock = CaptureClock(cfg.date, cfg.start, cfg.seconds)
        self.uni: Universe = (listed_universe(cfg.universe, cfg.date.year) if cfg.universe is not None
                              else builtin_universe(cfg.underlyings, cfg.date.year))
        self.table = build_series(self.uni, cfg.date)
        unds = self.uni.underlyings
        spot = np.array([u.spot for u in unds])
        atm = np.array([u.vol for u in unds])
        und = self.table.underlying
        self.vol = smile_vol(atm[und], np.array([u.skew for u in unds])[und], np.log(self.table.strike / spot[und]),
                             self.table.t_years)
        self.pricer = SeriesPricer(self.table.strike, self.table.t_years, self.vol, self.table.is_put, RISK_FREE_RATE)
        steps = step_cents(spot)
        self.book = build_quote_book(self.uni, self.table, steps, self.vol, rng_book)
        self.quotes_per_second = cfg.rate * PACKETS_PER_SECOND_1X * cfg.messages_per_packet / (1 + TRADE_SHARE)
        per_series = messages_per_tick(self.table, self.book, self.pricer, spot, steps)
        per_und = np.bincount(und, weights=per_series, minlength=len(unds))
        weight = np.array([u.weight for u in unds]) * (self.table.count > 0)
        rates = tick_rates(weight, per_und, self.quotes_per_second)
        self.series_activity = rates[und] * per_series
        self.walk = PriceWalk(spot, atm, rates, rng_walk)
        root_load = np.bincount(self.table.root, weights=self.series_activity, minlength=len(self.uni.roots))
        self.root_line = assign_lines([r.symbol for r in self.uni.roots], root_load, cfg.num_lines)
        self.series_line = self.root_line[self.table.root]
        self.market = QuoteMarket(self.table, self.book, self.pricer, self.walk, self.series_line, rng_market)
        self.builder = SeriesRecords(self.uni, self.table)
        self.events = DayEvents(self.uni, self.table, self.series_line, cfg.num_lines, self.clock, self.quotes_per_second,
                                np.maximum(self.series_activity, 1e-9), rng_events)
        self.controller = RateController(self.quotes_per_second)
        self.truth = GroundTruth()
        self.line_share = np.bincount(self.series_line, weights=self.series_activity, minlength=cfg.num_lines + 1)[1:]
        self.line_share /= max(self.line_share.sum(), 1e-12)
        self.setup_s = wallclock.perf_counter() - t_setup

    def chunks(self) -> list[tuple[int, int, bool]]:
        """(start, end, quoting) of every chunk (ns, capture-relative). Session chunks start
        at 1/16 of their full length and double, so the rate controller corrects the
        first quotes of the day (every series quoted anew) within the first second."""
        c = self.clock
        out: list[tuple[int, int, bool]] = []
        if c.session_start > 0:
            out.append((0, min(c.session_start, c.end_rel), False))
        full = int(np.clip(CHUNK_QUOTES / self.quotes_per_second, 0.02, 1.0) * NS_PER_S)
        length = max(full // 16, NS_PER_S // 100)
        t = c.session_start
        while t < c.session_end:
            out.append((t, min(t + length, c.session_end), True))
            t += length
            length = min(2 * length, full)
        if c.end_rel > max(c.session_end, c.session_start):
            out.append((max(c.session_end, c.session_start), c.end_rel, False))
        return out

    def first_seq(self, line: int) -> int:
        """A line's first message sequence number: 1 when the capture covers the open,
        else about what the line would have sent since the open."""
        if self.clock.open_rel >= 0:
            return 1
        elapsed = min(-self.clock.open_rel, self.clock.close_rel - self.clock.open_rel) / NS_PER_S
        return 1 + int(self.quotes_per_second * self.line_share[line - 1] * elapsed)

    def run(self) -> SynthResult:
        """Write the capture; returns its manifest."""
        cfg = self.cfg
        t_run = wallclock.perf_counter()
        cpu_run = wallclock.process_time()
        final = cfg.directory
        manifest = write_staged(final, self._write)
        return SynthResult(final, manifest, wallclock.perf_counter() - t_run, self.setup_s,
                           wallclock.process_time() - cpu_run, self.timer.report())

    def _write(self, out_dir: Path) -> Manifest:
        """Every file of the capture into ``out_dir``, the manifest last; returns it."""
        cfg = self.cfg
        writers = [LineWriter(ln, out_dir, self.clock, self.first_seq(ln), cfg.messages_per_packet,
                              np.random.default_rng(self.line_seeds[ln - 1]), cfg.b_copy, cfg.rotate_bytes)
                   for ln in range(1, cfg.num_lines + 1)]
        anomaly_rates = {k: v * cfg.rate for k, v in cfg.anomalies_per_second.items()}
        plan = self.chunks()
        total_s = self.clock.end_rel / NS_PER_S
        with tqdm(total=round(total_s, 3), unit="s", desc="synth: ", disable=not cfg.progress, leave=False,
                  bar_format=SECONDS_BAR_FORMAT) as bar:
            for i, (t0, t1, quoting) in enumerate(plan):
                quotes, extras = self._quote_chunk(t0, t1, anomaly_rates) if quoting else (None, [])
                with self.timer.stage("events"):
                    extras.append(self.events.emit(t0, t1, self.builder, self.walk.state.price, self.market, self.pricer))
                cut = None if i == len(plan) - 1 else t1
                self._to_lines(quotes, Messages.concat(extras), writers, cut)
                bar.n = round(min(t1 / NS_PER_S, total_s), 3)  # a sum of float steps shows 0.33499999999999996
                bar.refresh()
        with self.timer.stage("finish"):
            files = [w.close() for w in writers]
            gt_rows = self.truth.write(out_dir / GROUND_TRUTH_FILE, self.uni, self.table)
            checksums = {p.name: file_check(p) for p in sorted(out_dir.iterdir()) if p.is_file()}
            manifest = self._manifest(writers, files, gt_rows, checksums)
            write_manifest(manifest, out_dir)
        return manifest

    def _quote_chunk(self, t0: int, t1: int, anomaly_rates: dict[str, float]) -> tuple[Messages, list[Messages]]:
        """The chunk's quotes (grouped by line) and last sales."""
        seconds = (t1 - t0) / NS_PER_S
        scale = self.controller.next_scale(seconds)
        counts = {k: int(self.rng_misc.poisson(r * seconds)) for k, r in anomaly_rates.items()}
        with self.timer.stage("market"):
            cq = self.market.step(t0, t1, scale, counts)
        rows = cq.rows
        self.controller.record(len(rows), seconds, scale)
        with self.timer.stage("records"):
            return self._quote_records(cq)

    def _quote_records(self, cq: ChunkQuotes) -> tuple[Messages, list[Messages]]:
        rows = cq.rows
        gt = self.truth.add(cq)
        recs = self.builder.quotes(rows.series, rows.exch, self.clock.opra(rows.time), rows.bid, rows.offer,
                                   rows.bid_size, rows.offer_size, rows.bbo, rows.bid_state, rows.offer_state,
                                   rows.best_bid, rows.best_offer)
        quotes = Messages(recs, rows.time, rows.line, gt)
        return quotes, [self.events.trades(rows, self.builder)]

    def _to_lines(self, quotes: Messages | None, extras: Messages, writers: list[LineWriter], cut: int | None) -> None:
        """Hand each line its messages (``quotes`` grouped by line, ``extras`` in any order)."""
        bounds = np.searchsorted(quotes.line, np.arange(1, len(writers) + 2)) if quotes is not None else None
        for w in writers:
            mine = quotes.slice(int(bounds[w.line - 1]), int(bounds[w.line])) if quotes is not None and bounds is not None else Messages.empty()
            others = extras.take(np.flatnonzero(extras.line == w.line)) if len(extras) else Messages.empty()
            w.feed(mine, others, cut, self.truth, self.timer)

    def _manifest(self, writers: list[LineWriter], files: list[dict[str, list[str]]], gt_rows: int,
                  checksums: dict[str, dict[str, int]]) -> Manifest:
        cfg, c = self.cfg, self.clock
        roots_by_line: dict[int, list[str]] = {}
        for r, ln in zip(self.uni.roots, self.root_line.tolist()):
            roots_by_line.setdefault(ln, []).append(r.symbol)
        lines = []
        for w, f in zip(writers, files):
            syms = sorted(roots_by_line.get(w.line, []))
            a, b = line_address(w.line, "a"), line_address(w.line, "b")
            t = w.totals
            lines.append(LineInfo(
                line=w.line, first_root=syms[0] if syms else "", last_root=syms[-1] if syms else "", roots=len(syms),
                a=Endpoint(**a.__dict__), b=Endpoint(**b.__dict__), files=f, packets=t.packets, messages=t.messages,
                payload_bytes=t.payload_bytes,
                first_seq=t.first_seq, last_seq=max(t.last_seq, 0), categories=dict(sorted(t.categories.items()))))
        packets = sum(w.totals.packets for w in writers)
        messages = sum(w.totals.messages for w in writers)
        secs = c.session_seconds
        counts = np.bincount(self.table.underlying, minlength=len(self.uni.underlyings))
        gt_table = self.truth.table(self.uni, self.table) if gt_rows else None
        kinds = {}
        events = 0
        if gt_table is not None:
            kinds = {k: int(v) for k, v in zip(*np.unique(np.array(gt_table.column("kind").to_pylist()), return_counts=True))}
            events = len(set(gt_table.column("event").to_pylist()))
        return Manifest(
            generator="omdp synth",
            date=cfg.date,
            start_time=cfg.start.isoformat(),
            seconds=cfg.seconds,
            seed=cfg.seed,
            timezone=str(EASTERN),
            session_open=SESSION_OPEN.isoformat(),
            session_close=SESSION_CLOSE.isoformat(),
            exchanges=EXCHANGE_NAMES,
            universe=UniverseInfo(source=self.uni.source, underlyings=len(self.uni.underlyings), roots=len(self.uni.roots),
                                  series=len(self.table)),
            rate=RateInfo(
                multiplier=cfg.rate, target_packets_per_second=cfg.rate * PACKETS_PER_SECOND_1X,
                target_messages_per_packet=cfg.messages_per_packet, session_seconds=secs, packets=packets,
                messages=messages, packets_per_second=packets / secs if secs else 0.0,
                messages_per_second=messages / secs if secs else 0.0,
                messages_per_packet=messages / packets if packets else 0.0),
            lines=lines,
            roots={r.symbol: self.uni.underlyings[r.underlying].symbol for r in self.uni.roots},
            underlyings=[UnderlyingInfo(id=u.id, symbol=u.symbol, kind=u.kind, spot=u.spot, vol=round(u.vol, 4),
                                        exchanges=u.exchanges, penny=u.penny, weight=round(u.weight, 6),
                                        series=int(counts[u.id])) for u in self.uni.underlyings],
            ground_truth=GroundTruthInfo(file=GROUND_TRUTH_FILE, rows=gt_rows, events=events, kinds=kinds),
            nbbo_rule=NBBO_RULE,
            checksums=checksums,
        )


def write_staged(final: Path, write: Callable[[Path], Manifest]) -> Manifest:
    """Run ``write`` into a hidden directory beside ``final`` and move it into place when it
    returns (both markets' captures): a failure leaves the old capture, if any, as it was,
    and no half capture; an OSError becomes an ArtifactWriteError naming ``final``."""
    out_dir = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        manifest = write(out_dir)
        _move_into_place(out_dir, final)
    except BaseException as exc:
        shutil.rmtree(out_dir, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, ArtifactWriteError):
            raise ArtifactWriteError(final, exc) from exc
        raise
    return manifest


def _move_into_place(new: Path, final: Path) -> None:
    """Make the finished capture ``new`` the date's capture; an old one there goes only
    after the new one is in place (two renames; a reader sees one or the other)."""
    old = final.with_name(f".{final.name}.{os.getpid()}.old")
    if final.exists():
        os.rename(final, old)
    os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)


def check_target(d: Path, force: bool) -> None:
    """CaptureExistsError when the capture directory ``d`` holds a capture and ``force`` is off."""
    if not force and d.is_dir() and any(d.iterdir()):
        raise CaptureExistsError(f"{d}: a capture is already there; give --force to replace it "
                                 "(or --date/--data for another place)")


def synthesize(cfg: SynthConfig) -> SynthResult:
    """Generate the capture ``cfg`` describes into a temporary directory beside its place,
    moved into place when whole (a failure leaves the old capture, if any, as it was)."""
    check_target(cfg.directory, cfg.force)
    return Generator(cfg).run()

