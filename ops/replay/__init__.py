"""The feed replay service: recorded OPRA captures back onto the wire (loopback multicast or
a Vega ring) at N x, paced in C against an absolute schedule, with every packet's intended
send time published (shared-memory table and ``intended.parquet``).

Python API::

    from ops.replay import RateSpec, ReplayConfig, ReplayService
    svc = ReplayService(ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="10x"),
                                     target="ring:omdp-<run>-feed", cpus=(0,), seconds=30))
    st = svc.start(run_id=run_id, run_dir=run_dir)   # nothing sent if the input is bad
    svc.set_rate(RateSpec.parse(rate="5x")); svc.status(); svc.wait(); svc.stop()
"""
from ops.replay.capture_set import CaptureInputError
from ops.replay.config import ReplayConfig, ReplayConfigError
from ops.replay.intended_table import IntendedTable
from ops.replay.rates import PAPER_1X_PPS, RateError, RateSpec
from ops.replay.service import ReplaySenderError, ReplayService, ReplayStateError
from ops.replay.status import ReplayStatus

__all__ = [
    "PAPER_1X_PPS",
    "CaptureInputError",
    "IntendedTable",
    "RateError",
    "RateSpec",
    "ReplayConfig",
    "ReplayConfigError",
    "ReplaySenderError",
    "ReplayService",
    "ReplayStateError",
    "ReplayStatus",
]
