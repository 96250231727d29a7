"""The rate a run kept up with in its busiest 10 ms windows, per feed-handler core.

A capture's mean rate says little about a bursty feed: today's OPRA peaks at several times
its mean for about 10 ms (docs/synth.md), and a handler that keeps the mean may fall behind
in every peak. So a run's intended time (the replayer's planned send time, docs/architecture.md
"Rates, latency, sustainability") is cut into 10 ms windows, one starting every millisecond (so
a peak is not split between two windows, as fixed windows would: the busiest comes within a
tenth of the schedule's exact sliding peak, and matched it to 0.1% on today's feed at 1x),
each window's messages counted, and each window judged kept up with or not:

- messages: every message of the packets planned in the window, a block sent as copy A and
  as copy B counted once (the same line, block sequence and intended time);
- kept up with: no packet of the window left the replayer more than ``bound`` after its
  intended time (for a block sent twice, the earlier copy: the one the handler takes), and
  no sampled message of the window (samples.parquet) reached the collector more than
  ``bound`` after its intended time. With a ring input a handler that falls behind fills its
  ring and holds the replayer (back-pressure), so the send lag shows its queue beyond the
  ring's depth; the samples show what queued inside the ring, as densely as the run sampled.

The figures: the mean rate, the busiest window's and whether it was kept up with, the
busiest window that was, and of the busiest 1% of windows how many were kept. Divided by
the feed-handler cores (partitions) of the run, the rates are what one core sustained, on
the assumption that the lines are spread evenly over the handlers. Nothing here sleeps or
measures: the figures come from the run's records alone.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.metrics.run_files import RunRecordError, read_run_file
from omdp.metrics.run_records import RUN_FILES
from omdp.units import fmt_us

WINDOW_NS = 10_000_000
"""The window: 10 ms, the span over which the feed's peaks are stated."""
STEP_NS = 1_000_000
"""A window starts every millisecond."""
TOP_SHARE = 0.01
"""The busiest windows judged together: this share of all windows (at least one)."""
INTENDED_COLUMNS = ["line", "block_seq", "intended_ns", "sent_ns", "messages"]
"""What the windows read of intended.parquet: not the copy's name, the one string column and
most of the file's reading time (a 10 s run at 4x: 1.9 M rows)."""


@dataclass(frozen=True)
class BurstWindows:
    """A run's 10 ms windows, their busiest and which of them were kept up with (module doc)."""

    window_ns: int
    bound_us: float
    handler_cores: int
    windows: int
    kept: int
    messages: int
    mean_msgs_per_s: float
    busiest_msgs_per_s: float
    busiest_kept: bool
    busiest_kept_msgs_per_s: float | None
    top: int
    top_kept: int
    top_least_msgs_per_s: float
    """The quietest of the ``top`` busiest windows: the rate they all reached."""
    late_sent: int = 0
    """Windows not kept up with because a packet left the replayer late: the replayer lagged
    its schedule, or (with a ring input) waited for room in a full ring."""
    late_queued: int = 0
    """Windows whose packets all left on time but a sampled message of which was late: it
    queued in front of the handler (in its ring or socket) or inside the pipeline."""

    def per_core(self, msgs_per_s: float | None) -> float | None:
        """A rate divided by the run's feed-handler cores."""
        return None if msgs_per_s is None else msgs_per_s / max(self.handler_cores, 1)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self),
                "mean_msgs_per_s_per_core": self.per_core(self.mean_msgs_per_s),
                "busiest_kept_msgs_per_s_per_core": self.per_core(self.busiest_kept_msgs_per_s),
                "busiest_msgs_per_s_per_core": self.per_core(self.busiest_msgs_per_s)}

    def text(self) -> str:
        """One line for the run's summary."""
        c = self.handler_cores
        core = "per feed-handler core" if c == 1 else f"per feed-handler core ({c} cores, lines spread evenly)"
        w = self.window_ns / 1e6
        kept = (f"the busiest window kept up with {self.per_core(self.busiest_kept_msgs_per_s):,.0f}"
                if self.busiest_kept_msgs_per_s is not None else "no window kept up with")
        return (f"{w:g} ms windows (one a millisecond), msgs/s {core}: mean {self.per_core(self.mean_msgs_per_s):,.0f}; {kept}; "
                f"busiest {self.per_core(self.busiest_msgs_per_s):,.0f} ({'kept up with' if self.busiest_kept else 'not kept up with'}); "
                f"the busiest {self.top:,} (>= {self.per_core(self.top_least_msgs_per_s):,.0f}): {self.top_kept:,} kept up with; "
                f"{self.kept:,} of {self.windows:,} windows kept up with (nothing later than {fmt_us(self.bound_us)} "
                f"after its intended time; late: {self.late_sent:,} sent late, {self.late_queued:,} queued after an "
                "on-time send)")


