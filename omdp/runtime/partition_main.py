"""A partition process: ``python -m omdp.runtime.partition_main --plan plan.json --partition NAME ...``.

Started by the supervisor (``omdp.runtime.supervisor``), one per partition of the plan.
It pins itself to the partition's CPUs, builds the partition (operators from the plan's
registry), opens its receivers and reports their endpoints, opens its senders when told
where the receivers are, and on ``start`` runs the C loop in its main thread. A control
thread meanwhile reports heartbeats and turns commands and signals into stop requests
(SIGTERM/SIGINT once: sources stop and queues drain; twice: stop now). See
``omdp.runtime.control`` for the protocol.
"""
from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from omdp.clock import check_stamp_clock, stamp_clock_info, use_stamp_clock
from omdp.metrics.stats_segment import StatsSegmentError
from omdp.native import lib
from omdp.plan import Plan
from omdp.registry import load_registry
from omdp.runtime.channels import ChannelEnd, open_input, open_output
from omdp.runtime.control import EXIT_ENDED, EXIT_FAILED, EXIT_STOPPED, ControlError, LineReader, LineWriter
from omdp.runtime.live_stats import LiveOperatorStats
from omdp.runtime.machine import LOOP_RT_PRIORITY, enter_realtime, keep_helpers_off
from omdp.runtime.partition import Partition, PartitionError

log = logging.getLogger("omdp.partition")


class _SetupInterrupted(Exception):
    """A stop signal arrived before the loop started."""


def host_clock_facts() -> dict[str, Any]:
    """What the supervisor needs to know of this host's clock: its PTP devices."""
    return {"ptp_devices": sorted(str(p) for p in Path("/dev").glob("ptp*"))}


