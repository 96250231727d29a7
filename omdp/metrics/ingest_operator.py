"""The ingest collector as an operator (``ingest_collector``): a slow source in its own
partition that turns the feed handlers' per-line counters into ``ingest.parquet``.

The feed handlers publish each line's cumulative counters (received, missed, duplicates,
decode errors) into the run's stats segment from their C loops; this operator reads the
segment's line table once per ``interval_s`` (``omdp.metrics.IngestCollector``) and, when
the run stops, waits for the figures to settle (the handlers publish their last counters as
they drain) before writing the final rows. It sleeps between looks: its partition does
nothing else, and no Python runs on the pipeline's hot path for it.

Generic runtime (nothing of OPRA): the composition root registers the kind
(``ops/pipeline/registry.py``).
"""
from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from omdp.clock import now_ns
from omdp.metrics.ingest_collector import IngestCollector
from omdp.metrics.stats_segment import StatsSegmentError, StatsWriter
from omdp.operator import OperatorContext, PollResult, SourceOperator

SLEEP_S = 0.05
"""Longest sleep of one poll (a stop is seen within it)."""


class IngestCollectorParams(BaseModel):
    """``ingest_collector`` parameters."""

    model_config = ConfigDict(extra="forbid")

    interval_s: float = Field(1.0, gt=0, le=3600, description="one ingest.parquet row per line this often")
    settle_s: float = Field(0.3, ge=0, le=60, description="at the end: figures unchanged this long are final")
    settle_timeout_s: float = Field(5.0, ge=0, le=600, description="at the end: wait at most this long")


class IngestCollectorOperator(SourceOperator):
    """Periodic rows of per-line ingest counters, written at the end of the run."""

    def __init__(self, params: IngestCollectorParams, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.p = params
        self.stats: StatsWriter | None = None
        if ctx.run_dir is not None:
            try:
                self.stats = StatsWriter.attach(Path(ctx.run_dir).name)
            except (StatsSegmentError, ValueError):
                self.stats = None
        self.collector = IngestCollector(self.stats, params.interval_s,
                                         spill_dir=ctx.run_dir if self.stats is not None else None)
        self.rows = 0
        self.written = False

    def poll(self) -> PollResult:
        """A row per line when one is due; otherwise sleep a little."""
        if self.stats is None:
            time.sleep(SLEEP_S)
            return PollResult.IDLE
        if self.collector.tick():
            self.rows += 1
            return PollResult.PRODUCED
        time.sleep(SLEEP_S)
        return PollResult.IDLE

    def _settled(self) -> dict[int, dict[str, int]]:
        deadline = time.monotonic() + self.p.settle_timeout_s
        last = self.collector.latest()
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(min(SLEEP_S, self.p.settle_s or SLEEP_S))
            cur = self.collector.latest()
            if cur != last:
                last, still_since = cur, time.monotonic()
            elif time.monotonic() - still_since >= self.p.settle_s:
                break
        return last

    def end_of_stream(self) -> None:
        """The run stops: wait for the handlers' last figures, then write ingest.parquet."""
        if self.written or self.stats is None or self.ctx.run_dir is None:
            return
        self._settled()
        self.collector.snapshot(now_ns())
        self.collector.write(self.ctx.run_dir)
        self.written = True

    def stopped_early(self) -> None:
        """A hard stop: write ingest.parquet with the handlers' figures as they are now (no
        wait for them to settle: a handler may be gone)."""
        if self.written or self.stats is None or self.ctx.run_dir is None:
            return
        self.collector.snapshot(now_ns())
        self.collector.write(self.ctx.run_dir)
        self.written = True

    def counters(self) -> dict[str, int]:
        """Rows taken, lines seen, and the totals over lines."""
        totals = self.collector.totals() if self.stats is not None else {}
        return {"ticks": self.rows, "lines": len(self.collector.latest()) if self.stats else 0, **totals}

    def close(self) -> None:
        """Detach from the stats segment."""
        if self.stats is not None:
            self.stats.close()
            self.stats = None