def burst_windows(intended: pa.Table, samples: pa.Table | None, bound_us: float, handler_cores: int,
                  window_ns: int = WINDOW_NS, step_ns: int = STEP_NS) -> BurstWindows | None:
    """The windows of a run from its intended.parquet and samples.parquet tables (module
    doc); None when no packet was planned. ``window_ns`` is a multiple of ``step_ns``."""
    if intended.num_rows == 0:
        return None
    blocks = (intended.select(INTENDED_COLUMNS)
              .group_by(["line", "block_seq", "intended_ns"])
              .aggregate([("messages", "max"), ("sent_ns", "min")]))
    t = blocks.column("intended_ns").to_numpy()
    lag = blocks.column("sent_ns_min").to_numpy() - t
    msgs = blocks.column("messages_max").to_numpy().astype(np.int64)
    t0 = int(t.min())
    nb = int((int(t.max()) - t0) // step_ns) + 1          # steps the run's packets span
    b = (t - t0) // step_ns
    per_step = np.bincount(b, weights=msgs, minlength=nb).astype(np.int64)
    bound_ns = bound_us * 1e3
    sent_late = np.zeros(nb, dtype=np.int64)
    np.add.at(sent_late, b[lag > bound_ns], 1)
    queued_late = np.zeros(nb, dtype=np.int64)
    if samples is not None and samples.num_rows:
        si = samples.column("intended").to_numpy()
        sm = samples.column("mc_in").to_numpy()
        ok = (si >= t0) & (sm > 0) & (si < t0 + nb * step_ns)
        np.add.at(queued_late, (si[ok] - t0)[(sm[ok] - si[ok]) > bound_ns] // step_ns, 1)
    k = min(window_ns // step_ns, nb)                     # steps per window (a short run: one window)

    def window_sums(x: np.ndarray) -> np.ndarray:
        c = np.concatenate(([0], np.cumsum(x)))
        return c[k:] - c[:-k]
    count, sent, queued = window_sums(per_step), window_sums(sent_late) > 0, window_sums(queued_late) > 0
    kept = ~(sent | queued)
    n = len(count)
    rate = count * (1e9 / (k * step_ns))
    order = np.argsort(-count, kind="stable")
    top = order[:max(1, math.ceil(n * TOP_SHARE))]
    busiest = int(order[0])
    return BurstWindows(
        window_ns=k * step_ns, bound_us=bound_us, handler_cores=handler_cores, windows=n, kept=int(kept.sum()),
        messages=int(per_step.sum()), mean_msgs_per_s=float(per_step.sum()) * 1e9 / (nb * step_ns),
        busiest_msgs_per_s=float(rate[busiest]), busiest_kept=bool(kept[busiest]),
        busiest_kept_msgs_per_s=float(rate[kept].max()) if kept.any() else None,
        top=len(top), top_kept=int(kept[top].sum()), top_least_msgs_per_s=float(rate[top].min()),
        late_sent=int(sent.sum()), late_queued=int((queued & ~sent).sum()))


def read_burst_windows(run_dir: str | Path, bound_us: float, handler_cores: int) -> BurstWindows | None:
    """The windows of a finished run from its directory; None without intended.parquet (a
    run whose feed did not come from omdp's replayer) or with one that does not match its
    schema."""
    path = Path(run_dir) / "intended.parquet"
    try:
        if not pq.ParquetFile(path).schema_arrow.equals(RUN_FILES["intended.parquet"], check_metadata=False):
            return None
        intended = pq.read_table(path, columns=INTENDED_COLUMNS)
    except (OSError, pa.ArrowException):
        return None
    try:
        samples = read_run_file(run_dir, "samples.parquet").select(["intended", "mc_in"])
    except RunRecordError:
        samples = None
    return burst_windows(intended, samples, bound_us, handler_cores)

