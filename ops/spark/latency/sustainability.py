"""Is a run's rate sustainable, and how far does each sweep go (the paper's Figures 5, 8)?

The rule is ``omdp.metrics.definitions``' (docs/architecture.md "sustainable"), the one the
live run's report, ``omdp runs show`` and the dashboard apply. Its figures are taken where
the run's files are read, one run at a time on the executors (``run_analysis``, with
``omdp.metrics.run_verdict``'s readers); judging a run and summarizing a sweep work on one
row per run, on the driver.
"""
from __future__ import annotations

from omdp.metrics.definitions import Growth, SustainabilityRule, judge
from omdp.metrics.run_verdict import achieved_fraction


def _all_of(*verdicts: bool | None) -> bool | None:
    """Three-valued AND: False if any is False, else None if any is unknown, else True."""
    if any(v is False for v in verdicts):
        return False
    if any(v is None for v in verdicts):
        return None
    return True


def judge_run(meta: dict, figures: dict | None, ingest: list[dict], rule: SustainabilityRule) -> dict:
    """``achieved_ratio, missed_ratio, first/last_third_p50_ns, growth_ratio, latency_growing,
    sustainable, reasons`` of a run from its meta row, its verdict figures (None: no usable
    samples) and its ingest rows (the messages when the meta has none, as the breakdown)."""
    target, achieved, sent, missed = meta["target_pps"], meta["achieved_pps"], meta["messages_sent"], meta["messages_missed"]
    if not sent and ingest:
        missed = sum(i["messages_missed"] for i in ingest)
        sent = sum(i["messages_received"] for i in ingest) + missed
    f = figures or {}
    growth = Growth(f.get("first_third_p50_us"), f.get("last_third_p50_us"), f.get("growth_samples") or 0)
    fraction = achieved_fraction(bool(f.get("replayer_status")), f.get("replayer_fraction"), target, achieved)
    verdict = judge(achieved_fraction=fraction, messages_missed=missed, messages_seen=sent, growth=growth,
                    p99_from_intended_us=f.get("p99_from_intended_us"), failed=bool(f.get("failed")), rule=rule)
    first, last = growth.first_us, growth.last_us
    return {
        "achieved_ratio": achieved / target if target and target > 0 else None,
        "missed_ratio": missed / sent if sent and sent > 0 else None,
        "first_third_p50_ns": first * 1e3 if first is not None else None,
        "last_third_p50_ns": last * 1e3 if last is not None else None,
        "growth_ratio": last / first if first and last is not None else None,
        "latency_growing": growth.growing,
        "sustainable": verdict.judged,
        "reasons": "; ".join([*verdict.reasons, *verdict.unknown]),
    }


def sweep_summaries(runs: list[dict]) -> list[dict]:
    """Per ``sweep_id`` (runs outside a sweep left out): the rates tried, the lowest rate not
    sustained, and the highest rate sustained below it - the sweep's sustainable rate. A rate
    tried more than once is sustained only if every try was; an undecided rate (None) stops
    neither the search nor counts as sustained."""
    by_sweep: dict[str, list[dict]] = {}
    for r in runs:
        if r["sweep_id"]:
            by_sweep.setdefault(r["sweep_id"], []).append(r)
    out = []
    for sweep_id, rows in sorted(by_sweep.items()):
        per_rate: dict[float, bool | None] = {}
        for r in rows:
            per_rate[r["rate_x"]] = _all_of(per_rate.get(r["rate_x"], True), r["sustainable"])
        rates = sorted(per_rate)
        first_bad = next((x for x in rates if per_rate[x] is False), None)
        good = [x for x in rates if per_rate[x] is True and (first_bad is None or x < first_bad)]
        out.append(
            {
                "date": rows[0]["date"],
                "sweep_id": sweep_id,
                "topology": rows[0]["topology"],
                "config": rows[0]["config"],
                "runs": len(rows),
                "min_rate_x": rates[0],
                "max_rate_x": rates[-1],
                "first_unsustainable_rate_x": first_bad,
                "max_sustainable_rate_x": max(good) if good else None,
            }
        )
    return out
