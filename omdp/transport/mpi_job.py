"""Starting an MPI job whose ranks use the ``mpi`` transport: the ``mpiexec`` command and its
environment, one place for the benchmark, the tests and the runtime.

Open MPI is started with ``--with-ft ulfm`` so a rank that dies is reported to the others
as MPI_ERR_PROC_FAILED (the transport's PeerDeadError) instead of the whole job being torn
down; on one host the shared-memory and self paths only (``OMPI_MCA_btl=self,sm``: start-up
in about 0.1 s instead of a second probing networks); as root, the two variables Open MPI
asks for. A variable the caller already set is kept. Across namespace hosts
(``omdp.runtime.mpi_agent``) the job adds Open MPI's TCP path between hosts
(``self,sm,tcp``, with Open MPI's TCP progress thread) and names each rank's host.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from omdp.transport.mpi import mpi_unavailable

JOB_ENV = {"OMPI_MCA_btl": "self,sm"}
HOSTS_JOB_ENV = {"OMPI_MCA_btl": "self,sm,tcp", "OMPI_MCA_btl_tcp_progress_thread": "1"}
"""Across hosts: TCP between them, and Open MPI's own TCP progress thread. Without it a
rank that greeted its sender and then waited for the run to start (no MPI call) never
finished opening the connection, and the sender's wait for the hello timed out."""
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this Python (the Open MPI wheel's), else the one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def mpi_job_unavailable() -> str | None:
    """Why an MPI job cannot be started here, or None."""
    why = mpi_unavailable()
    if why:
        return why
    if find_mpiexec() is None:
        return "no mpiexec beside this Python or on PATH: pip install '.[mpi]'"
    return None


def job_env(base: Mapping[str, str] | None = None, across_hosts: bool = False) -> dict[str, str]:
    """``base`` (default: this process's environment) with the job's variables added."""
    env = dict(os.environ if base is None else base)
    extra = dict(HOSTS_JOB_ENV if across_hosts else JOB_ENV, **(ROOT_ENV if os.geteuid() == 0 else {}))
    for k, v in extra.items():
        env.setdefault(k, v)
    return env


def mpiexec_argv(ranks: Sequence[Sequence[str]], hosts: Sequence[str] | None = None,
                 agent: str | None = None) -> list[str]:
    """One job, rank i running ``ranks[i]`` (MPMD: ``-n 1 cmd0 : -n 1 cmd1 ...``); with
    ``hosts``, rank i on host address ``hosts[i]``, reached through the launch ``agent``."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise FileNotFoundError(mpi_job_unavailable())
    # ranks pin themselves (a run's partitions may share a CPU): no binding, any number of ranks per core
    argv = [mpiexec, "--with-ft", "ulfm", "--bind-to", "none", "--map-by", ":OVERSUBSCRIBE"]
    if agent is not None:
        argv += ["--prtemca", "plm_ssh_agent", agent]
    for i, cmd in enumerate(ranks):
        if i:
            argv.append(":")
        argv += ["-n", "1", *(["--host", hosts[i]] if hosts else []), *cmd]
    return argv
