"""Helpers of the tests that start `omdp` commands as a shell script's background job would
(SIGINT ignored from the start, as `cmd &` leaves it) and stop them with a signal."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
"""`omdp` from the installed package (-P: not from the test's working directory)."""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_background_job(args: list[str], **popen: object) -> subprocess.Popen:
    """`omdp ARGS` with SIGINT ignored, text pipes for stdout and stderr."""
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint, **popen)  # type: ignore[arg-type]


def stop_job(proc: subprocess.Popen, stop: int, what: str) -> tuple[str, str]:
    """Send ``stop`` and wait up to 30 s (communicate() drains both pipes, so a chatty child
    cannot block on a full pipe); fail the test with the stderr tail if it keeps running."""
    proc.send_signal(stop)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"{what} still running 30 s after {signal.Signals(stop).name}; its stderr:\n{err[-3000:]}")
