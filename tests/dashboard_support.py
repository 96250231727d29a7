"""A short live run made of omdp's real parts, in one process, for the dashboard tests.

OPRA quotes are encoded into packets by the codec once (the capture); a feeder thread then
paces them per line at a target rate, decodes each line's due packets with the C batch
decoder (``fh_in`` read before the decode, ``fh_out`` after), runs them through the C
decision engine (``de_in``/``de_out``, 1 in N forwarded and flagged sampled, signals),
puts the engine's output through a real Vega ring in shared memory, and hands what comes
out to the C latency collector (``mc_in``), which publishes into the run's stats segment
owned here. Line counters, the engine's and the ring's counters, signals and the run info
are published like a pipeline would. ``stop()`` writes the run directory's records
(meta, samples, ingest, signals, run.json), so the same run serves the finished-run tests.

A few packets of the last line are skipped on purpose (counted as missed messages), so the
page has missed messages to highlight.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from decision_engines.engine import DecisionEngine, split_output
from decision_engines.engine_config import EngineConfig
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIGNAL_DTYPE, signal_kind_name
from feedhandlers.opra_batch import BatchDecoder
from feedhandlers.opra_fast import encode_stream
from feedhandlers.opra_record import OPRA_MSG_DTYPE, PRICE_SCALE
from omdp.clock import now_ns
from omdp.metrics.breakdown import BASE_PPS
from omdp.metrics.definitions import HOP_STAMPS
from omdp.metrics.histogram import RELATIVE_ERROR
from omdp.metrics.ingest_collector import IngestCollector
from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.latency_summary import PERCENTILES, min_samples, percentile_field
from omdp.metrics.run_files import write_meta, write_signals
from omdp.metrics.sample_identity import IdentityLayout
from omdp.metrics.stats_segment import StatsWriter
from omdp.record import RT_OPRA_MSG
from omdp.transport.shm_names import shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver, VegaSender
from omdp.transport.vega_status import PEER_STATES
from ops.dashboard.finished_source import series_label

CENT = PRICE_SCALE // 100
MESSAGES_PER_PACKET = 8
SKIP_EVERY = 40
"""The last line loses one packet in SKIP_EVERY (before decoding: a gap)."""
ENGINE_COUNTERS = ("batches", "processed", "quotes", "sampled", "signals", "sig_crossed", "series", "out_full_stops")
CHANNEL_COUNTERS = ("messages", "bytes", "occupancy", "full_events", "spins", "drops", "peer_state")
_PEER_CODES = {name: int(code) for code, name in PEER_STATES.items()}


def new_run_id() -> str:
    """A run id usable in shared-memory names (no dashes)."""
    return f"dash{uuid.uuid4().hex[:12]}"


def _capture(line: int, n: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """n quotes of one line over 60 series on six exchanges, cut into packets of 8: every
    50th quote crosses the market and the next one puts it right (the engine signals)."""
    i = np.arange(n)
    series = (i // 6) % 60
    ex = i % 6
    crossing = i % 50 == 49
    repair = np.roll(crossing, 1)
    series = np.where(repair, np.roll(series, 1), series)
    ex = np.where(repair, np.roll(ex, 1), ex)
    bid = np.where(crossing, 300, 100 + (i % 9))
    q = build_quotes(root=b"XYZ  " if line % 2 else b"ABC  ", expiry=20080322, strike_px=(20 + series) * PRICE_SCALE,
                     put_call=np.where(series % 2 == 0, b"C", b"P").astype("S1"),
                     participant=np.frombuffer(b"ABCIPX", np.uint8)[ex], bid_px=bid * CENT, bid_size=10,
                     offer_px=(bid + 10) * CENT, offer_size=10, underlying_id=line, line=line)
    q["strike"] = (20 + series) * 10  # the wire's strike: tenths of a dollar ('A')
    q["strike_den"] = ord("A")
    buf, offsets, lengths, _ = encode_stream(q, b"", [MESSAGES_PER_PACKET])
    return buf, offsets, lengths


class LiveFeed:
    """A live run of ``lines`` OPRA lines at ``pps`` packets/s in total, until ``stop()``."""

    def __init__(self, run_dir: Path, run_id: str | None = None, lines: tuple[int, ...] = (1, 2, 3),
                 pps: float = 1500.0, sample_every: int = 8) -> None:
        self.run_id = run_id or new_run_id()
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.lines = lines
        self.pps = pps
        self.sample_every = sample_every
        self.stats = StatsWriter.create(self.run_id)
        self.captures = {ln: _capture(ln, 4000) for ln in lines}
        self.decoder = BatchDecoder()
        self.engine = DecisionEngine(EngineConfig(sample_every=sample_every, max_series=4096, max_groups=64))
        self.spec = ChannelSpec(queue_size=32, max_message=1 << 18)
        self.ring_name = shm_name(self.run_id, "de-mc")
        self.receiver = VegaReceiver.create(self.spec, self.ring_name)
        self.sender = VegaSender.attach(self.spec, self.ring_name)
        identity = IdentityLayout.from_dtype(OPRA_MSG_DTYPE, line="line", block_seq="block_seq", msg_seq="msg_seq",
                                             key="underlying_id", category="category")
        self.collector = LatencyCollector(sample_every=sample_every, record_type=RT_OPRA_MSG, identity=identity,
                                          stats=self.stats, name="mc", cpu=-1, publish_interval_ms=50)
        self.ingest = IngestCollector(stats=self.stats)
        self.engine_entry = self.stats.register_operator("de", "operator", ENGINE_COUNTERS)
        self.channel_entry = self.stats.register_operator("de->mc", "channel", CHANNEL_COUNTERS)
        self.counts = {ln: dict(packets_received=0, messages_received=0, messages_missed=0) for ln in lines}
        self.next_packet = {ln: 0 for ln in lines}
        self.signal_rows: list[np.ndarray] = []
        self.out = np.zeros(self.spec.max_message, dtype=np.uint8)
        self.started_ns = now_ns()
        self.running_since = time.monotonic()
        self.packets_sent = 0
        self._pause = threading.Event()
        self._paused = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-feed", daemon=True)
        self.stats.set_run_info(state="running", topology="dashboard-feed", config="fused FH -> DE, vega-shm -> MC",
                                run_dir=str(self.run_dir), target_pps=pps, sample_every=sample_every,
                                knobs={"de->mc": {"transport": "vega-shm", "queue_size": 32, "wait": "spin"}})

    def start(self) -> LiveFeed:
        """Start feeding from a background thread."""
        self.running_since = self.started_mono = time.monotonic()
        self._thread.start()
        return self

    def pause(self) -> None:
        """Stop sending until ``resume``; returns once everything taken so far is published,
        so the figures stay as they are."""
        self._pause.set()
        if not self._paused.wait(10.0):
            raise RuntimeError("the feeder did not pause")

    def resume(self) -> None:
        self._paused.clear()
        self._pause.clear()
        self.running_since = time.monotonic()

    def wait_running(self, seconds: float, since_start: bool = False) -> None:
        """Return once the feed has been sending for ``seconds`` since its last resume (rates
        reflect it again), or ``since_start``: since it started (pauses included)."""
        since = self.started_mono if since_start else self.running_since
        time.sleep(max(0.0, since + seconds - time.monotonic()))

    def _run(self) -> None:
        start = now_ns()
        sent = 0
        next_tick = start + 1_000_000_000
        while not self._stop.is_set():
            now = now_ns()
            if self._pause.is_set():
                if not self._paused.is_set():
                    self.collector.publish()
                    self._publish_counters(0, 0)
                    self._paused.set()
                start, sent = now, 0
            else:
                per_line = int((now - start) / 1e9 * self.pps - sent) // len(self.lines)
                if per_line > 0:
                    for li, ln in enumerate(self.lines):
                        # packet k of the schedule is planned at start + k / pps (all lines interleaved)
                        k = sent + li + len(self.lines) * np.arange(per_line)
                        self._line_step(ln, start + (k * (1e9 / self.pps)).astype(np.int64))
                    sent += per_line * len(self.lines)
            if now >= next_tick:
                self._publish_counters((now - start) / 1e9, sent)
                next_tick = now + 1_000_000_000
            time.sleep(0.005)

    def _line_step(self, line: int, planned_ns: np.ndarray) -> None:
        packets = len(planned_ns)
        buf, offsets, lengths = self.captures[line]
        first = self.next_packet[line] % len(offsets)
        idx = (first + np.arange(packets)) % len(offsets)
        self.next_packet[line] += packets
        self.packets_sent += packets
        c = self.counts[line]
        if line == self.lines[-1]:
            lost = (self.next_packet[line] - packets + np.arange(packets)) % SKIP_EVERY == SKIP_EVERY - 1
            c["messages_missed"] += int(lost.sum()) * MESSAGES_PER_PACKET
            idx, planned_ns = idx[~lost], planned_ns[~lost]
        if not len(idx):
            return
        fh_in = now_ns()
        dec = self.decoder.decode(buf, offsets[idx], lengths[idx])
        fh_out = now_ns()
        rec = np.ascontiguousarray(dec.records)
        rec["line"] = line
        rec["underlying_id"] = line
        st = rec["hdr"]["stamps"]
        st["intended"] = np.repeat(planned_ns, dec.pkt_count)
        st["fh_in"], st["fh_out"] = fh_in, fh_out
        c["packets_received"] += len(idx)
        c["messages_received"] += len(rec)
        self.ingest.update(line, **c)
        self._engine_and_ring(rec)

    def _engine_and_ring(self, rec: np.ndarray) -> None:
        done = 0
        while done < len(rec):
            consumed, used = self.engine.process_batch(rec[done:], self.out, 0)
            done += consumed
            if used:
                out = split_output(self.out, used)
                self._signals(out.signals)
                self.sender.put(self.out[:used].tobytes())
                got = self.receiver.get(timeout=1.0)
                if got is not None:
                    slot, payload = got
                    self.collector.collect(payload)
                    self.receiver.release_buffer(slot)

    def _signals(self, sigs: np.ndarray) -> None:
        for s in sigs:
            root = bytes(s["root"][: s["root_len"]]).decode()
            self.stats.push_signal(signal_kind_name(int(s["kind"])),
                                   series_label(root, int(s["expiry"]), chr(s["put_call"]), int(s["strike_px"])),
                                   float(s["value"]), engine=int(s["engine"]), ts_ns=int(s["hdr"]["stamps"]["de_out"]))
        if len(sigs):
            self.signal_rows.append(sigs.copy())

    def _channel_counts(self) -> dict[str, int]:
        k = self.sender.counters()
        return {"messages": k["tx_messages"], "bytes": k["tx_bytes"], "occupancy": k["tx_messages"] - k["credit"],
                "full_events": k["tx_full_events"], "spins": k["tx_spins"], "drops": k["tx_drops"],
                "peer_state": _PEER_CODES.get(str(k["rx_state"]), -1)}

    def _publish_counters(self, elapsed_s: float, sent: float) -> None:
        ec = self.engine.counters()
        self.engine_entry.publish({k: ec[k] for k in ENGINE_COUNTERS})
        self.channel_entry.publish(self._channel_counts())
        self.ingest.tick()
        if elapsed_s > 0:
            self.stats.set_run_info(achieved_pps=sent / elapsed_s)

    def stop(self) -> None:
        """Stop feeding, publish the final figures, write the run directory's records and
        close the ring and the stats segment (unlinked)."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(10.0)
        ended = now_ns()
        self._publish_counters(0, 0)
        self.ingest.snapshot(ended)
        self.collector.close()
        self.collector.write_samples(self.run_dir)
        self.ingest.write(self.run_dir)
        self._write_signals()
        totals = self.ingest.totals()
        achieved = self.packets_sent / ((ended - self.started_ns) / 1e9)
        write_meta(self.run_dir, {
            "run_id": self.run_id, "sweep_id": "", "date": time.strftime("%Y-%m-%d", time.gmtime(ended / 1e9)),
            "capture_date": "2008-02-04", "topology": "dashboard-feed", "config": "fused FH -> DE, vega-shm -> MC",
            "knobs_json": json.dumps({"de->mc": {"transport": "vega-shm", "queue_size": 32, "wait": "spin"}}),
            "target_pps": self.pps, "achieved_pps": achieved, "rate_x": self.pps / BASE_PPS,
            "messages_per_packet": totals["messages_received"] / max(1, totals["packets_received"]),
            "packets_sent": self.packets_sent,
            "messages_sent": totals["messages_received"] + totals["messages_missed"],
            "messages_processed": totals["messages_received"], "messages_missed": totals["messages_missed"],
            "sample_every": self.sample_every, "started_ns": self.started_ns, "ended_ns": ended,
            "host": os.uname().nodename, "cpu_model": "", "clock_offset_error_ns": 0,
        })
        channel = self._channel_counts()
        (self.run_dir / "run.json").write_text(json.dumps({
            "run_id": self.run_id, "status": "ended", "failure": None,
            "partitions": {"app": {"pid": os.getpid(), "state": "ended", "report": {
                "operators": {"de": self.engine.counters(), "mc": {k: v for k, v in self.collector.counters().items()
                                                                  if isinstance(v, int)}},
                "channels": {"de->mc": channel}}}},
        }))
        self.stats.set_run_info(state="done")
        self.sender.close()
        self.receiver.close()
        self.engine.close()
        self.stats.close()

    def _write_signals(self) -> None:
        sigs = np.concatenate(self.signal_rows) if self.signal_rows else np.zeros(0, SIGNAL_DTYPE)
        write_signals(self.run_dir, {
            "ts_ns": sigs["hdr"]["stamps"]["de_out"], "engine": sigs["engine"], "line": sigs["line"],
            "msg_seq": sigs["msg_seq"], "underlying_id": sigs["underlying_id"],
            "root": [bytes(s["root"][: s["root_len"]]).decode() for s in sigs], "expiry": sigs["expiry"],
            "strike_px": sigs["strike_px"], "put_call": [chr(s["put_call"]) for s in sigs],
            "kind": [signal_kind_name(int(k)) for k in sigs["kind"]], "value": sigs["value"],
        })


