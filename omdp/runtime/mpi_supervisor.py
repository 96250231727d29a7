"""Running a plan whose channels say ``transport = "mpi"``: every partition a rank of one
``mpiexec`` job (docs/mpi.md "In a run").

MPI ranks must start together under one launcher, so this supervisor differs from the
plain one (``omdp.runtime.supervisor``) only in how partitions start and end: one
``mpiexec --with-ft ulfm`` job, rank i running partition i of the plan (each pins itself
to its CPUs as usual; the launcher binds nothing). The control protocol is unchanged but
travels over two FIFOs per partition in the run's ``control/`` folder instead of the
child's stdin and stdout (which ``mpiexec`` keeps for itself), and each partition writes
its own log. A rank is not this process's child, so each partition writes its pid when it
starts and its exit status when it ends (``<name>.pid``, ``<name>.rc``); a rank gone
without a status was killed (reported as SIGKILL). When the run is over the job is
reaped (killed after ``kill_timeout_s``), and the files in /dev/shm its ranks mapped when
MPI started (each lists its own) are removed once nobody maps them (``mpi_files.json``
in the run directory names them).

Across namespace hosts (every partition on one, none isolated) the job starts in the first
partition's host and reaches the others through ``omdp.runtime.mpi_agent``, each host under
its own host name; ranks on different hosts talk over Open MPI's TCP path (docs/mpi.md
"Across namespace hosts").
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from omdp.plan import Plan, PlanPartition
from omdp.runtime.control import LineReader, LineWriter
from omdp.runtime.mpi_agent import agent_argv, host_prefix, hosts_map
from omdp.runtime.rundir import log_name
from omdp.runtime.supervisor import RunResult, Supervisor, _Abort, _Child
from omdp.transport.mpi_job import job_env, mpiexec_argv
from omdp.transport.shm_names import SHM_DIR

PID_WAIT_S = 30.0
"""How long the ranks have to start and write their pids."""


def plan_uses_mpi(plan: Plan) -> bool:
    """True when any channel of ``plan`` is an ``mpi`` channel."""
    return any(c.spec.transport == "mpi" for c in plan.channels)


def plan_across_hosts(plan: Plan) -> bool:
    """True when the plan's partitions run on namespace hosts (the job then spans them)."""
    return any(plan.hosts[p.host].netns for p in plan.partitions)


def mpi_plan_problems(plan: Plan) -> list[tuple[str, str]]:
    """Why ``plan`` cannot run as one MPI job: (field, reason) pairs (whether MPI is here at
    all is ``check_machine``'s, through ``transport_unavailable``)."""
    if not plan_across_hosts(plan):
        return []
    problems = []
    here = sorted({p.name for p in plan.partitions if not plan.hosts[p.host].netns})
    if here:
        problems.append(("partitions.host", f"an MPI run across namespace hosts places every partition on one; "
                                            f"{', '.join(here)} runs on this machine"))
    for name in sorted({p.host for p in plan.partitions if plan.hosts[p.host].netns}):
        if plan.hosts[name].isolated:
            problems.append((f"hosts.{name}.isolated", "an MPI rank cannot run on an isolated namespace host (its "
                                                       "PID namespace hides the rank from the supervisor): set "
                                                       "isolated = false"))
    return problems


