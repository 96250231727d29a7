"""CPU and wall seconds spent in each stage of a run, for the generator's report and its
benchmark (docs/benchmarks.md): where the time goes, measured, not guessed."""
from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator


class StageTimer:
    """Accumulates process CPU time and wall time per named stage."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the body of a ``with`` block under ``name``."""
        c, w = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.cpu[name] += time.process_time() - c
            self.wall[name] += time.perf_counter() - w

    def report(self) -> dict[str, dict[str, float]]:
        """``{stage: {"cpu_s": ..., "wall_s": ...}}``."""
        return {k: {"cpu_s": round(self.cpu[k], 4), "wall_s": round(self.wall[k], 4)} for k in self.cpu}
