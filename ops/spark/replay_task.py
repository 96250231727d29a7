"""One task of the replay job (``replay_job``): a day x underlying bucket. It decodes and
routes the day once (``replay_feed``), runs every configuration's engine over the bucket's
records (``replay_engine``), writes its part of each output table and hands back one status
row. Everything here runs on an executor; the driver only plans and gathers."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ops.spark.replay_config import ReplayConfig
from ops.spark.replay_engine import run_config, signals_arrow, smiles_arrow, underlyings_arrow
from ops.spark.replay_feed import LineFiles, Routes, decode_bucket

TASK_STATUS_SCHEMA = pa.schema(
    [
        ("date", pa.string()),
        ("bucket", pa.int32()),
        ("messages", pa.int64()),          # the bucket's accepted messages
        ("files_decoded", pa.int64()),     # capture files read and decoded by this task
        ("decode_cpu_s", pa.float64()),    # thread CPU: read, arbitrate, decode, route, sort
        ("engine_cpu_s", pa.float64()),    # thread CPU: every configuration's engine and pricing
        ("cpu_s", pa.float64()),
        ("wall_s", pa.float64()),
        ("configs_json", pa.string()),     # per config: counters, signals per kind, refreshes
        ("lines_json", pa.string()),       # per line: the feed handler's counters
        ("problems_json", pa.string()),    # [(path, action, error)]
        ("found_json", pa.string()),       # reconciliation: the asked-for messages this bucket holds
    ]
)


@dataclass(frozen=True)
class TaskSpec:
    """What one task is given (broadcast): the day, its files, routes, configs, outputs."""

    date: str
    bucket: int
    lines: tuple[LineFiles, ...]
    routes: Routes
    configs: tuple[ReplayConfig, ...]
    out_dir: str                           # <data>/replay/date=D
    check_keys: tuple[int, ...] = ()       # (line << 48) | msg_seq of live signals to look up


def _write(table: pa.Table, folder: Path, bucket: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".part-b{bucket:03d}.parquet.{os.getpid()}"
    pq.write_table(table, tmp)
    tmp.replace(folder / f"part-b{bucket:03d}.parquet")


def _found(records: np.ndarray, keys: tuple[int, ...]) -> list[dict]:
    """The records whose (line, msg_seq) is asked for, with their series."""
    if not keys or not len(records):
        return []
    k = (records["line"].astype(np.uint64) << np.uint64(48)) | records["msg_seq"].astype(np.uint64)
    hit = np.isin(k, np.array(keys, dtype=np.uint64))
    out = []
    for r in records[hit]:
        out.append({"line": int(r["line"]), "msg_seq": int(r["msg_seq"]),
                    "root": bytes(r["root"]).rstrip(b" \0").decode("ascii", "replace"), "expiry": int(r["expiry"]),
                    "strike_px": int(r["strike_px"]), "put_call": chr(r["put_call"]) if r["put_call"] else ""})
    return out


def run_task(spec: TaskSpec) -> dict:
    """Decode once, run every configuration, write the outputs; the TASK_STATUS_SCHEMA row."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    feed = decode_bucket(list(spec.lines), spec.routes, spec.bucket)
    decode_cpu = time.thread_time() - cpu0
    records = feed.records
    configs = {}
    for cfg in spec.configs:
        run = run_config(records, cfg, spec.date, spec.bucket)
        base = Path(spec.out_dir) / f"config={cfg.name}"
        sig = signals_arrow(run.signals)
        _write(sig, base / "signals", spec.bucket)
        _write(underlyings_arrow(records, run.signals), base / "underlyings", spec.bucket)
        _write(smiles_arrow(run.smiles), base / "smiles", spec.bucket)
        kinds = sig.column("kind").to_pylist()
        configs[cfg.name] = {"signals": len(kinds), "kinds": {k: kinds.count(k) for k in set(kinds)},
                             "refreshes": run.refreshes, "cpu_s": run.cpu_s, "counters": run.counters}
    cpu = time.thread_time() - cpu0
    return {
        "date": spec.date, "bucket": spec.bucket, "messages": len(records), "files_decoded": feed.files_decoded,
        "decode_cpu_s": decode_cpu, "engine_cpu_s": cpu - decode_cpu, "cpu_s": cpu,
        "wall_s": time.perf_counter() - wall0, "configs_json": json.dumps(configs),
        "lines_json": json.dumps({str(k): v for k, v in feed.line_counts.items()}),
        "problems_json": json.dumps(feed.problems), "found_json": json.dumps(_found(records, spec.check_keys)),
    }
