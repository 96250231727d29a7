"""The supervisor: runs a plan as one process per partition and stops it cleanly.

Order of a run: the namespace hosts the plan places partitions on are made
(``omdp.runtime.hosts``); every partition process starts and opens its receivers
(reporting their endpoints); only when all receivers exist are the senders told to
connect; the hosts' clock offsets are estimated and every host's stamps corrected to the
reference host's time (``omdp.runtime.clock_sync``, clocks.json); then all loops start.
While they run the supervisor watches heartbeats and exits. A stop (Ctrl-C, SIGTERM,
``--duration``, or every partition of the ``run.stop_after`` groups having ended) tells
the partitions to stop their sources; end-of-stream frames
then drain every queue in topological order, so sinks end last. A second Ctrl-C, or a
drain that overruns ``drain_timeout_s``, stops everything at once.

A partition that dies (non-zero exit, a ``failed`` report, or silence beyond
``heartbeat_timeout_s``) fails the run: the supervisor reports its exit status and the
last lines of its log, stops the others and returns a failed result. With
``run.on_death = "continue"`` the others go on instead: each is told which of its channels
led to or from the dead partition (``peers-gone``: an input drains what the dead sender
committed and then counts as ended, an output drops what it is given), so the run drains to
its normal end and its sinks write everything the survivors saw (the market leaders mark
the windows the dead partition never passed incomplete); the run still fails, naming every
death. Whatever happens, it waits for every child, kills those that overstay, and removes
the run's shared memory.

The run directory gets plan.json first, processes.json (pid, host, CPUs and log of each
partition) once they started (and hosts.json: the namespace hosts' keepers), clocks.json before the loops start, run.json (status, the
clocks, every partition's final report) last.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from omdp.atomic_files import write_text_atomic
from omdp.native import lib
from omdp.plan import Plan, PlanPartition
from omdp.runtime.channels import cleanup_run
from omdp.runtime.clock_sync import (
    ClockEstimate,
    Exchange,
    HostClock,
    best_estimate,
    clocks_json,
    describe,
    reference_host,
    relative_clocks,
    write_clocks,
)
from omdp.runtime.control import EXIT_ENDED, EXIT_STOPPED, ControlError, LineReader, LineWriter
from omdp.runtime.hosts import HostLaunchers, HostStartError
from omdp.runtime.machine import threads_kept_off
from omdp.runtime.rundir import log_name
from omdp.topology.schema import RunSettings

CLOCK_PONG_TIMEOUT_S = 5.0


@dataclass
class _Child:
    spec: PlanPartition
    proc: subprocess.Popen
    log_path: Path
    reader: LineReader
    writer: LineWriter
    state: str = "starting"
    endpoints: dict[str, str] = field(default_factory=dict)
    clock_facts: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    error: str | None = None
    last_seen: float = field(default_factory=time.monotonic)
    heartbeat: dict[str, Any] | None = None

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None


FINAL_STATES = ("ended", "stopped", "failed")


def overdue(c: _Child, run: RunSettings, now: float) -> str | None:
    """Why ``c``'s silence makes it dead at ``now``, or None. A running partition
    heartbeats every ``heartbeat_s``; one that sent its final report has stopped
    heartbeating and is closing (joining its operators' threads, writing their files),
    which on a loaded host can outlast the heartbeat timeout: it has the drain time to exit."""
    silent = now - c.last_seen
    if c.state not in FINAL_STATES:
        return f"no heartbeat for {silent:.1f} s" if silent > run.heartbeat_timeout_s else None
    if silent > max(run.heartbeat_timeout_s, run.drain_timeout_s):
        return f"not exited {silent:.1f} s after its final report"
    return None


def stopping_child(children: Sequence[_Child], expected_stop: bool) -> _Child | None:
    """The child whose end stops the run, if any. One that exited abnormally without
    reporting a failure (killed by a signal, crashed) is named before one that reported a
    failure: a partition's failure is often the consequence of a peer's death (a replayer
    whose ring lost its receiver says so), and the run should name the cause."""
    def abnormal(c: _Child) -> bool:
        code = c.proc.returncode
        return code is not None and code != EXIT_ENDED and not (expected_stop and code == EXIT_STOPPED)

    died = [c for c in children if c.state != "failed" and abnormal(c)]
    if died:
        return died[0]
    return next((c for c in children if c.state == "failed"), None)


class _Abort(Exception):
    """The run cannot go on; the message says why."""


class _Interrupted(Exception):
    """A stop signal arrived before the loops started."""


@dataclass
class RunResult:
    """How a run went: ``status`` is ended (sources finished, or the ``run.stop_after``
    partitions ended and the rest was stopped; all drained), stopped (on request, drained),
    stopped-hard (on request, not drained) or failed."""

    run_id: str
    run_dir: Path
    status: str
    failure: str | None
    partitions: dict[str, dict[str, Any]]
    started_at: float
    ended_at: float
    clocks: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True unless the run failed."""
        return self.status != "failed"

    def operators(self) -> dict[str, dict[str, int]]:
        """Every operator's final counters, from the partitions' reports."""
        out: dict[str, dict[str, int]] = {}
        for p in self.partitions.values():
            out.update(((p.get("report") or {}).get("operators")) or {})
        return out

    def to_json(self) -> dict[str, Any]:
        """What run.json holds."""
        return {"run_id": self.run_id, "status": self.status, "failure": self.failure,
                "started_at": self.started_at, "ended_at": self.ended_at, "clocks": self.clocks,
                "partitions": self.partitions}


def exit_description(code: int | None) -> str:
    """'exit status 1', 'killed by SIGKILL', 'still running'."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a log file."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError as e:
        return f"(no log: {e})"
    return "\n".join(text.splitlines()[-lines:]) if lines else ""


class Supervisor:
    """Runs one plan. ``echo`` receives progress lines (the CLI prints them)."""

    def __init__(self, plan: Plan, run_dir: Path, run_id: str, echo: Callable[[str], None] | None = None,
                 python: str = sys.executable) -> None:
        self.plan = plan
        self.run_dir = Path(run_dir).resolve()
        self.run_id = run_id
        self.echo = echo or (lambda line: None)
        self.python = python
        self.children: list[_Child] = []
        self._signals = 0
        self._sel = selectors.DefaultSelector()
        self.hosts = HostLaunchers(plan, self.run_dir / "logs", self._env())
        self.clocks: dict[str, Any] | None = None
        self.deaths: dict[str, str] = {}  # with run.on_death = "continue": each dead partition, its failure

    # ---- processes ----------------------------------------------------------------------

    def argv(self, p: PlanPartition) -> list[str]:
        """The command line of partition ``p``, inside its host's namespaces if it has any.

        ``-P``: the working directory is not put on the path, so a run started from a source
        checkout imports the installed omdp (with its compiled module), not the sources; the
        supervisor's own import path travels in PYTHONPATH instead (``_env``).
        """
        return self.hosts.argv(p.host, self.partition_cmd(p))

    def partition_cmd(self, p: PlanPartition) -> list[str]:
        """Partition ``p``'s command itself, wherever it is to run."""
        return [self.python, "-P", "-m", "omdp.runtime.partition_main", "--plan", str(self.run_dir / "plan.json"),
                "--partition", p.name, "--run-id", self.run_id, "--run-dir", str(self.run_dir)]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # The omdp this supervisor imported comes first, also when it came from the working
        # directory ('' on sys.path, which -P keeps from the partitions).
        here = str(Path(__file__).resolve().parents[2])
        paths = [here, *(p for p in sys.path if p and Path(p).is_dir())]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*paths, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]))
        return env

    def _start(self) -> None:
        try:
            self.hosts.start()
        except HostStartError as e:
            raise _Abort(str(e)) from None
        for p in self.plan.partitions:
            log_path = self.run_dir / "logs" / log_name(p.name)
            with log_path.open("ab") as log:
                proc = subprocess.Popen(self.argv(p), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        env=self.hosts.env_for(p.host), start_new_session=True, close_fds=True)
            assert proc.stdin is not None and proc.stdout is not None
            child = _Child(p, proc, log_path, LineReader(proc.stdout.fileno()), LineWriter(proc.stdin))
            self.children.append(child)
            self._sel.register(proc.stdout.fileno(), selectors.EVENT_READ, child)
        write_text_atomic(self.run_dir / "processes.json", json.dumps({
            c.spec.name: {"pid": c.proc.pid, "host": c.spec.host, "cpus": c.spec.cpus, "log": str(c.log_path)}
            for c in self.children}, indent=2))
        if self.hosts.keepers:
            write_text_atomic(self.run_dir / "hosts.json", json.dumps(self.hosts.describe(), indent=2))

    def _send(self, child: _Child, **msg: Any) -> None:
        if child.alive:
            try:
                child.writer.send(**msg)
            except ControlError:
                pass  # it is exiting; its exit status tells the rest

    # ---- events -------------------------------------------------------------------------

    def _pump(self, timeout: float) -> None:
        """Read whatever the children said within ``timeout``; reap those that exited."""
        if self._sel.get_map():
            for key, _ in self._sel.select(timeout):
                child: _Child = key.data
                try:
                    msgs = child.reader.take_unread() + child.reader.feed()
                except ControlError as e:
                    child.error = str(e)
                    msgs = []
                for m in msgs:
                    self._on_event(child, m)
                if child.reader.eof:
                    self._sel.unregister(key.fd)
        else:
            time.sleep(timeout)
        for c in self.children:
            if c.alive and c.proc.poll() is not None:
                self._close_pipes(c)

    def _close_pipes(self, c: _Child) -> None:
        for stream in (c.proc.stdin, c.proc.stdout):
            if stream is not None and not stream.closed:
                if stream is c.proc.stdout and stream.fileno() in self._sel.get_map():
                    # drain what it wrote before exiting (its final report)
                    while not c.reader.eof:
                        for m in c.reader.feed():
                            self._on_event(c, m)
                    self._sel.unregister(stream.fileno())
                try:
                    stream.close()
                except OSError:
                    pass

    def _on_event(self, c: _Child, m: dict[str, Any]) -> None:
        c.last_seen = time.monotonic()
        event = m.get("event")
        if event == "listening":
            c.state, c.endpoints = "listening", dict(m.get("endpoints") or {})
            c.clock_facts = dict(m.get("clock") or {})
        elif event == "connected":
            c.state = "connected"
        elif event == "heartbeat":
            c.heartbeat = m
        elif event in ("ended", "stopped", "failed"):
            c.state, c.report = event, m.get("report")
            if event == "failed":
                c.error = m.get("error", "failed")

    def _dead(self, expected_stop: bool, running: bool = True) -> _Child | None:
        """The child that died, failed or (once ``running``: heartbeats flow) fell silent, if
        any; which one when several did: ``stopping_child``."""
        cause = stopping_child([c for c in self.children if c.spec.name not in self.deaths], expected_stop)
        if cause is not None:
            return cause
        now = time.monotonic()
        for c in self.children:
            why = overdue(c, self.plan.run, now) if running and c.alive and c.spec.name not in self.deaths else None
            if why:
                c.error = why
                c.proc.kill()
                c.proc.wait()
                self._close_pipes(c)
                return c
        return None

    def _failure(self, c: _Child) -> str:
        if c.alive:
            try:
                c.proc.wait(timeout=self.plan.run.kill_timeout_s)
            except subprocess.TimeoutExpired:
                pass
        code = c.proc.returncode
        lines = [f"partition {c.spec.name} died: {exit_description(code)}" + (f" ({c.error})" if c.error else "")]
        if c.heartbeat:
            st = c.heartbeat.get("stats") or {}
            lines.append("last heartbeat: " + ", ".join(f"{k}={st.get(k)}" for k in ("state", "loops", "frames_in", "frames_out")))
        last = tail(c.log_path, self.plan.run.log_tail_lines)
        if last:
            lines.append(f"last lines of {c.log_path}:")
            lines += [f"  | {ln}" for ln in last.splitlines()]
        return "\n".join(lines)

    def _phase(self, state: str, timeout: float) -> None:
        """Wait until every child reached ``state``."""
        deadline = time.monotonic() + timeout
        while any(c.state != state for c in self.children):
            self._pump(0.05)
            dead = self._dead(expected_stop=False, running=False)
            if dead:
                raise _Abort(self._failure(dead))
            if not all(c.alive for c in self.children):
                gone = next(c for c in self.children if not c.alive)
                raise _Abort(self._failure(gone))
            if self._signals:
                raise _Interrupted()
            if time.monotonic() > deadline:
                late = [c.spec.name for c in self.children if c.state != state]
                raise _Abort(f"partitions {', '.join(late)} did not report {state} within {timeout:.0f} s")

    # ---- the run ------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1

    def run(self, duration: float | None = None) -> RunResult:
        """Run the plan to its end (or ``duration`` seconds, or a stop signal)."""
        started = time.time()
        (self.run_dir / "logs").mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.run_dir / "plan.json", self.plan.model_dump_json(indent=2))
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        status, failure = "failed", None
        affinity = ExitStack()
        try:
            self._start()
            # partitions are started (and pinned): the supervisor stays off the spinning ones' CPUs
            affinity.enter_context(threads_kept_off({cpu for p in self.plan.partitions if p.wait == "spin"
                                                     for cpu in p.cpus}))
            self.echo(f"run {self.run_id}: {len(self.children)} partitions starting; logs in {self.run_dir / 'logs'}")
            self._phase("listening", self.plan.run.start_timeout_s)
            endpoints = {k: v for c in self.children for k, v in c.endpoints.items()}
            for c in self.children:
                self._send(c, cmd="connect", endpoints={str(cid): endpoints[str(cid)] for cid in c.spec.outputs})
            self._phase("connected", self.plan.run.start_timeout_s)
            self._sync_clocks()
            for c in self.children:
                c.state = "running"
                c.last_seen = time.monotonic()
                self._send(c, cmd="start")
            self.echo(f"run {self.run_id}: running")
            status = self._watch(duration)
            if self.deaths:
                failure = "\n".join(self.deaths.values())
        except _Interrupted:
            status = "stopped-hard"
            self.echo(f"run {self.run_id}: interrupted while starting; stopping now")
        except _Abort as e:
            failure = str(e)
        finally:
            affinity.close()
            self._hard_stop()
            self.hosts.close()
            for s, h in old.items():
                signal.signal(s, h)
            removed = cleanup_run(self.plan, self.run_id)
            if removed:
                self.echo(f"removed {len(removed)} shared memory segment(s) left by partitions: {', '.join(removed)}")
        result = RunResult(
            run_id=self.run_id, run_dir=self.run_dir, status=status if failure is None else "failed", failure=failure,
            partitions={c.spec.name: {"pid": c.proc.pid, "state": c.state, "exit": c.proc.returncode, "exit_description":
                                      exit_description(c.proc.returncode), "error": c.error, "report": c.report,
                                      "log": str(c.log_path)} for c in self.children},
            started_at=started, ended_at=time.time(), clocks=self.clocks,
        )
        write_text_atomic(self.run_dir / "run.json", json.dumps(result.to_json(), indent=2, default=str))
        return result

    # ---- clocks -------------------------------------------------------------------------

    def _pong(self, c: _Child) -> dict[str, Any]:
        """Read ``c`` until its clock-pong (other events are handled as usual)."""
        deadline = time.monotonic() + CLOCK_PONG_TIMEOUT_S
        while True:
            try:
                m = c.reader.next_message(max(0.0, deadline - time.monotonic()))
            except ControlError:
                m = None
            if m is None:
                raise _Abort(self._failure(c) if c.proc.poll() is not None else
                             f"partition {c.spec.name} did not answer a clock ping within {CLOCK_PONG_TIMEOUT_S:g} s")
            if m.get("event") == "clock-pong":
                return m
            self._on_event(c, m)

    def _estimate(self, c: _Child) -> ClockEstimate:
        exchanges = []
        for _ in range(self.plan.run.clock_pings):
            t0 = int(lib.omdp_host_now_ns())
            self._send(c, cmd="clock-ping")
            m = self._pong(c)
            t3 = int(lib.omdp_host_now_ns())
            exchanges.append(Exchange(t0, int(m["t1"]), int(m["t2"]), t3))
        try:
            return best_estimate(exchanges)
        except ValueError as e:
            raise _Abort(f"clock of host {c.spec.host} (via {c.spec.name}): {e}") from None

    def _sync_clocks(self) -> None:
        """Estimate every host's clock, correct each host's stamps to the reference's."""
        if self.plan.run.clock_pings == 0:
            return
        first: dict[str, _Child] = {}
        for c in self.children:
            first.setdefault(c.spec.host, c)
        reference = reference_host(self.plan)
        ptp_hosts, notes = set(), {}
        for host, c in first.items():
            if self.plan.hosts[host].ptp:
                if c.clock_facts.get("ptp_devices"):
                    ptp_hosts.add(host)
                else:
                    notes[host] = "marked ptp, but no /dev/ptp* device there: estimated instead"
        estimates = {h: self._estimate(c) for h, c in first.items()}
        if reference not in estimates:
            reference = next(iter(estimates))
        clocks: dict[str, HostClock] = relative_clocks(estimates, reference, ptp_hosts, self.plan.run.ptp_error_ns,
                                                       notes)
        for c in self.children:
            self._send(c, cmd="clock-set", correction_ns=clocks[c.spec.host].offset_ns)
        write_clocks(self.run_dir, reference, clocks)
        self.clocks = clocks_json(reference, clocks)
        if len(clocks) > 1:
            self.echo(f"run {self.run_id}: {describe(clocks, reference)}")

    def _watch(self, duration: float | None) -> str:
        run = self.plan.run
        t_end = time.monotonic() + duration if duration else None
        stop_at: float | None = None
        hard_at: float | None = None
        by_stop_after = False  # the run ends as planned when its stop_after groups ended
        while any(c.alive for c in self.children):
            self._pump(0.1)
            dead = self._dead(expected_stop=hard_at is not None)
            if dead and run.on_death == "stop":
                raise _Abort(self._failure(dead))
            if dead:
                self._go_on_without(dead)
                continue
            now = time.monotonic()
            finished = stop_at is None and self._groups_ended(run.stop_after)
            by_stop_after = by_stop_after or (finished and not self._signals)
            if stop_at is None and (self._signals >= 1 or (t_end is not None and now >= t_end) or finished):
                why = ("signal" if self._signals else f"duration {duration:g} s" if not finished
                       else f"{', '.join(run.stop_after)} ended")
                self.echo(f"run {self.run_id}: stopping ({why}): sources stop, queues drain")
                for c in self.children:
                    self._send(c, cmd="stop")
                stop_at = now
            if stop_at is not None and hard_at is None and (self._signals >= 2 or now - stop_at > run.drain_timeout_s):
                self.echo(f"run {self.run_id}: stopping now (" +
                          ("second signal" if self._signals >= 2 else f"not drained in {run.drain_timeout_s:g} s") + ")")
                for c in self.children:
                    self._send(c, cmd="stop-now")
                hard_at = now
            if hard_at is not None and now - hard_at > run.kill_timeout_s:
                self._kill_all()
        if hard_at is not None:
            return "stopped-hard"
        return "stopped" if stop_at is not None and not by_stop_after else "ended"

    def _go_on_without(self, dead: _Child) -> None:
        """``run.on_death = "continue"``: record ``dead``'s failure and tell every other
        partition which of its channels led to or from it, so that they drain to their end."""
        self.deaths[dead.spec.name] = self._failure(dead)
        self.echo(f"run {self.run_id}: partition {dead.spec.name} died ({exit_description(dead.proc.returncode)}); "
                  "the others go on without it (run.on_death = continue)")
        for c in self.children:
            if c is dead:
                continue
            inputs = [cid for cid in c.spec.inputs if self.plan.channels[cid].upstream == dead.spec.name]
            outputs = [cid for cid in c.spec.outputs if self.plan.channels[cid].downstream == dead.spec.name]
            if inputs or outputs:
                self._send(c, cmd="peers-gone", partition=dead.spec.name, inputs=inputs, outputs=outputs)

    def _groups_ended(self, groups: list[str]) -> bool:
        """True when ``groups`` is not empty and every partition of those groups ended
        normally (or died, when the run goes on without the dead)."""
        mine = [c for c in self.children if c.spec.group in groups]
        return bool(mine) and all(c.proc.returncode == EXIT_ENDED or c.spec.name in self.deaths for c in mine)

    def _hard_stop(self) -> None:
        """Stop every child still alive: stop-now, then SIGKILL after kill_timeout_s."""
        alive = [c for c in self.children if c.alive]
        if not alive:
            return
        for c in alive:
            self._send(c, cmd="stop-now")
        deadline = time.monotonic() + self.plan.run.kill_timeout_s
        while any(c.alive for c in self.children) and time.monotonic() < deadline:
            self._pump(0.05)
        self._kill_all()

    def _kill_all(self) -> None:
        for c in self.children:
            if c.alive:
                c.error = c.error or "killed after the stop timeout"
                try:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                c.proc.wait()
                self._close_pipes(c)
