"""The launch agent of an MPI job across namespace hosts: Open MPI's launcher calls it where
it would call ``ssh`` (``plm_ssh_agent``), as ``mpi_agent MAP [OPTIONS] ADDRESS COMMAND...``.

``MAP`` is the JSON file the supervisor wrote (``hosts_map``): each host's address, network
namespace and environment. The agent runs ``COMMAND`` (the launcher's daemon, a shell
command line) in that host's network namespace and in a UTS namespace of its own whose host
name is the namespace's: Open MPI tells nodes apart by host name, and namespace hosts on one
machine would otherwise all share this machine's (two ranks of one host were then counted
on the wrong node and the job failed in MPI_Init). The job's first host is entered the same
way by ``host_prefix`` before ``mpiexec`` starts there.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from omdp.plan import PlanHost

_UTS_SHELL = 'hostname "$1" && shift && exec "$@"'


def hosts_map(hosts: list[PlanHost]) -> dict[str, dict[str, object]]:
    """The agent's map: address -> the host's network namespace and its own environment.
    ``hosts[0]`` is the job's first host, whose environment the launcher (and so the agent)
    runs with: what only it sets is unset on the others."""
    first = hosts[0].env
    return {h.address: {"netns": h.netns, "env": dict(h.env), "unset": sorted(set(first) - set(h.env))}
            for h in hosts}


def host_prefix(netns: str) -> list[str]:
    """The command prefix that runs a command inside namespace host ``netns`` under its own host name."""
    return ["ip", "netns", "exec", netns, "unshare", "--uts", "sh", "-c", _UTS_SHELL, "sh", netns]


def agent_argv(map_path: Path) -> str:
    """The ``plm_ssh_agent`` value: this module run by this Python (the launcher splits it at spaces)."""
    return f"{sys.executable} -P -m omdp.runtime.mpi_agent {map_path}"


def main(argv: list[str]) -> int:
    """Run the launcher's command on the named host (exec: the agent becomes the command)."""
    if len(argv) < 3:
        print("mpi_agent: usage: mpi_agent MAP [OPTIONS] ADDRESS COMMAND...", file=sys.stderr)
        return 2
    hosts = json.loads(Path(argv[0]).read_text())
    rest = argv[1:]
    while rest and rest[0].startswith("-"):  # ssh options the launcher may add
        rest = rest[1:]
    if len(rest) < 2 or rest[0] not in hosts:
        print(f"mpi_agent: host {rest[0] if rest else ''!r} is not one of the run's namespace hosts "
              f"({', '.join(hosts)})", file=sys.stderr)
        return 2
    host = hosts[rest[0]]
    env = {k: v for k, v in os.environ.items() if k not in host["unset"]} | host["env"]
    cmd = [*host_prefix(host["netns"]), "sh", "-c", " ".join(rest[1:])]
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"mpi_agent: host {rest[0]}: {cmd[0]}: {e.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
