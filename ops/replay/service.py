"""The replay service: recorded captures back onto the wire, paced in C by sender processes.

``ReplayService`` is what the command line, the HTTP API and the runtime drive: configure it
(a ``ReplayConfig``), ``start`` it (the captures are read and checked, the schedule merged,
the shared memory made and the senders spawned; nothing is sent if anything is wrong),
``set_rate`` while it runs, ``stop`` it, and read ``status`` at any time. A supervisor thread
drains the senders' logs into ``intended.parquet`` and notices a sender that failed.
"""
from __future__ import annotations

import atexit
import os
import pickle
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from omdp.clock import now_ns
from omdp.runtime.machine import keep_thread_off
from ops.replay.capture_set import CaptureSet
from ops.replay.config import COPY_INDEX, ReplayConfig
from ops.replay.control_packets import reset_packets
from ops.replay.ctl_segment import CtlSegment
from ops.replay.intended_parquet import IntendedParquetWriter
from ops.replay.intended_table import IntendedTable
from ops.replay.native_layout import SENDER_DONE, SENDER_FAILED, SENDER_READY, SENDER_RUNNING, SENDER_STATES, SENT_DTYPE
from ops.replay.rates import PAPER_1X_PPS, RateError, RateSpec
from ops.replay.realtime import REALTIME_PRIORITY, policy_name, realtime_warnings
from ops.replay.schedule import Schedule, assign_lines, build_schedule
from ops.replay.sender import RingTarget, SenderPlan, UdpTarget
from ops.replay.shm_segments import ctl_name, intended_name, reap_stale_segments
from ops.replay.status import (
    LAG_WARN_NS,
    SINK_WAIT_WARN_SHARE,
    SUSTAINED_FRACTION,
    LineStatus,
    ReplayStatus,
    SenderStatus,
    pacing_from_hist,
)

START_TIMEOUT_S = 60.0
"""How long senders may take to spawn, map their files and open their sinks."""
START_LEAD_NS = 5_000_000
"""The common start lies this far after the last sender is ready, so every one sees it."""
POLL_S = 0.02
"""Supervisor period: log drains and health checks."""
DRAIN_ENTRIES = 1 << 16
"""Sent-log entries taken per drain call (the buffer is reused)."""
RATE_MARK_NS = 1_000_000_000
"""The recent rate is measured over about this long."""
INT64_MAX = (1 << 63) - 1


class ReplayStateError(RuntimeError):
    """An action that does not fit the service's state (start while running, ...)."""


class ReplaySenderError(RuntimeError):
    """A sender process failed; the message carries its own words."""


_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``ops`` package, put on the senders' path."""


def netns_prefix(netns: str) -> list[str]:
    """The command prefix that runs a sender in network namespace ``netns`` ('' for none);
    a ValueError naming the field when there is no such namespace or no ``ip`` to enter it."""
    if not netns:
        return []
    if shutil.which("ip") is None:
        raise ValueError(f"netns {netns!r}: no 'ip' command (iproute2) to enter it")
    if not Path("/run/netns", netns).exists():
        raise ValueError(f"netns {netns!r}: no such network namespace (`ip netns list` shows them)")
    return ["ip", "netns", "exec", netns]


