"""The feed replay service: recorded OPRA captures back onto the wire (loopback multicast or
a Vega ring) at N x, paced in C against an absolute schedule, with every packet's intended
send time published (shared-memory table and ``intended.parquet``).

Python API::

    from ops.replay import RateSpec, ReplayConfig, ReplayService
    svc = ReplayService(ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="10x"),
                                     target="ring:omdp-<run>-feed", cpus=(0,), seconds=30))
    st = svc.start(run_id=run_id, run_dir=run_dir)   # nothing sent if the input is bad
    svc.set_rate(RateSpec.parse(rate="5x")); svc.status(); svc.wait(); svc.stop()

Names are imported on first use (PEP 562), so a sender process, which needs only
``ops.replay.sender``, does not load the service's dependencies.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PAPER_1X_PPS": "ops.replay.rates",
    "RateError": "ops.replay.rates",
    "RateSpec": "ops.replay.rates",
    "CaptureInputError": "ops.replay.capture_set",
    "ReplayConfig": "ops.replay.config",
    "ReplayConfigError": "ops.replay.config",
    "IntendedTable": "ops.replay.intended_table",
    "ReplaySenderError": "ops.replay.service",
    "ReplayService": "ops.replay.service",
    "ReplayStateError": "ops.replay.service",
    "ReplayStatus": "ops.replay.status",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ops.replay' has no attribute {name!r}")
