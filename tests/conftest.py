"""Shared pytest configuration: tiers (unit, integration, acceptance) live in folders; cost is
marked (``slow``, ``bench``); hardware tests skip with their reason.

Subprocesses the tests start (``python -P -c ...``, partitions of a run) import the same omdp
as this process: its package root goes first on PYTHONPATH, and ``-P`` keeps the working
directory (a source checkout without the compiled module) off their path.
"""
from __future__ import annotations

import os
from pathlib import Path

import omdp

_PACKAGE_ROOT = str(Path(omdp.__file__).resolve().parent.parent)
os.environ["PYTHONPATH"] = os.pathsep.join(
    dict.fromkeys([_PACKAGE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
)