class RankProcess:
    """A partition that is a rank of the job, with the part of ``subprocess.Popen`` the
    supervisor uses (pid, returncode, poll, wait, kill, stdin, stdout)."""

    def __init__(self, name: str, control: Path) -> None:
        self.name = name
        self.control = control
        self.returncode: int | None = None
        self.pid = int((control / f"{name}.pid").read_text())
        # read end first (non-blocking: no writer needed), held read-write so it never reads EOF
        # before the rank opens it; the rank opens its command FIFO for reading: we hold it read-write too
        out_fd = os.open(control / f"{name}.out", os.O_RDWR | os.O_NONBLOCK)
        in_fd = os.open(control / f"{name}.in", os.O_RDWR)
        self.stdout = os.fdopen(out_fd, "rb", buffering=0)
        self.stdin = os.fdopen(in_fd, "wb", buffering=0)

    def poll(self) -> int | None:
        """The exit status the rank wrote, -SIGKILL when it is gone without one, else None."""
        if self.returncode is not None:
            return self.returncode
        alive = _alive(self.pid)  # first: a status written just before the end is still read below
        rc = self.control / f"{self.name}.rc"
        if rc.exists():
            self.returncode = int(rc.read_text())
        elif not alive:
            self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the rank's end (``subprocess.TimeoutExpired`` after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.name, timeout or 0)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        """SIGKILL the rank."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class MpiSupervisor(Supervisor):
    """The supervisor for plans with ``mpi`` channels: partitions are the ranks of one job."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.job: subprocess.Popen | None = None
        self.control = self.run_dir / "control"

    def rank_argv(self, p: PlanPartition) -> list[str]:
        """Partition ``p``'s command as a rank, told where its FIFOs and log are (the job
        itself enters the rank's host)."""
        return [*self.partition_cmd(p), "--control-dir", str(self.control),
                "--log", str(self.run_dir / "logs" / log_name(p.name))]

    def _job_argv(self) -> list[str]:
        """The job's command: on this machine, or from the first partition's namespace host."""
        ranks = [self.rank_argv(p) for p in self.plan.partitions]
        if not plan_across_hosts(self.plan):
            return mpiexec_argv(ranks)
        hosts = [self.plan.hosts[p.host] for p in self.plan.partitions]
        host_map = self.control / "hosts.json"
        host_map.write_text(json.dumps(hosts_map(list({h.name: h for h in hosts}.values())), indent=1))
        return [*host_prefix(hosts[0].netns), *mpiexec_argv(ranks, [h.address for h in hosts], agent_argv(host_map))]

    def _start(self) -> None:
        self.control.mkdir(parents=True, exist_ok=True)
        for p in self.plan.partitions:
            for suffix in (".in", ".out"):
                os.mkfifo(self.control / f"{p.name}{suffix}", 0o600)
        env = job_env(self.hosts.env_for(self.plan.partitions[0].host), plan_across_hosts(self.plan))
        with (self.run_dir / "logs" / "mpiexec.log").open("ab") as log:
            self.job = subprocess.Popen(self._job_argv(),
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                        start_new_session=True, close_fds=True)
        deadline = time.monotonic() + PID_WAIT_S
        for p in self.plan.partitions:
            while not (self.control / f"{p.name}.pid").exists():
                if self.job.poll() is not None or time.monotonic() > deadline:
                    how = "still starting" if self.job.returncode is None else f"exited {self.job.returncode}"
                    raise _Abort(f"the MPI job did not start partition {p.name} (mpiexec {how}; "
                                 f"see {self.run_dir / 'logs' / 'mpiexec.log'})")
                time.sleep(0.01)
            proc = RankProcess(p.name, self.control)
            child = _Child(p, proc, self.run_dir / "logs" / log_name(p.name),  # type: ignore[arg-type]
                           LineReader(proc.stdout.fileno()), LineWriter(proc.stdin))
            self.children.append(child)
            self._sel.register(proc.stdout.fileno(), selectors.EVENT_READ, child)
        (self.run_dir / "processes.json").write_text(json.dumps({
            c.spec.name: {"pid": c.proc.pid, "rank": i, "host": c.spec.host, "cpus": c.spec.cpus, "log": str(c.log_path)}
            for i, c in enumerate(self.children)} | {"mpiexec": {"pid": self.job.pid}}, indent=2))

    def _close_pipes(self, c: _Child) -> None:
        # a FIFO held read-write never reads EOF: take what the rank wrote, then close
        if c.proc.stdout is not None and not c.proc.stdout.closed and c.proc.stdout.fileno() in self._sel.get_map():
            try:
                for m in c.reader.feed():
                    self._on_event(c, m)
            except Exception:  # noqa: BLE001 - nothing more to read
                pass
            self._sel.unregister(c.proc.stdout.fileno())
        for stream in (c.proc.stdin, c.proc.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass

    def _kill_all(self) -> None:
        # ranks are the launcher's children, not ours: SIGKILL each by pid, then the job
        for c in self.children:
            if c.alive:
                c.error = c.error or "killed after the stop timeout"
                c.proc.kill()
                try:
                    c.proc.wait(timeout=self.plan.run.kill_timeout_s)
                except subprocess.TimeoutExpired:
                    pass
                self._close_pipes(c)
        self._end_job(0.0)

    def _end_job(self, grace: float) -> None:
        """Reap the job: wait ``grace`` seconds, then kill its process group and every rank
        still there (by pid: whichever group the launcher gave them), and wait until they are gone."""
        if self.job is None:
            return
        try:
            self.job.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.job.wait()
        ranks = [c.proc.pid for c in self.children]
        for pid in ranks:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + self.plan.run.kill_timeout_s
        while any(_alive(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.01)

    def run(self, duration: float | None = None) -> RunResult:
        """The plain run, then the job reaped, the FIFOs and the job's MPI files removed."""
        try:
            return super().run(duration)
        finally:
            self._end_job(self.plan.run.kill_timeout_s)
            made = sorted({ln for f in self.control.glob("*.files") for ln in f.read_text().splitlines() if ln})
            (self.run_dir / "mpi_files.json").write_text(json.dumps(made, indent=1))
            for f in self.control.glob("*"):
                f.unlink(missing_ok=True)
            if self.control.is_dir():
                self.control.rmdir()
            removed = remove_job_files(made)
            if removed:
                self.echo(f"removed {len(removed)} MPI file(s) the job left in {SHM_DIR}: {', '.join(removed)}")


def remove_job_files(paths: list[str]) -> list[str]:
    """Remove the job's MPI files (``paths``, as its ranks listed them) that no process maps."""
    from omdp.transport.mpi_shm import classify, unlink

    gone = []
    for p in map(Path, paths):
        if p.parent == SHM_DIR and p.exists() and classify(p).owner != "alive" and unlink(p):
            gone.append(p.name)
    return gone
