"""``omdp bench market-state --pipeline``: what the market statistics cost the whole pipeline.

The in-process loop (ops.market.bench) times the operators alone; here the shipped
topologies run one lap of a capture each, with the statistics off, on (the shared state)
and as the re-partitioning baseline (route), at one feed-handler partition
(opra_fused / opra_fused_market) and at two (opra_partitions / opra_market_partitions).
The figure is every partition's loop thread CPU time summed and divided by the messages
the pipeline received, so the leaders', the sink's and the transport's costs count with
the handlers'. Every partition waits ``spin-block`` here (the one-partition topologies'
spinning handler partition is set so): a spinning loop's CPU time is its wall time
whatever its load, a blocking loop's is its work plus its polls before it sleeps, so the
sums compare. The run report's work estimate (thread CPU times the working share of the
loop's wall time, right for a spinning loop only) is kept beside it (``work_*``). The
configurations run in turn, round after round, so a busy spell of the host falls on all
of them; each figure is the median over the rounds.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("off", "shared", "route")
TOPOLOGIES = {1: ("opra_fused", "opra_fused_market"), 2: ("opra_partitions", "opra_market_partitions")}
ROUTE = "operators.ms.params.mode=\"route\""
BLOCK = "partitions.app.wait=\"spin-block\""  # the one-partition topologies' spinning handler partition


class PipelineRunFailed(RuntimeError):
    """A run of the comparison did not end cleanly (its command and what it said)."""


@dataclass(frozen=True)
class Config:
    """One point of the comparison: handler partitions and statistics mode."""

    partitions: int
    mode: str

    def command(self) -> list[str]:
        off, on = TOPOLOGIES[self.partitions]
        args = ["run", off if self.mode == "off" else on] + (["--set", BLOCK] if self.partitions == 1 else [])
        return args + (["--set", ROUTE] if self.mode == "route" else [])


def _role(partition: str) -> str:
    """The partition's part: a feed handler's, a leader's, or the rest (the market sink runs
    in the signals partition with the signal collector)."""
    if partition == "app" or partition.startswith("handlers"):
        return "handler"
    if partition == "market" or partition.startswith("leaders"):
        return "leader"
    return "other"


def run_once(cfg: Config, data: Path, date: str, rate: str) -> dict[str, Any]:
    """One lap of the capture through ``cfg``'s topology: work ns per message by role."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        cmd = [sys.executable, "-P", "-m", "ops.cli.main", *cfg.command(), "--data", str(data), "--capture-date", date,
               "--rate", rate, "--no-loop", "-q", "--json", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.is_file():
            said = (proc.stdout + proc.stderr).splitlines()
            notes = [x for x in said if " INFO " not in x]
            why = next((x for w in ("died", "failed", "Error") for x in notes if w in x), said[-1] if said else "")
            raise PipelineRunFailed(f"{' '.join(cfg.command())}: exit {proc.returncode}: {why.strip()}")
        report = json.loads(out.read_text())
    costs = report.get("cpu") or {}
    messages = max((int(c["messages"]) for c in costs.values()), default=0)
    if not messages:
        raise PipelineRunFailed(f"{' '.join(cfg.command())}: the run received no messages")
    cpu = {"handler": 0.0, "leader": 0.0, "other": 0.0}
    work = dict(cpu)
    for name, c in costs.items():
        cpu[_role(name)] += float(c["cpu_ns"])
        work[_role(name)] += float(c.get("work_cpu_ns") or 0.0)
    market = report.get("market") or {}
    return {"partitions": cfg.partitions, "mode": cfg.mode, "messages": messages, "run_id": report["run_id"],
            "total_ns_per_msg": sum(cpu.values()) / messages, **{f"{k}_ns_per_msg": v / messages for k, v in cpu.items()},
            "work_total_ns_per_msg": sum(work.values()) / messages,
            **{f"work_{k}_ns_per_msg": v / messages for k, v in work.items()},
            "windows": market.get("windows"), "complete": market.get("complete")}


def run_pipeline_bench(partitions: list[int], data: Path, date: str, rate: str, rounds: int,
                       progress: Any = None) -> list[dict[str, Any]]:
    """Every (partitions, mode) once a round, ``rounds`` rounds; medians per point with each
    run's figures kept (``runs``) and the increase over off (ns per message, and its share of
    the pipeline's CPU). A run that fails is run again once (its error kept in ``failed``);
    a second failure ends the comparison."""
    configs = [Config(p, m) for p in partitions for m in MODES]
    runs: dict[Config, list[dict[str, Any]]] = {c: [] for c in configs}
    failed: dict[Config, list[str]] = {c: [] for c in configs}
    for r in range(rounds):
        for c in configs:
            try:
                runs[c].append(run_once(c, data, date, rate))
            except PipelineRunFailed as e:  # a loaded host can starve a partition past its heartbeat: once more
                failed[c].append(str(e))
                if progress:
                    progress(f"round {r + 1}/{rounds}: {e}; running it again")
                runs[c].append(run_once(c, data, date, rate))
            if progress:
                progress(f"round {r + 1}/{rounds}: {c.partitions} partition(s), {c.mode}: "
                         f"{runs[c][-1]['total_ns_per_msg']:,.1f} ns per message")
    rows = []
    for c in configs:
        row: dict[str, Any] = {"partitions": c.partitions, "mode": c.mode, "runs": runs[c], "failed": failed[c]}
        for k in [f"{w}{x}_ns_per_msg" for w in ("", "work_") for x in ("total", "handler", "leader", "other")]:
            row[k] = float(np.median([x[k] for x in runs[c]]))
        row["complete"] = None if c.mode == "off" else all(x["windows"] == x["complete"] for x in runs[c])
        rows.append(row)
    off = {r["partitions"]: r for r in rows if r["mode"] == "off"}
    for r in rows:
        o = off[r["partitions"]]
        r["over_off_ns_per_msg"] = r["total_ns_per_msg"] - o["total_ns_per_msg"]
        r["over_off_share"] = r["over_off_ns_per_msg"] / r["total_ns_per_msg"]  # the statistics' share of it all
        # the same counting the handler and leader partitions only: the partitions the
        # statistics change, without the others' polling, which moves from run to run
        r["own_over_off_ns_per_msg"] = (r["handler_ns_per_msg"] + r["leader_ns_per_msg"]
                                        - o["handler_ns_per_msg"] - o["leader_ns_per_msg"])
        r["own_over_off_share"] = r["own_over_off_ns_per_msg"] / r["total_ns_per_msg"]
    return rows
