"""A finished run's verdict (docs/architecture.md "sustainable", the rule of
``omdp.metrics.definitions``) from what its run directory holds, so the live run's report,
``omdp runs show``, the dashboard of a finished run and the nightly latency job judge a run
from the same figures:

- the replayer's share of its schedule: the least any feed sender reported in its final
  status (``replay-fs<k>/status.json``, beside the records); a run directory without one (run
  records written by other tools) has only achieved over target packets/s (meta.parquet);
- missed and sent messages: meta.parquet (ingest.parquet where the meta has none), as the
  breakdown reads them;
- growth: every sample of samples.parquet with both stamps, in arrival order;
- p99 from intended: the breakdown's, over the rows the run's report used;
- failed: run.json's status (no run.json: not known to have failed).

The bound on p99 is the rule's (1 ms by default); a run made with another
``--max-p99-from-intended`` is judged with that one by its own report only (the records do
not hold it).
"""
from __future__ import annotations

import json
from pathlib import Path

from omdp.metrics.breakdown import Breakdown
from omdp.metrics.definitions import DEFAULT_RULE, Growth, SustainabilityRule, Verdict, judge, latency_growth
from omdp.metrics.run_files import RunRecordError, read_run_file

REPLAYER_STATUS = "replay-fs*/status.json"
"""The feed senders' final status files in a run directory (``ops.pipeline.feed_sender``)."""


def replayer_status(run_dir: str | Path) -> tuple[bool, float | None]:
    """Whether the run directory holds the feed senders' final status files, and the least
    share of its schedule any of them reported (None: none did)."""
    paths = sorted(Path(run_dir).glob(REPLAYER_STATUS))
    fractions = []
    for path in paths:
        try:
            f = json.loads(path.read_text()).get("achieved_fraction")
        except (OSError, ValueError) as exc:
            raise RunRecordError(str(path.relative_to(run_dir)), f"unreadable replayer status: {exc}") from None
        if f is not None:
            fractions.append(float(f))
    return bool(paths), min(fractions) if fractions else None


def achieved_fraction(has_status: bool, status_fraction: float | None, target_pps: float | None,
                      achieved_pps: float | None) -> float | None:
    """The share of its schedule the replayer kept (the module doc); None when unknown."""
    if has_status:
        return status_fraction
    return achieved_pps / target_pps if target_pps and achieved_pps is not None else None


def run_failed(run_dir: str | Path) -> bool:
    """True when the run's run.json says it failed."""
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text()).get("status") == "failed"
    except (OSError, ValueError) as exc:
        raise RunRecordError("run.json", f"unreadable: {exc}") from None


def read_growth(run_dir: str | Path) -> Growth:
    """The growth figures of a run directory's samples (no readable samples: unknown)."""
    try:
        samples = read_run_file(run_dir, "samples.parquet").select(["intended", "mc_in"])
    except RunRecordError:
        return Growth()
    return latency_growth(samples.column("intended").to_numpy(), samples.column("mc_in").to_numpy())


def p99_from_intended_us(breakdown: Breakdown | None) -> float | None:
    """The p99 of latency from intended the verdict bounds: the run's breakdown's (None: no samples)."""
    return breakdown.hops["e2e_intended"]["p99_us"] if breakdown is not None else None


def read_verdict(run_dir: str | Path, rule: SustainabilityRule = DEFAULT_RULE, breakdown: Breakdown | None = None) -> Verdict:
    """The verdict of a finished run directory (meta.parquet and samples.parquet required;
    ``breakdown``: its breakdown when already read)."""
    b = breakdown if breakdown is not None else Breakdown.from_run_dir(run_dir)
    return judge(achieved_fraction=achieved_fraction(*replayer_status(run_dir), b.target_pps, b.achieved_pps),
                 messages_missed=b.messages_missed, messages_seen=b.messages_sent, growth=read_growth(run_dir),
                 p99_from_intended_us=p99_from_intended_us(b), failed=run_failed(run_dir), rule=rule)
