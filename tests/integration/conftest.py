"""Shared synthetic captures for the integration tests (made once per session)."""
from __future__ import annotations


import pytest

from ops.synth.generator import SynthConfig, SynthResult, synthesize

SMALL_ANOMALIES = {"locked": 8.0, "crossed": 8.0, "off_smile": 8.0, "parity": 8.0}


@pytest.fixture(scope="session")
def small_capture(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    """2 s at 0.3x on 6 lines of a 600-name universe, with B copies and many anomalies."""
    data = tmp_path_factory.mktemp("synth-small")
    cfg = SynthConfig(data=data, seconds=2.0, rate=0.3, seed=7, num_lines=6, underlyings=600, b_copy=True,
                      anomalies_per_second=SMALL_ANOMALIES, progress=False)
    return synthesize(cfg)
