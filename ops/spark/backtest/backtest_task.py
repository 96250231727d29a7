"""The tasks of the backtest job (``backtest_job``), two stages:

- decode, one task per day x line: arbitrates, decodes and routes the line once
  (``backtest_feed.decode_line``) and stages its records per underlying bucket;
- engines, one task per day x underlying bucket: merges the bucket's staged records of every
  line in time order (``backtest_stage.StagedBucket.merged``), runs every configuration's engine over
  them (``backtest_engine``), writes its part of each output table.

Each hands back one status row. Everything here runs on an executor; the driver only plans
and gathers."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from decision_engines.engine_config import DEFAULT_MAX_GROUPS, DEFAULT_MAX_SERIES
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from ops.spark.backtest.backtest_config import BacktestConfig
from ops.spark.backtest.backtest_engine import ConfigRunner, signals_arrow, smiles_arrow, underlyings_arrow
from ops.spark.backtest.backtest_feed import LineFiles, Routes, decode_line
from ops.spark.backtest.backtest_score import truth_quotes
from ops.spark.backtest.backtest_stage import CountSlots, StagedPart, read_bucket, underlying_counts

ENGINE_CHUNK = 4_096
"""Records expanded and fed to the engines at a time (1 MB, reused): small enough to stay in
a core's L2 cache between the merge that writes it and the engines that read it (the merge
took 25% less CPU than with 16 MB chunks)."""

TASK_STATUS_SCHEMA = pa.schema(
    [
        ("date", pa.string()),
        ("stage", pa.string()),            # "decode" (day x line) or "engines" (day x bucket)
        ("line", pa.int32()),              # decode: the line (engines: -1)
        ("bucket", pa.int32()),            # engines: the bucket (decode: -1)
        ("messages", pa.int64()),          # the line's / the bucket's accepted messages
        ("files_decoded", pa.int64()),     # capture files read and decoded by this task
        ("decode_cpu_s", pa.float64()),    # thread CPU: read, arbitrate, decode, route, stage (decode);
                                           # read the stage, merge, expand, write the tables (engines)
        ("engine_cpu_s", pa.float64()),    # thread CPU: every configuration's engine, pricing and NBBO file
        ("cpu_s", pa.float64()),
        ("wall_s", pa.float64()),
        ("configs_json", pa.string()),     # per config: counters, signals per kind, refreshes
        ("lines_json", pa.string()),       # per line: the feed handler's counters
        ("problems_json", pa.string()),    # [(path, action, error)]
        ("found_json", pa.string()),       # reconciliation: the asked-for messages this bucket holds
        ("truth_json", pa.string()),       # scoring: this bucket's messages on an anomaly's series and exchange
        ("sizes_json", pa.string()),       # decode: {"series": [per bucket], "groups": [...]} of the line;
                                           # engines: per config, the engine's [max_series, max_groups]
    ]
)


@dataclass(frozen=True)
class DecodeSpec:
    """A day x line decode task (broadcast): the line's files, the day's routes, where to stage."""

    date: str
    line: LineFiles
    routes: Routes
    out_dir: str                           # <data>/backtest/date=D


@dataclass(frozen=True)
class EngineSpec:
    """A day x bucket engine task (broadcast): the bucket, the day's lines, configs, outputs."""

    date: str
    bucket: int
    lines: tuple[int, ...]
    configs: tuple[BacktestConfig, ...]
    out_dir: str                           # <data>/backtest/date=D
    check_keys: tuple[int, ...] = ()       # (line << 48) | msg_seq of live signals to look up
    truth_keys: tuple[tuple[int, int], ...] = ()  # backtest_score.truth_keys: (strike_px, hash) of the anomalies
    series: int = DEFAULT_MAX_SERIES       # the bucket's series and (underlying, expiry) groups over the
    groups: int = DEFAULT_MAX_GROUPS       # day's lines (the decode stage's sizes): its engines' tables


def _part(bucket: int) -> str:
    """A bucket's file in each output table."""
    return f"part-b{bucket:03d}.parquet"


def _config_dir(spec: EngineSpec, cfg: BacktestConfig) -> Path:
    return Path(spec.out_dir) / f"config={cfg.name}"


