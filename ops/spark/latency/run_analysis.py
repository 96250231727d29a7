"""Executor side of the latency job: everything the night needs from one run directory,
computed where the run's files are read.

The run's record files are read with pyarrow (columnar, explicit contract schemas) and
handed to numpy once per file: the breakdown of every hop (``latency_breakdown``), the
figures the sustainability rule judges (``omdp.metrics.definitions``: growth over thirds,
the breakdown's p99 from intended, the replayer's share of its schedule, read as
``omdp.metrics.run_verdict`` reads them), the final ingest counters per line
and the signals per kind. A file that cannot be read is reported with its path and what was
left out; a run whose samples cannot be read is not usable. The result is one row per run,
its parts nested (RUN_RESULT_SCHEMA), so the driver gets the night in one collect.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.metrics.breakdown import hop_histograms_from_table, report_rows
from omdp.metrics.definitions import SAMPLE_HOPS, SEND_LAG_HOP, latency_growth
from omdp.metrics.latency_summary import summarize
from omdp.metrics.run_files import RunRecordError
from omdp.metrics.run_records import RUN_FILES
from omdp.metrics.run_verdict import replayer_status, run_failed
from omdp.record import HOPS
from ops.spark.latency.latency_breakdown import STATS_ARROW_SCHEMA, hop_stats
from ops.spark.latency.run_records_scan import RunDirectory

INGEST_COUNTERS = ("packets_received", "messages_received", "messages_missed", "packets_duplicate", "decode_errors")

RUN_RESULT_SCHEMA = pa.schema(
    [
        ("run_dir", pa.string()),
        ("usable", pa.bool_()),
        ("stats", pa.list_(pa.struct(list(STATS_ARROW_SCHEMA)))),
        (
            "figures",
            pa.struct(
                [("first_third_p50_us", pa.float64()), ("last_third_p50_us", pa.float64()),
                 ("growth_samples", pa.int64()), ("p99_from_intended_us", pa.float64()),
                 ("replayer_status", pa.bool_()), ("replayer_fraction", pa.float64()), ("failed", pa.bool_())]
            ),
        ),
        ("ingest", pa.list_(pa.struct([("line", pa.int32())] + [(c, pa.int64()) for c in INGEST_COUNTERS]))),
        ("signals", pa.list_(pa.struct([("kind", pa.string()), ("signals", pa.int64())]))),
        ("problems", pa.list_(pa.struct([("path", pa.string()), ("action", pa.string()), ("error", pa.string())]))),
    ]
)


def _read(run: RunDirectory, name: str, columns: list[str], problems: list[dict], lost: str) -> pa.Table | None:
    """File ``name`` of ``run`` (None if absent or unreadable; then a problem is noted)."""
    if name not in run.files:
        return None
    path = run.files[name]
    try:
        table = pq.read_table(path, columns=columns, schema=RUN_FILES[name])
    except (OSError, ValueError, pa.ArrowException) as exc:
        problems.append({"path": str(path), "action": "skipped", "error": f"unreadable rows: {exc}; {lost}"})
        return None
    return table


def _int64(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).fill_null(0).to_numpy().astype(np.int64, copy=False)


def _verdict_figures(run: RunDirectory, samples: pa.Table, stamps: dict[str, np.ndarray], problems: list[dict]) -> dict:
    """What the sustainability rule judges, from the samples and the replayer's status files."""
    growth = latency_growth(stamps["intended"], stamps["mc_in"])
    metadata = {k.decode(): v.decode() for k, v in (pq.read_schema(run.files["samples.parquet"]).metadata or {}).items()}
    try:
        hists = hop_histograms_from_table(samples, *report_rows(metadata, samples.num_rows))
        p99 = summarize(hists["e2e_intended"])["p99_us"]
    except RunRecordError as exc:
        problems.append({"path": str(run.files["samples.parquet"]), "action": "partly skipped", "error": f"{exc}; p99 not judged"})
        p99 = None
    try:
        has_status, fraction = replayer_status(run.path)
    except RunRecordError as exc:
        problems.append({"path": str(run.path), "action": "partly skipped", "error": f"{exc}; achieved/target packets/s used"})
        has_status, fraction = False, None
    try:
        failed = run_failed(run.path)
    except RunRecordError as exc:
        problems.append({"path": str(run.path), "action": "partly skipped", "error": f"{exc}; not known to have failed"})
        failed = False
    return {"first_third_p50_us": growth.first_us, "last_third_p50_us": growth.last_us, "growth_samples": growth.samples,
            "p99_from_intended_us": p99, "replayer_status": has_status, "replayer_fraction": fraction, "failed": failed}


def analyze_run(run: RunDirectory) -> dict:
    """The RUN_RESULT_SCHEMA row of one checked run directory."""
    problems: list[dict] = []
    result = {"run_dir": run.name, "usable": False, "stats": [], "figures": None, "ingest": [], "signals": [],
              "problems": problems}
    samples = _read(run, "samples.parquet", list(HOPS), problems, "run skipped")
    if samples is None:
        return result
    result["usable"] = True
    stamps = {h: _int64(samples, h) for h in HOPS}
    result["stats"] = [hop_stats(run.name, h, stamps[h.start], stamps[h.end]) for h in SAMPLE_HOPS]
    result["figures"] = _verdict_figures(run, samples, stamps, problems)

    lag = SEND_LAG_HOP
    intended = _read(run, "intended.parquet", [lag.start, lag.end], problems, "send lag left out")
    if intended is not None:
        result["stats"].append(hop_stats(run.name, lag, _int64(intended, lag.start), _int64(intended, lag.end)))

    ingest = _read(run, "ingest.parquet", ["line", *INGEST_COUNTERS], problems, "ingest counters left out")
    if ingest is not None and ingest.num_rows:
        # The counters are cumulative: a line's last values are its maxima.
        last_values = ingest.group_by("line").aggregate([(c, "max") for c in INGEST_COUNTERS])
        result["ingest"] = [
            {"line": int(r["line"]), **{c: int(r[f"{c}_max"]) for c in INGEST_COUNTERS}} for r in last_values.to_pylist()
        ]
    signals = _read(run, "signals.parquet", ["kind"], problems, "signals left out")
    if signals is not None and signals.num_rows:
        per_kind = signals.group_by("kind").aggregate([("kind", "count")])
        result["signals"] = [{"kind": r["kind"], "signals": int(r["kind_count"])} for r in per_kind.to_pylist()]
    return result
