"""How a partition's command reaches its host: as is on this machine, through ``ip netns
exec`` for a network-namespace host, and for an isolated one (the default) through
``nsenter`` into the namespaces its host keeper holds (``omdp.runtime.host_keeper``: a
mount namespace with a private /dev/shm and a PID namespace, shared by all partitions of
that host, so vega-shm works within a host and nothing but the network joins hosts).

``HostLaunchers`` starts the keepers a plan needs, wraps each partition's command, gives
each host's partitions its ``env``, and ends the keepers (and so anything left in their
hosts) when the run is over.
"""
from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from omdp.plan import Plan, PlanHost

KEEPER_START_TIMEOUT_S = 10.0


class HostStartError(RuntimeError):
    """A namespace host could not be made: the message names the host and the cause."""


@dataclass
class _Keeper:
    host: str
    proc: subprocess.Popen
    pid: int
    log: Path


def _child_pid(pid: int) -> int | None:
    """The one child of ``pid`` (unshare --fork's child: the keeper), or None."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    if children:
        return int(children[0])
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            for line in status.read_text().splitlines():
                if line.startswith("PPid:") and int(line.split()[1]) == pid:
                    return int(status.parent.name)
        except (OSError, ValueError):
            continue
    return None


def keeper_argv(host: PlanHost, python: str = sys.executable) -> list[str]:
    """The command that makes an isolated host's namespaces and runs its keeper."""
    assert host.netns
    return ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--pid", "--fork", "--mount-proc",
            "--propagation", "private", python, "-P", "-m", "omdp.runtime.host_keeper"]


class HostLaunchers:
    """Keepers of the plan's isolated hosts, and each partition's command line."""

    def __init__(self, plan: Plan, log_dir: Path, env: Mapping[str, str]) -> None:
        self.plan = plan
        self.log_dir = log_dir
        self.env = dict(env)
        self.keepers: dict[str, _Keeper] = {}

    def start(self) -> None:
        """Start a keeper for every isolated namespace host a partition runs on."""
        for name in dict.fromkeys(p.host for p in self.plan.partitions):
            host = self.plan.hosts[name]
            if host.netns and host.isolated:
                self.keepers[name] = self._start_keeper(host)

    def _start_keeper(self, host: PlanHost) -> _Keeper:
        for tool in ("ip", "unshare", "nsenter"):
            if shutil.which(tool) is None:
                raise HostStartError(f"host {host.name}: {tool!r} is not installed (iproute2 / util-linux)")
        log = self.log_dir / f"host-{host.name.replace('[', '.').replace(']', '')}.log"
        with log.open("ab") as err:
            proc = subprocess.Popen(keeper_argv(host), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    env=self.env, start_new_session=True, close_fds=True)
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + KEEPER_START_TIMEOUT_S
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            if sel.select(0.1):
                chunk = os.read(proc.stdout.fileno(), 64)
                if not chunk:
                    break
                line += chunk
        sel.close()
        keeper_pid = _child_pid(proc.pid) if line.strip() == b"ready" else None
        if keeper_pid is None:
            self._end(proc)
            detail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise HostStartError(f"host {host.name}: its namespaces (netns {host.netns}, private /dev/shm, PID "
                                 f"namespace) could not be made: {' | '.join(detail) or 'no ready line'}")
        return _Keeper(host.name, proc, keeper_pid, log)

    def argv(self, host_name: str, cmd: list[str]) -> list[str]:
        """``cmd`` as it must be started to run on host ``host_name``."""
        host = self.plan.hosts[host_name]
        if host_name in self.keepers:
            k = self.keepers[host_name]
            return ["nsenter", "--target", str(k.pid), "--mount", "--pid", "--net", f"--wd={os.getcwd()}", "--", *cmd]
        if host.netns:
            return ["ip", "netns", "exec", host.netns, *cmd]
        return cmd

    def env_for(self, host_name: str) -> dict[str, str]:
        """The environment of a partition on ``host_name``: the run's, plus the host's own."""
        return {**self.env, **self.plan.hosts[host_name].env}

    def describe(self) -> dict[str, dict[str, object]]:
        """Per isolated host: keeper pid (this machine's view) and log."""
        return {name: {"keeper_pid": k.pid, "netns": self.plan.hosts[name].netns, "log": str(k.log)}
                for name, k in self.keepers.items()}

    @staticmethod
    def _end(proc: subprocess.Popen) -> None:
        if proc.stdin is not None and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def close(self) -> None:
        """End every keeper: its namespaces go, and with them any process left in them."""
        for k in self.keepers.values():
            self._end(k.proc)
        self.keepers.clear()