def _write(table: pa.Table, folder: Path, bucket: int, **options: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{_part(bucket)}.{os.getpid()}"
    pq.write_table(table, tmp, **options)
    tmp.replace(folder / _part(bucket))


def _found(part: StagedPart, keys: tuple[int, ...]) -> list[dict]:
    """The part's records whose (line, msg_seq) is asked for, with their series."""
    if not keys or not len(part):
        return []
    k = (np.uint64(part.line) << np.uint64(48)) | part.recs["msg_seq"].astype(np.uint64)
    f = part.fields(np.flatnonzero(np.isin(k, np.array(keys, dtype=np.uint64))))
    return [{"line": int(f["line"][i]), "msg_seq": int(f["msg_seq"][i]),
             "root": bytes(f["root"][i]).rstrip(b" \0").decode("ascii", "replace"), "expiry": int(f["expiry"][i]),
             "strike_px": int(f["strike_px"][i]), "put_call": chr(f["put_call"][i]) if f["put_call"][i] else ""}
            for i in range(len(f["line"]))]


def run_decode(spec: DecodeSpec) -> dict:
    """Decode, arbitrate and route one line, stage its records; the TASK_STATUS_SCHEMA row."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    feed = decode_line(spec.line, spec.routes, spec.out_dir)
    cpu = time.thread_time() - cpu0
    sizes = {"series": list(feed.sizes.series), "groups": list(feed.sizes.groups)} if feed.sizes else {}
    return {
        "date": spec.date, "stage": "decode", "line": spec.line.line, "bucket": -1, "messages": feed.messages,
        "files_decoded": feed.files_decoded, "decode_cpu_s": cpu, "engine_cpu_s": 0.0, "cpu_s": cpu,
        "wall_s": time.perf_counter() - wall0, "configs_json": "{}",
        "lines_json": json.dumps({str(feed.line): feed.counts}), "problems_json": json.dumps(feed.problems),
        "found_json": "[]", "truth_json": "[]", "sizes_json": json.dumps(sizes),
    }


def run_engines(spec: EngineSpec) -> dict:
    """Merge the bucket's staged records, feed every configuration's engine a chunk at a
    time, write the outputs; the TASK_STATUS_SCHEMA row."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    staged = read_bucket(spec.out_dir, spec.bucket, list(spec.lines))
    runners: list[ConfigRunner] = []
    try:
        for cfg in spec.configs:
            nbbo = _config_dir(spec, cfg) / "nbbo" / _part(spec.bucket) if cfg.nbbo else None
            runners.append(ConfigRunner(cfg, spec.date, spec.bucket, nbbo, (spec.series, spec.groups)))
        buf = np.empty(min(ENGINE_CHUNK, max(1, len(staged))), OPRA_MSG_DTYPE)  # reused: no fresh pages per chunk
        slots = CountSlots.for_parts(staged.parts)      # counted as merged (None: ids too large, counted after)
        for records in staged.merged(buf, slots):
            for r in runners:
                r.feed(records)
    except BaseException:
        for r in runners:
            r.abort()
        raise
    configs = {}
    counts = slots.result() if slots is not None else underlying_counts(staged.parts)
    for r in runners:
        run = r.finish()
        base = _config_dir(spec, r.cfg)
        sig = signals_arrow(run.signals)
        _write(sig, base / "signals", spec.bucket)
        _write(underlyings_arrow(counts, run.signals), base / "underlyings", spec.bucket)
        _write(smiles_arrow(run.smiles), base / "smiles", spec.bucket)
        kinds = sig.column("kind").to_pylist()
        configs[r.cfg.name] = {"signals": len(kinds), "kinds": {k: kinds.count(k) for k in set(kinds)},
                               "refreshes": run.refreshes, "cpu_s": run.cpu_s, "counters": run.counters,
                               "nbbo_changes": run.nbbo_changes, "nbbo_dropped": run.nbbo_dropped}
    cpu = time.thread_time() - cpu0
    engine_cpu = sum(c["cpu_s"] for c in configs.values())
    return {
        "date": spec.date, "stage": "engines", "line": -1, "bucket": spec.bucket, "messages": len(staged),
        "files_decoded": 0, "decode_cpu_s": cpu - engine_cpu, "engine_cpu_s": engine_cpu, "cpu_s": cpu,
        "wall_s": time.perf_counter() - wall0, "configs_json": json.dumps(configs), "lines_json": "{}",
        "problems_json": "[]", "found_json": json.dumps([f for p in staged.parts for f in _found(p, spec.check_keys)]),
        "truth_json": json.dumps([q for p in staged.parts for q in truth_quotes(p, spec.truth_keys)]),
        "sizes_json": json.dumps({r.cfg.name: [r.engine.config.max_series, r.engine.config.max_groups]
                                  for r in runners}),
    }


def run_task(spec: DecodeSpec | EngineSpec) -> dict:
    """Either stage's task."""
    return run_decode(spec) if isinstance(spec, DecodeSpec) else run_engines(spec)