def nearest_rank(sorted_values: np.ndarray, q: float) -> int:
    """The nearest-rank order statistic for quantile q (what omdp's quantiles approximate)."""
    return int(sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)])


def expected_hop(rows: dict[str, np.ndarray], hop: str) -> dict[str, float | int | None]:
    """A hop's figures computed with numpy from sample rows (stamps in ns)."""
    a, b = HOP_STAMPS[hop]
    ok = (rows[a] != 0) & (rows[b] != 0)
    v = np.sort(np.maximum(rows[b][ok] - rows[a][ok], 0))
    out: dict[str, float | int | None] = {"count": len(v), "max_us": v[-1] / 1e3 if len(v) else None,
                                          "mean_us": v.mean() / 1e3 if len(v) else None}
    for name, q in PERCENTILES:
        out[percentile_field(name)] = nearest_rank(v, q) / 1e3 if len(v) >= min_samples(q) else None
    return out


def assert_hop_matches(got: dict, want: dict) -> None:
    """An API hop equals numpy's figures: count and max exactly, mean to rounding,
    percentiles within the histogram's 1/256 (n/a where numpy says n/a)."""
    assert got["count"] == want["count"]
    if want["count"] == 0:
        assert got["max_us"] is None and got["mean_us"] is None
        return
    assert got["max_us"] == pytest.approx(want["max_us"], abs=1e-9)
    assert got["mean_us"] == pytest.approx(want["mean_us"], rel=1e-9)
    for name, _ in PERCENTILES:
        f = percentile_field(name)
        if want[f] is None:
            assert got[f] is None, f
        else:
            assert got[f] == pytest.approx(want[f], rel=RELATIVE_ERROR, abs=1e-3), f
