"""The program of a sender process: ``python -m ops.replay.sender_program PLAN``.

PLAN is a pickled ``SenderPlan`` the service wrote into its private (0700) temporary
directory. A program of its own rather than multiprocessing, so the caller's ``__main__`` is
never re-imported, and a module apart from ``ops.replay.sender`` so the plan's classes
unpickle as the same classes the sender checks against.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
from pathlib import Path

from omdp.native import lib
from ops.replay.sender import SenderPlan, run_sender


def sender_main(plan: SenderPlan) -> int:
    """Run one sender and return the C loop's result. The service handles Ctrl-C and says
    stop through the control block; the C loop also stops if the service dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != plan.parent_pid:
        return int(lib.OMDP_REPLAY_ORPHANED)  # the service died before we started; the C loop watches after
    return run_sender(plan)


if __name__ == "__main__":
    sys.exit(0 if sender_main(pickle.loads(Path(sys.argv[1]).read_bytes())) >= 0 else 1)