class PartitionProcess:
    """Everything one partition process holds, in the order it acquires it."""

    def __init__(self, plan: Plan, name: str, run_id: str, run_dir: Path | None) -> None:
        self.plan = plan
        self.name = name
        self.run_id = run_id
        self.run_dir = run_dir
        self._started_on = os.sched_getaffinity(0)  # before the pinning: what helpers may use
        self.spec = plan.partition(name)
        self.out = LineWriter(sys.stdout.buffer)
        self.cmds = LineReader(sys.stdin.fileno())
        self.partition: Partition | None = None
        self.ends: list[ChannelEnd] = []
        self.running = False
        self.signals = 0
        self.live: LiveOperatorStats | None = None
        self._done = threading.Event()

    # ---- setup ------------------------------------------------------------------------

    def _spinning_cpus(self) -> set[int]:
        """The CPUs of this host where a partition's loop spins (``wait = "spin"``)."""
        return {c for p in self.plan.partitions if p.wait == "spin" and p.host == self.spec.host for c in p.cpus}

    def _keep_helpers_off_spinning_cpus(self) -> None:
        """Keep this process's helper threads (the drain thread writing sample chunks, the
        control thread's heartbeats, threads the libraries started) off the CPUs where loops
        spin (``omdp.runtime.machine.keep_helpers_off``). Runs when the loop starts, after
        the operators and the control thread have started theirs."""
        keep_helpers_off(self._spinning_cpus(), self._started_on)

    def _enter_realtime(self) -> None:
        """A ``realtime`` partition's loop thread takes SCHED_FIFO (docs/topology.md
        "Real-time loops"); refused, the loop runs as an ordinary task and says why."""
        assert self.partition is not None
        why = enter_realtime()
        if why is None:
            self.partition.loop_policy = "fifo"
            log.info("loop runs SCHED_FIFO %d", LOOP_RT_PRIORITY)
        else:
            self.partition.loop_realtime_refused = why
            log.warning("realtime refused: %s; the loop runs as an ordinary task", why)

    def setup(self) -> None:
        """Pin, build, open receivers, report, open senders on ``connect``, wait for ``start``."""
        if self.spec.cpus:
            os.sched_setaffinity(0, self.spec.cpus)
            log.info("pinned to CPUs %s", self.spec.cpus)
        self.stamp_clock = use_stamp_clock(self.plan.run.clock)
        log.info("stamps on %s (asked: %s)", self.stamp_clock, self.plan.run.clock)
        self.partition = Partition(self.plan, self.name, load_registry(self.plan.registry or ""), self.run_dir)
        host = self.plan.hosts[self.spec.host]
        endpoints = {}
        for cid in self.spec.inputs:
            end = open_input(self.plan.channels[cid], self.run_id, host)
            self.ends.append(end)
            self.partition.set_input(cid, end.ops, end.ctx)
            endpoints[str(cid)] = end.endpoint
        self.out.send(event="listening", endpoints=endpoints, clock=host_clock_facts())
        msg = self.cmds.wait_for("cmd", {"connect", "stop", "stop-now"}, self.plan.run.start_timeout_s)
        if msg["cmd"] != "connect":
            raise _SetupInterrupted(msg["cmd"])
        for cid in self.spec.outputs:
            end = open_output(self.plan.channels[cid], self.run_id, msg["endpoints"][str(cid)],
                              self.plan.run.start_timeout_s, host)
            self.ends.append(end)
            self.partition.set_output(cid, end.ops, end.ctx)
        self.out.send(event="connected")
        while True:
            msg = self.cmds.wait_for("cmd", {"start", "stop", "stop-now", "clock-ping", "clock-set"},
                                     self.plan.run.start_timeout_s)
            if msg["cmd"] == "clock-ping":
                t1 = int(lib.omdp_host_now_ns())
                self.out.send(event="clock-pong", t1=t1, t2=int(lib.omdp_host_now_ns()))
            elif msg["cmd"] == "clock-set":
                lib.omdp_clock_set_correction(int(msg["correction_ns"]))
                log.info("clock corrected by %+d ns (this host's offset from the reference host)",
                         int(msg["correction_ns"]))
            elif msg["cmd"] == "start":
                return
            else:
                raise _SetupInterrupted(msg["cmd"])

    # ---- running ------------------------------------------------------------------------

    def on_signal(self, signum: int, frame: Any) -> None:
        """Before the loop: abort setup. While it runs, the control thread acts on the
        wakeup descriptor (this handler only runs once the loop returned)."""
        if not self.running:
            raise _SetupInterrupted(signal.Signals(signum).name)

    def _stop_on_signal(self) -> None:
        self.signals += 1
        assert self.partition is not None
        self.partition.request_stop(hard=self.signals >= 2)
        log.info("signal %d: %s", self.signals, "stop now" if self.signals >= 2 else "stopping sources")

    def control(self, wakeup_fd: int) -> None:
        """Control thread: heartbeats, commands on stdin, signals from the wakeup pipe."""
        assert self.partition is not None
        sel = selectors.DefaultSelector()
        sel.register(self.cmds.fd, selectors.EVENT_READ, "cmd")
        sel.register(wakeup_fd, selectors.EVENT_READ, "signal")
        for m in self.cmds.take_unread():  # a stop that came with start
            if m.get("cmd") in ("stop", "stop-now"):
                self.partition.request_stop(hard=m["cmd"] == "stop-now")
        period = self.plan.run.heartbeat_s
        next_beat = time.monotonic()
        orphaned_at: float | None = None
        while not self._done.is_set():
            now = time.monotonic()
            if now >= next_beat:
                check_stamp_clock()  # drift of the stamp clock against CLOCK_REALTIME, reported at the end
                try:
                    self.out.send(event="heartbeat", stats=self.partition.stats(), channels=self.partition.channel_stats())
                except ControlError:
                    orphaned_at = orphaned_at or now
                if self.live is not None:
                    try:
                        self.live.publish()
                    except StatsSegmentError as e:
                        log.warning("live operator figures stopped: %s", e)
                        self.live = None
                next_beat = now + period
            if orphaned_at is not None and now - orphaned_at > self.plan.run.kill_timeout_s:
                log.error("supervisor gone and the loop did not stop; exiting")
                os._exit(EXIT_STOPPED)
            for key, _ in sel.select(timeout=max(0.0, min(next_beat - now, 0.2))):
                if key.data == "signal":
                    for _ in os.read(wakeup_fd, 64):
                        self._stop_on_signal()
                    continue
                try:
                    msgs = self.cmds.feed()
                except ControlError as e:
                    log.error("%s", e)
                    msgs = []
                if self.cmds.eof and orphaned_at is None:
                    log.error("supervisor gone (end of stdin): stopping now")
                    self.partition.request_stop(hard=True)
                    orphaned_at = now
                    sel.unregister(self.cmds.fd)
                for m in msgs:
                    if m.get("cmd") in ("stop", "stop-now"):
                        log.info("command %s", m["cmd"])
                        self.partition.request_stop(hard=m["cmd"] == "stop-now")
                    elif m.get("cmd") == "peers-gone":
                        log.info("partition %s died: its channels here end (inputs %s, outputs %s)",
                                 m.get("partition"), m.get("inputs"), m.get("outputs"))
                        self.partition.peers_gone([int(c) for c in m.get("inputs") or []],
                                                  [int(c) for c in m.get("outputs") or []])

    def run(self) -> int:
        """Run the loop with the control thread beside it; report how it ended."""
        assert self.partition is not None
        r, w = os.pipe()
        os.set_blocking(w, False)
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self.running = True
        self.live = LiveOperatorStats.attach(self.run_id, self.partition, self.name,
                                             self.spec.cpus[0] if self.spec.cpus else -1)
        thread = threading.Thread(target=self.control, args=(r,), name="control", daemon=True)
        thread.start()
        self._keep_helpers_off_spinning_cpus()  # the operators' threads and the control thread
        if self.spec.realtime:
            self._enter_realtime()
        log.info("running")
        try:
            status = self.partition.run()
        except PartitionError as e:
            links = "; ".join(f"channel {end.name}: {why}" for end in self.ends if (why := end.link_error()))
            error = f"{e} ({links})" if links else str(e)
            log.error("%s", error)
            if e.__cause__ is not None:
                log.error("%s", "".join(traceback.format_exception(e.__cause__)))
            self._finish(thread, old, r, w)
            self._send_final("failed", error=error)
            return EXIT_FAILED
        self._finish(thread, old, r, w)
        log.info("loop %s", status)
        self._send_final(status)
        return EXIT_ENDED if status == "ended" else EXIT_STOPPED

    def _finish(self, thread: threading.Thread, old_fd: int, r: int, w: int) -> None:
        self._done.set()
        thread.join(timeout=2.0)
        live, self.live = self.live, None
        if live is not None:
            try:
                live.close()
            except StatsSegmentError as e:
                log.warning("closing the live operator figures: %s", e)
        signal.set_wakeup_fd(old_fd)
        os.close(r)
        os.close(w)

    def _send_final(self, event: str, **extra: Any) -> None:
        assert self.partition is not None
        check_stamp_clock()
        report = {"stats": self.partition.stats(), "channels": self.partition.channel_stats(),
                  "operators": self.partition.operator_report(), "stamp_clock": stamp_clock_info()}
        try:
            self.out.send(event=event, report=report, **extra)
        except ControlError:
            log.error("supervisor gone; final report: %s", report)

    def close(self) -> None:
        """Close channel ends (senders last after the loop ended) and the partition."""
        for end in reversed(self.ends):
            try:
                end.close()
            except Exception as e:  # noqa: BLE001 - closing the rest matters more
                log.error("closing %s: %s", end.name, e)
        self.ends.clear()
        if self.partition is not None:
            self.partition.close()
            self.partition = None


