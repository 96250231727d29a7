"""The latency collector as an operator in a partition's C loop: every batch reaches the C
collector, live figures land in the run's stats segment, samples.parquet is written at the
end, and bad batches are counted without stopping the partition. Runs under ASan/UBSan in CI."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omdp.metrics.latency_operator import (
    KIND,
    active_latency_collectors,
    finish_latency_collectors,
    register_latency_collector,
)
from omdp.metrics.run_files import read_run_file
from omdp.metrics.sample_identity import IdentityLayout
from omdp.metrics.stats_segment import StatsReader, StatsWriter
from omdp.operator import Operator, OperatorContext
from omdp.plan import Plan, build_plan
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.partition import Partition, PartitionError
from omdp.seq_ops import SEQ, register_seq_ops, seq_record_dtype
from omdp.topology.load import parse_topology

RECORD = 96


class Corrupter(Operator):
    """Passes batches on with the second record's length broken every 4th batch."""

    def __init__(self, p: Any, ctx: OperatorContext) -> None:
        super().__init__(p, ctx)
        self.n = 0

    def process_batch(self, records: np.ndarray, port: str) -> None:
        self.n += 1
        b = bytearray(records.tobytes())
        if self.n % 4 == 0 and len(b) >= 2 * RECORD:
            b[RECORD + 2 : RECORD + 4] = (12).to_bytes(2, "little")
        self.emit("out", b)


def registry() -> Registry:
    reg = Registry()
    register_seq_ops(reg)
    reg.add(OperatorKind("corrupter", (Port("in", SEQ.name),), (Port("out", SEQ.name),), Corrupter, native=False))
    identity = IdentityLayout.from_dtype(seq_record_dtype(RECORD), msg_seq="seq", key="source")
    register_latency_collector(reg, SEQ.name, identity)
    return reg


REG = registry()


def plan_of(mc_params: dict[str, Any], middle: str | None = None) -> Plan:
    ops = {"src": {"kind": "seq_source", "replicas": 2, "params": {"count": 3000, "batch": 10, "record_size": RECORD}},
           "mc": {"kind": KIND, "params": mc_params}}
    edges = [("src.out", "mc.in")]
    if middle:
        ops["mid"] = {"kind": middle}
        edges = [("src.out", "mid.in"), ("mid.out", "mc.in")]
    doc = {"name": "t", "operators": ops, "partitions": {"p": {"operators": list(ops)}},
           "channel": {"wait": "spin-yield"}, "edges": [{"from": a, "to": b} for a, b in edges]}
    return build_plan(parse_topology(doc), REG)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / f"t{os.getpid()}{uuid.uuid4().hex[:6]}"
    d.mkdir()
    yield d
    finish_latency_collectors()


def test_collector_operator_in_a_fused_partition(run_dir: Path) -> None:
    plan = plan_of({"select": "every_n", "sample_every": 10, "publish_interval_ms": 0})
    with StatsWriter.create(run_dir.name) as owner, StatsReader(run_dir.name) as r:
        p = Partition(plan, "p", REG, run_dir)
        assert p.run() == "ended"
        rep = p.operator_report()["mc"]
        p.close()
        assert rep["records"] == 6000 and rep["samples"] == 600 and rep["bad_batches"] == 0
        # seq records carry only `intended`: end to end from intended is measured, the rest missing
        live = r.latency(None)
        assert live["e2e_intended"]["count"] == 600 and live["fh"]["count"] == 0
        assert r.missing_stamps()["fh"] == 600
        entry = next(o for o in r.operators() if o["name"] == "mc")
        assert entry["kind"] == "collector" and entry["counters"]["samples"] == 600
        assert finish_latency_collectors() == []  # closing the partition wrote samples.parquet
        assert (run_dir / "samples.parquet").is_file()
        samples = read_run_file(run_dir, "samples.parquet")
        assert samples.num_rows == 600
        assert sorted(set(samples.column("underlying_id").to_pylist())) == [0, 1]  # the two sources
        seqs = np.array(samples.column("msg_seq").to_pylist())
        assert np.all(np.diff(samples.column("mc_in").to_numpy()) >= 0) and len(set(seqs)) > 100
        assert {o["name"]: o for o in r.operators()}["mc"]["state"] == "closed"
        owner.close()


def test_bad_batches_are_counted_and_the_partition_goes_on(run_dir: Path) -> None:
    plan = plan_of({"select": "every_n", "sample_every": 1, "live": False}, middle="corrupter")
    p = Partition(plan, "p", REG, run_dir)
    assert p.run() == "ended"
    rep = p.operator_report()["mc"]
    collector = active_latency_collectors()["mc"]
    p.close()
    batches = 600  # 2 sources x 3000 records / 10 per batch
    assert rep["bad_batches"] == batches // 4
    # a broken batch keeps its first record; the other 9 are skipped
    assert rep["records"] == 6000 - 9 * (batches // 4)
    assert collector.counters()["bad_batches"] == batches // 4


def test_paper_method_through_the_operator(run_dir: Path) -> None:
    plan = plan_of({"select": "every_n", "sample_every": 1, "method": "middle", "collect": 1500, "report": 1000,
                    "live": False})
    p = Partition(plan, "p", REG, run_dir)
    assert p.run() == "ended"
    c = active_latency_collectors()["mc"]
    p.close()  # writes samples.parquet
    assert c.complete and c.summary()["e2e_intended"]["count"] == 1000
    assert read_run_file(run_dir, "samples.parquet").schema.metadata[b"omdp.report_rows"] == b"250:1250"


def test_one_collector_per_run(run_dir: Path) -> None:
    ops = {"src": {"kind": "seq_source", "params": {"count": 10}}, "mc": {"kind": KIND, "replicas": 2}}
    doc = {"name": "t", "operators": ops, "partitions": {"p": {"operators": ["src", "mc"]}},
           "edges": [{"from": "src.out", "to": "mc.in"}]}
    plan = build_plan(parse_topology(doc), REG)
    with pytest.raises((PartitionError, ValueError), match="one latency collector per run"):
        Partition(plan, "p", REG, run_dir)