def _reap(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for a sender to exit, killing it if it has not within ``timeout``."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5.0)


def sink_wait_warning(sender: int, waits: int, wait_ns: int, elapsed_ns: int, target: str) -> str | None:
    """The warning for a sender that waited for room in its ring, once the waits add up to
    SINK_WAIT_WARN_SHARE of the run's time (None below that: counted, not warned)."""
    if not waits or wait_ns < SINK_WAIT_WARN_SHARE * max(elapsed_ns, 1):
        return None
    return (f"sender {sender}: waited {waits:,} times ({wait_ns / 1e6:.1f} ms) for room in {target}: its consumer "
            "fell behind (back-pressure, seen as pacing error)")


def new_run_id() -> str:
    """A run id: local date and time, pid and a random suffix (unique on a host)."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(2)}"


@dataclass
class _Run:
    """One start of the service, until its senders are gone and its resources released."""

    run_id: str
    run_dir: Path
    config: ReplayConfig
    schedule: Schedule
    rate: RateSpec
    target_pps: float
    ctl: CtlSegment
    table: IntendedTable | None
    writer: IntendedParquetWriter | None
    lines_of: list[list[int]]
    procs: list[subprocess.Popen] = field(default_factory=list)
    tmpdir: Path | None = None
    start_ns: int = 0
    end_ns: int = INT64_MAX
    stopped_ns: int | None = None
    state: str = "starting"
    error: str | None = None
    stop_requested: bool = False
    stop_deadline: float = 0.0
    thread: threading.Thread | None = None
    final: ReplayStatus | None = None
    released: bool = False
    rate_marks: list[tuple[int, int]] = field(default_factory=list)
    """(time ns, packets done) about once a second, for the recent rate."""
    drain_buf: np.ndarray = field(default_factory=lambda: np.empty(DRAIN_ENTRIES, dtype=SENT_DTYPE))


class ReplayService:
    """Configure, start, stop, set the rate of, and report on one replay at a time.

    Thread-safe: the HTTP API calls it from its own thread. A run's shared memory is
    unlinked when it ends, when ``stop``/``close`` is called, or at interpreter exit.
    """

    def __init__(self, config: ReplayConfig | None = None) -> None:
        self._lock = threading.RLock()
        self._config: ReplayConfig | None = None
        self._captures: CaptureSet | None = None
        self._run: _Run | None = None
        self._starting = False
        atexit.register(self.close)
        if config is not None:
            self.configure(config)

    # ---- configuration -----------------------------------------------------------------

    def configure(self, config: ReplayConfig) -> None:
        """Check ``config`` against its capture directory (manifest, lines, files) and keep it
        for the next ``start``. Raises CaptureInputError / ReplayConfigError."""
        with self._lock:
            if self.running:
                raise ReplayStateError("a replay is running: stop it before configuring another")
            captures = CaptureSet.open(config.capture_dir, config.lines, config.copies_sent if not config.ring_name else (),
                                       b_copy="B" in config.copies_sent)
            self._config = config
            self._captures = captures

    @property
    def config(self) -> ReplayConfig | None:
        return self._config

    def multicast_endpoints(self) -> list[tuple[str, int]]:
        """The (group, port) pairs the configured replay sends to; empty into a ring."""
        cfg, captures = self._config, self._captures
        if cfg is None or captures is None or cfg.ring_name:
            return []
        return [ep.groups[c] for ep in captures.endpoints.values() for c in cfg.copies_sent if c in ep.groups]

    @property
    def running(self) -> bool:
        """True from ``start`` until every sender has ended."""
        run = self._run
        return self._starting or (run is not None and run.state in ("starting", "running"))

    @property
    def intended_table_name(self) -> str | None:
        """Shared-memory name of the running replay's intended-time table."""
        run = self._run
        return run.table.name if run is not None and run.table is not None and not run.released else None

    @property
    def schedule(self) -> Schedule | None:
        """The merged schedule of the running (or last) replay; with ``Schedule.scale_for``
        and ``ops.replay.pacing_floor`` it gives the intended times of every packet sent."""
        return self._run.schedule if self._run is not None else None

    @property
    def run_dir(self) -> Path | None:
        return self._run.run_dir if self._run is not None else None

    # ---- start ---------------------------------------------------------------------------

    def start(self, *, run_id: str | None = None, run_dir: Path | None = None, rate: RateSpec | None = None) -> ReplayStatus:
        """Read and check the captures, build the schedule, spawn the senders and start them
        together. ``run_id``/``run_dir`` default to a new id under ``<data>/runs/<date>/``.
        Nothing is sent if any check fails. The captures are read without holding the
        service's lock, so ``status`` answers (state "starting") meanwhile."""
        with self._lock:
            if self.running:
                raise ReplayStateError("a replay is already running")
            if self._config is None or self._captures is None:
                raise ReplayStateError("configure the replay before starting it")
            if rate is not None:
                self._config = self._config.model_copy(update={"rate": rate})
            cfg = self._config
            capture_set = self._captures
            self._starting = True
        try:
            captures = capture_set.read()
            control = reset_packets(captures) if cfg.loop else None
            schedule = build_schedule(captures, capture_set.files, recorded_timing=cfg.rate.recorded_timing,
                                      control_packets=control, b_captures=capture_set.read_b(),
                                      b_files=capture_set.b_files)
            del captures
            with self._lock:
                return self._launch(cfg, capture_set, schedule, run_id, run_dir)
        finally:
            self._starting = False

    def _launch(self, cfg: ReplayConfig, capture_set: CaptureSet, schedule: Schedule, run_id: str | None,
                run_dir: Path | None) -> ReplayStatus:
        scale = schedule.scale_for(cfg.rate)
        lines_of = assign_lines(schedule.line_packets, cfg.senders)
        reap_stale_segments()
        run_id = run_id or new_run_id()
        run_dir = Path(run_dir or cfg.run_dir or cfg.data_root() / "runs" / time.strftime("%Y-%m-%d") / run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        ctl = CtlSegment.create(ctl_name(run_id), n_senders=len(lines_of), log_capacity=cfg.log_capacity,
                                creator_pid=os.getpid())
        ctl.segment.prefault()
        run = _Run(run_id=run_id, run_dir=run_dir, config=cfg, schedule=schedule, rate=cfg.rate,
                   target_pps=cfg.rate.target_pps(schedule.recorded_pps), ctl=ctl, table=None, writer=None,
                   lines_of=lines_of)
        self._run = run
        try:
            run.table = IntendedTable.create(intended_name(run_id), max_line=max(schedule.line_packets),
                                             capacity=cfg.intended_capacity, run_id=run_id, creator_pid=os.getpid())
            run.table.segment.prefault()
            if cfg.write_intended:
                run.writer = IntendedParquetWriter(run_dir / "intended.parquet")
            self._spawn_senders(run, capture_set)
            self._wait_ready(run)
        except BaseException:
            self._abort(run)
            raise
        if run.tmpdir is not None:
            shutil.rmtree(run.tmpdir, ignore_errors=True)
            run.tmpdir = None
        start = now_ns() + START_LEAD_NS
        run.start_ns = start
        run.end_ns = start + int(cfg.seconds * 1e9) if cfg.seconds else INT64_MAX
        ctl.set_map(start, 0, scale)
        ctl.start(start, run.end_ns)
        run.state = "running"
        run.thread = threading.Thread(target=self._supervise, args=(run,), name=f"omdp-replay-{run_id}", daemon=True)
        run.thread.start()
        return self._status_of(run)

    def _spawn_senders(self, run: _Run, captures: CaptureSet) -> None:
        cfg = run.config
        sched = run.schedule
        sizes = captures.file_sizes()
        run.tmpdir = Path(tempfile.mkdtemp(prefix="omdp-replay-"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
        thresholds = cfg.drop_thresholds()
        for i, lines in enumerate(run.lines_of):
            path = run.tmpdir / f"sender{i}.npy"
            np.save(path, sched.lines_subset(lines))
            mine = set(lines)
            sources = [
                (str(p), sizes[p]) if any(p in captures.files_of(ln) for ln in mine) else ("", 0) for p in sched.sources
            ]
            dests = {} if cfg.ring_name else {
                (ln, COPY_INDEX[c]): captures.endpoints[ln].groups[c] for ln in lines for c in cfg.copies_sent
            }
            plan = SenderPlan(
                index=i,
                ctl_name=run.ctl.name,
                intended_name=run.table.name if run.table else None,
                schedule_path=str(path),
                sources=sources,
                control_buf=sched.control_buf,
                copies_mask=cfg.copies_mask,
                lap_span=sched.lap_span,
                loop=cfg.loop,
                drop_thresholds=thresholds,
                drop_seed=cfg.seed,
                spin_ns=int(cfg.spin_us * 1000),
                realtime_priority=REALTIME_PRIORITY if cfg.realtime else 0,
                cpu=cfg.cpus[i % len(cfg.cpus)] if cfg.cpus else None,
                target=(RingTarget(cfg.ring_name) if cfg.ring_name
                        else UdpTarget(cfg.interface, cfg.ttl, dests, cfg.multicast_sender, cfg.xdp)),
                parent_pid=os.getpid(),
            )
            plan_path = run.tmpdir / f"sender{i}.plan"
            plan_path.write_bytes(pickle.dumps(plan))
            # -P: the working directory (maybe a source checkout) stays off the path; the
            # package root travels in PYTHONPATH. A session of its own: the terminal's Ctrl-C reaches only the service, which
            # stops the senders in order.
            run.procs.append(subprocess.Popen([*netns_prefix(cfg.netns), sys.executable, "-P", "-m",
                                               "ops.replay.sender_program", str(plan_path)],
                                              env=env, stdin=subprocess.DEVNULL, start_new_session=True))

    def _wait_ready(self, run: _Run) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            states = run.ctl.senders["state"]
            for i, proc in enumerate(run.procs):
                if states[i] == SENDER_FAILED:
                    raise ReplaySenderError(self._sender_error(run, i))
                if proc.poll() is not None and states[i] < SENDER_READY:
                    raise ReplaySenderError(f"sender {i} exited with code {proc.returncode} before it was ready")
            if all(s >= SENDER_READY for s in states):
                return
            if time.monotonic() > deadline:
                raise ReplaySenderError(f"senders not ready after {START_TIMEOUT_S:.0f} s")
            time.sleep(0.01)

    @staticmethod
    def _sender_error(run: _Run, i: int) -> str:
        return bytes(run.ctl.senders["error"][i]).decode(errors="replace") or f"sender {i} failed"

    # ---- running -------------------------------------------------------------------------

    def set_rate(self, rate: RateSpec) -> ReplayStatus:
        """Change the rate. Running: the time map is re-anchored now, so packets already due
        stay due and the rest follow the new rate. Not running: the next start uses it.
        Recorded timing (rate, speed) and fixed pps cannot be swapped while running."""
        with self._lock:
            run = self._run
            if self._starting:
                raise ReplayStateError("the replay is starting; set the rate once it runs")
            if run is None or run.state not in ("starting", "running"):
                if self._config is None:
                    raise ReplayStateError("configure the replay before setting its rate")
                self._config = self._config.model_copy(update={"rate": rate})
                return self.status()
            try:
                scale = run.schedule.scale_for(rate)
            except RateError:
                raise
            except ValueError as e:
                raise ReplayStateError(f"cannot change the rate while running: {e}") from None
            t = now_ns()
            anchor_ns, anchor_off, old_scale = run.ctl.get_map()
            run.ctl.set_map(t, anchor_off + round((t - anchor_ns) / old_scale), scale)
            run.rate = rate
            run.target_pps = rate.target_pps(run.schedule.recorded_pps)
            self._config = run.config = run.config.model_copy(update={"rate": rate})
            return self._status_of(run)

    def stop(self, timeout: float = 10.0) -> ReplayStatus:
        """Ask the senders to stop, wait for them (terminating any that hang past
        ``timeout``), write intended.parquet and release the shared memory."""
        with self._lock:
            run = self._run
            if run is None:
                return self.status()
            if run.state in ("starting", "running") and not run.stop_requested:
                run.stop_requested = True
                run.stopped_ns = now_ns()
                run.stop_deadline = time.monotonic() + timeout
                run.ctl.stop()
            thread = run.thread
        if thread is not None:
            thread.join(timeout + 5.0)
        return self.status()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the replay has ended (schedule done, --seconds reached, stopped or
        failed). True when it has."""
        run = self._run
        if run is None or run.thread is None:
            return True
        run.thread.join(timeout)
        return not run.thread.is_alive()

    def close(self) -> None:
        """Stop any running replay and release everything (also run at interpreter exit)."""
        if self._run is not None and not self._run.released:
            self.stop(timeout=5.0)

    def __enter__(self) -> "ReplayService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- supervisor ----------------------------------------------------------------------

    def _supervise(self, run: _Run) -> None:
        """The control thread of a run. Whatever goes wrong in it, the run ends cleanly: the
        error is reported in the status (state "failed"), the senders are stopped, what was
        logged is written and the shared memory removed."""
        try:
            self._supervise_loop(run)
        except BaseException as e:  # noqa: BLE001 - the thread must not die with the run's resources held
            self._control_failed(run, e)

    def _control_failed(self, run: _Run, exc: BaseException) -> None:
        with self._lock:
            if run.error is None:
                run.error = f"replay control thread failed: {type(exc).__name__}: {exc}"
            run.state = "failed"
            for step in (run.ctl.stop, lambda: [proc.terminate() for proc in run.procs if proc.poll() is None],
                         lambda: [_reap(proc, 2.0) for proc in run.procs], lambda: self._drain(run)):
                try:
                    step()
                except Exception:  # noqa: BLE001 - best effort: keep releasing
                    pass
            if run.final is None:
                try:
                    run.final = self._status_of(run)
                except Exception:  # noqa: BLE001
                    run.final = ReplayStatus(state="failed", run_id=run.run_id, run_dir=str(run.run_dir),
                                             rate=run.rate.describe(), error=run.error)
            try:
                self._release(run)
            except Exception:  # noqa: BLE001
                pass

    def _supervise_loop(self, run: _Run) -> None:
        keep_thread_off(set(run.config.cpus))
        while True:
            time.sleep(POLL_S)
            self._drain(run)
            t = now_ns()
            if not run.rate_marks or t - run.rate_marks[-1][0] >= RATE_MARK_NS:
                run.rate_marks = [*run.rate_marks[-1:], (t, int(run.ctl.senders["packets_done"].sum()))]
            states = run.ctl.senders["state"]
            alive = [p.poll() is None for p in run.procs]
            for i, proc in enumerate(run.procs):
                dead_early = not alive[i] and states[i] not in (SENDER_DONE, SENDER_FAILED)
                if (states[i] == SENDER_FAILED or dead_early) and run.error is None:
                    run.error = self._sender_error(run, i) if states[i] == SENDER_FAILED else (
                        f"sender {i} died (exit code {proc.returncode})")
                    run.ctl.stop()
            if not any(alive):
                break
            if run.stop_requested and time.monotonic() > run.stop_deadline:
                for proc in run.procs:
                    if proc.poll() is None:
                        proc.terminate()
                for proc in run.procs:
                    _reap(proc, 2.0)
                break
        with self._lock:
            for proc in run.procs:
                _reap(proc, 1.0)
            self._drain(run)
            if run.error:
                run.state = "failed"
            elif run.stop_requested:
                run.state = "stopped"
            else:
                run.state = "finished"
            run.final = self._status_of(run)
            self._release(run)

    def _drain(self, run: _Run) -> None:
        for i in range(len(run.procs)):
            while True:
                sent = run.ctl.drain_log(i, run.drain_buf)
                if run.writer is not None:
                    run.writer.add(sent)
                if sent.shape[0] < DRAIN_ENTRIES:
                    break

    def _release(self, run: _Run) -> None:
        """Close the parquet file and unlink the shared memory (idempotent)."""
        if run.released:
            return
        run.released = True
        if run.writer is not None:
            run.writer.close()
        if run.table is not None:
            run.table.close()
            run.table.unlink()
        run.ctl.close()
        run.ctl.unlink()
        if run.tmpdir is not None:
            shutil.rmtree(run.tmpdir, ignore_errors=True)
            run.tmpdir = None

    def _abort(self, run: _Run) -> None:
        """A start that failed: stop whatever began and release everything."""
        run.ctl.stop()
        for proc in run.procs:
            _reap(proc, 5.0)
        run.state = "failed"
        run.error = "start failed"
        run.writer = None  # nothing was sent: no intended.parquet
        self._release(run)
        self._run = None

    # ---- status --------------------------------------------------------------------------

    def status(self) -> ReplayStatus:
        """The replay's state, counts, rates and pacing error (the last run's, once ended)."""
        with self._lock:
            run = self._run
            if run is None or (self._starting and run.state not in ("starting", "running")):
                cfg = self._config
                return ReplayStatus(
                    state="starting" if self._starting else "idle",
                    capture_dir=str(cfg.capture_dir) if cfg else None,
                    target=cfg.target if cfg else None,
                    copies=list(cfg.copies_sent) if cfg else [],
                    loop=cfg.loop if cfg else False,
                    realtime_requested=cfg.realtime if cfg else False,
                    rate=cfg.rate.describe() if cfg else None,
                )
            return self._status_of(run)

    def _status_of(self, run: _Run) -> ReplayStatus:
        if run.released and run.final is not None:
            return run.final
        cfg = run.config
        snd = run.ctl.senders.copy()
        lines = run.ctl.lines.copy()
        now = now_ns()
        done_states = (SENDER_DONE, SENDER_FAILED)
        finished = run.state not in ("starting", "running") or all(s in done_states for s in snd["state"])
        last_sent = int(snd["last_sent_ns"].max()) if len(snd) else 0
        t_wall = last_sent if finished and last_sent else now
        started = bool(run.start_ns) and now >= run.start_ns
        elapsed_ns = max(t_wall - run.start_ns, 0) if started else 0
        packets_done = int(snd["packets_done"].sum())

        t_due = min(now, run.end_ns - 1, run.stopped_ns or INT64_MAX)
        due = 0
        if started:
            anchor_ns, anchor_off, scale = run.ctl.get_map()
            due = run.schedule.due(anchor_off + (t_due - anchor_ns) / scale, cfg.loop) if scale > 0 else 0
            if not cfg.loop:
                due = min(due, run.schedule.n_data)

        senders: list[SenderStatus] = []
        warnings: list[str] = []
        fraction = 1.0 if started else None
        for i, s in enumerate(snd):
            state = int(s["state"])
            lag = 0
            frac = 1.0
            if state == SENDER_RUNNING and started and s["next_intended_ns"] < now:
                lag = now - int(s["next_intended_ns"])
                frac = (int(s["next_intended_ns"]) - run.start_ns) / max(now - run.start_ns, 1)
            elif state == SENDER_DONE and s["last_sent_ns"]:
                lag = int(s["last_sent_ns"]) - int(s["last_intended_ns"])
                frac = (int(s["last_intended_ns"]) - run.start_ns) / max(int(s["last_sent_ns"]) - run.start_ns, 1)
            frac = min(max(frac, 0.0), 1.0)
            if started and fraction is not None:
                fraction = min(fraction, frac)
            if lag > LAG_WARN_NS and frac < SUSTAINED_FRACTION:
                warnings.append(f"target rate not achieved: sender {i} is {lag / 1e6:.1f} ms behind its schedule "
                                f"({frac * 100:.2f}% of it kept)")
            if s["log_overruns"]:
                warnings.append(f"sender {i}: {int(s['log_overruns'])} packets missing from intended.parquet "
                                "(the service did not drain the sent log in time)")
            warnings += realtime_warnings(i, requested=bool(s["rt_requested"]), rt_errno=int(s["rt_errno"]),
                                          mlock_errno=int(s["mlock_errno"]), policy=int(s["policy"]),
                                          priority=int(s["rt_priority"]))
            waited = sink_wait_warning(i, int(s["sink_waits"]), int(s["sink_wait_ns"]), elapsed_ns, cfg.target)
            if waited:
                warnings.append(waited)
            if s["rests"]:
                warnings.append(f"sender {i}: {int(s['rests'])} rests forced by the real-time budget "
                                f"({int(s['rest_ns']) / 1e6:.1f} ms): it ran more than 8/9 of a CPU")
            if s["source_errors"]:
                warnings.append(f"sender {i}: {int(s['source_errors'])} packets skipped, outside their capture file")
            senders.append(SenderStatus(
                index=i, pid=int(s["pid"]), cpu=int(s["cpu"]) if s["cpu"] >= 0 else None,
                state=SENDER_STATES[state] if state < len(SENDER_STATES) else str(state),
                lines=run.lines_of[i], lap=int(s["lap"]), packets_done=int(s["packets_done"]), lag_ns=lag,
                batches=int(s["batches"]), behind_batches=int(s["behind_batches"]),
                source_errors=int(s["source_errors"]), log_overruns=int(s["log_overruns"]), cpu_s=int(s["cpu_ns"]) / 1e9,
                preemptions=int(s["preemptions"]), policy=policy_name(int(s["policy"])),
                realtime=int(s["rt_priority"]) > 0, rt_priority=int(s["rt_priority"]),
                memory_locked=bool(s["memory_locked"]), forced_rests=int(s["rests"]),
                forced_rest_s=int(s["rest_ns"]) / 1e9, ring_full_waits=int(s["sink_waits"]),
                ring_full_wait_s=int(s["sink_wait_ns"]) / 1e9, ring_full_wait_rest_s=int(s["sink_wait_rest_ns"]) / 1e9,
                error=bytes(s["error"]).decode(errors="replace"),
            ))

        copies = list(cfg.copies_sent)
        c0 = COPY_INDEX[copies[0]]
        line_status = []
        for ln in sorted(run.schedule.line_packets):
            row = lines[ln]
            per = {name: {c: int(row[name][COPY_INDEX[c]]) for c in copies}
                   for name in ("packets", "messages", "bytes", "dropped", "send_errors")}
            line_status.append(LineStatus(line=ln, control_packets=int(row["control_packets"]),
                                          messages_intended=int(row["intended_messages"]),
                                          intended_end_seq=int(row["intended_end_seq"]),
                                          packets_dropped=int(row["lost_packets"]),
                                          messages_dropped=int(row["lost_messages"]), **per))
            refused = sum(per["send_errors"].values())
            if refused:
                warnings.append(f"line {ln}: {refused} datagrams refused by the kernel")
        messages = int(sum(int(lines[ln]["messages"][c0]) for ln in run.schedule.line_packets))
        sent_first = int(sum(int(lines[ln]["packets"][c0]) for ln in run.schedule.line_packets))
        achieved_pps = packets_done / (elapsed_ns / 1e9) if elapsed_ns > 0 else None
        recent_pps = None
        if not finished and run.rate_marks and now > run.rate_marks[0][0]:
            t0, p0 = run.rate_marks[0]
            recent_pps = (packets_done - p0) / ((now - t0) / 1e9)
        pacing = pacing_from_hist(snd["pacing_hist"].sum(axis=0), int(snd["pacing_count"].sum()),
                                  int(snd["pacing_sum_ns"].sum()), int(snd["pacing_max_ns"].max()) if len(snd) else 0)
        return ReplayStatus(
            state=run.state,  # type: ignore[arg-type]
            run_id=run.run_id,
            run_dir=str(run.run_dir),
            capture_dir=str(cfg.capture_dir),
            target=cfg.target,
            copies=copies,
            loop=cfg.loop,
            realtime_requested=cfg.realtime,
            realtime=bool(senders) and started and all(s.realtime for s in senders),
            rate=run.rate.describe(),
            target_pps=run.target_pps,
            target_x=run.target_pps / PAPER_1X_PPS,
            achieved_pps=achieved_pps,
            achieved_x=achieved_pps / PAPER_1X_PPS if achieved_pps is not None else None,
            achieved_fraction=fraction,
            recent_pps=recent_pps,
            packets_sent=packets_done - sum(ls.packets_dropped for ls in line_status),
            packets_dropped=sum(ls.packets_dropped for ls in line_status),
            messages_dropped=sum(ls.messages_dropped for ls in line_status),
            control_packets=sum(ls.control_packets for ls in line_status),
            packets_due=due,
            packets_total=None if cfg.loop else run.schedule.n_data,
            messages_sent=messages,
            messages_per_packet=messages / sent_first if sent_first else None,
            laps=int(snd["lap"].max()) + 1 if started and len(snd) else 0,
            started_ns=run.start_ns or None,
            ended_ns=t_wall if finished and started else None,
            elapsed_s=elapsed_ns / 1e9,
            pacing=pacing,
            lines=line_status,
            senders=senders,
            warnings=warnings,
            intended_table=run.table.name if run.table is not None and not run.released else None,
            intended_parquet=str(run.writer.path) if run.writer is not None else None,
            error=run.error,
        )