def main(argv: list[str] | None = None) -> int:
    """Entry point of a partition process; returns its exit status."""
    ap = argparse.ArgumentParser(prog="omdp-partition", description=__doc__.splitlines()[0])
    ap.add_argument("--plan", required=True, type=Path, help="plan.json written by the supervisor")
    ap.add_argument("--partition", required=True, help="name of the partition to run")
    ap.add_argument("--run-id", required=True, help="the run's id (names shared memory)")
    ap.add_argument("--run-dir", type=Path, default=None, help="the run's directory")
    ap.add_argument("--control-dir", type=Path, default=None,
                    help="a rank of the run's MPI job: control FIFOs, pid and exit status here (mpi_rank)")
    ap.add_argument("--log", type=Path, default=None, help="with --control-dir: the partition's log")
    args = ap.parse_args(argv)
    if args.control_dir:
        from omdp.runtime import mpi_rank

        mpi_rank.become_rank(args.control_dir, args.partition, args.log)
        code = _main(args)
        mpi_rank.write_status(args.control_dir, args.partition, code)
        if code != EXIT_FAILED:  # a failed rank's peers may be gone: MPI_Finalize could wait for them
            from omdp.transport.mpi import mpi_finalize

            mpi_finalize()
        return code
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format=f"%(asctime)s {args.partition} %(levelname)s %(message)s")
    proc: PartitionProcess | None = None
    try:
        if lib.omdp_clock_env_invalid():
            raise ValueError(f"OMDP_CLOCK_OFFSET_NS={os.environ.get('OMDP_CLOCK_OFFSET_NS')!r} is not a whole "
                             "number of nanoseconds")
        plan = Plan.model_validate_json(args.plan.read_text())
        if args.control_dir:
            from omdp.runtime.mpi_rank import start_mpi

            start_mpi(plan, args.partition)
        proc = PartitionProcess(plan, args.partition, args.run_id, args.run_dir)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, proc.on_signal)
        proc.setup()
        return proc.run()
    except _SetupInterrupted as e:
        log.info("stopped before start (%s)", e)
        return EXIT_STOPPED
    except Exception as e:  # noqa: BLE001 - every failure is reported to the supervisor
        log.error("setup failed: %s\n%s", e, traceback.format_exc())
        if proc is not None:
            try:
                proc.out.send(event="failed", error=f"{type(e).__name__}: {e}")
            except ControlError:
                pass
        return EXIT_FAILED
    finally:
        if proc is not None:
            proc.close()


if __name__ == "__main__":
    sys.exit(main())
