"""The nightly latency job on a real local SparkSession, against run directories written
with the run record contract: exact breakdowns (checked against numpy on the same files),
the n/a rule, sustainability and sweeps, regressions against an earlier night, and a corrupt
record file skipped and reported by name."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from omdp.metrics.definitions import RUN_RECORD_HOPS as ALL_HOPS
from ops.spark.common.data_layout import DataLayout
from ops.spark.common.report_schemas import PERCENTILES
from ops.spark.latency.latency_job import LatencyResult, run_latency
from ops.spark.latency.synthetic_runs import DEFAULT_HOP_MEDIANS_NS, SyntheticRun, write_synthetic_run
from spark_test_session import local_spark

pytestmark = pytest.mark.full  # a Spark session

NIGHT1, NIGHT2 = "2026-03-01", "2026-03-02"
RATES = (0.5, 1.0, 2.0, 4.0)


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-latency-job") as s:
        yield s


def _sweep(layout: DataLayout, date: str, fh_scale: float, seed: int) -> None:
    hops = dict(DEFAULT_HOP_MEDIANS_NS, fh=DEFAULT_HOP_MEDIANS_NS["fh"] * fh_scale)
    for i, rate in enumerate(RATES):
        write_synthetic_run(
            layout.runs(date),
            SyntheticRun(
                run_id=f"sweep-{rate:g}x",
                date=date,
                rate_x=rate,
                duration_s=0.4,
                sweep_id=f"sweep-{date}",
                sample_every=8 if rate == 1.0 else 40,
                # 2x loses messages; 4x cannot keep up: its queue (and latency) grows.
                missed_ratio=0.001 if rate == 2.0 else 0.0,
                backlog_ns_per_s=5e6 if rate == 4.0 else 0.0,
                hop_medians_ns=hops,
                seed=seed + i,
            ),
        )


@pytest.fixture(scope="module")
def nights(spark, tmp_path_factory) -> tuple[DataLayout, LatencyResult, LatencyResult]:
    layout = DataLayout(tmp_path_factory.mktemp("omdp-data"))
    _sweep(layout, NIGHT1, 1.0, seed=10)
    _sweep(layout, NIGHT2, 1.6, seed=20)
    # Night 2 also has a run whose samples file was cut short by a crash, and one where the
    # decision engine did not stamp every sample (de_in = de_out = 0 on some rows).
    bad = write_synthetic_run(layout.runs(NIGHT2), SyntheticRun("crashed", NIGHT2, 1.0, duration_s=0.2, seed=3))
    data = (bad / "samples.parquet").read_bytes()
    (bad / "samples.parquet").write_bytes(data[: len(data) // 2])
    partial = write_synthetic_run(
        layout.runs(NIGHT2),
        SyntheticRun("partial-stamps", NIGHT2, 1.0, duration_s=0.3, config="vega-shm", sample_every=16, seed=4),
    )
    t = pq.read_table(partial / "samples.parquet")
    unstamped = np.arange(t.num_rows) % 3 == 0
    for col in ("de_in", "de_out"):
        values = np.where(unstamped, 0, t.column(col).to_numpy())
        t = t.set_column(t.schema.get_field_index(col), col, pa.array(values, pa.int64()))
    pq.write_table(t, partial / "samples.parquet")
    first = run_latency(spark, layout, NIGHT1)
    second = run_latency(spark, layout, NIGHT2)
    return layout, first, second


def _table(layout: DataLayout, date: str, name: str) -> list[dict]:
    return pq.read_table(layout.reports(date) / f"{name}.parquet").to_pylist()


def _expected(run_dir: Path) -> dict[str, dict]:
    """The breakdown of one run computed with numpy straight from its files."""
    s = pq.read_table(run_dir / "samples.parquet").to_pydict()
    s = {k: np.asarray(v) for k, v in s.items()}
    i = pq.read_table(run_dir / "intended.parquet").to_pydict()
    i = {k: np.asarray(v) for k, v in i.items()}
    out = {}
    for hop in ALL_HOPS:
        src = s if hop.source == "samples.parquet" else i
        a, b = src[hop.start], src[hop.end]
        lat = (b - a)[(a > 0) & (b > 0)]
        out[hop.table_name] = {
            "count": lat.size,
            "mean_ns": lat.mean(),
            "min_ns": lat.min(),
            "max_ns": lat.max(),
            **{p.name: (np.percentile(lat, 100 * p.p) if lat.size >= p.min_samples else None) for p in PERCENTILES},
        }
    return out


def test_breakdown_equals_numpy_on_the_same_records(nights) -> None:
    layout, _, _ = nights
    rows = _table(layout, NIGHT2, "latency_breakdown")
    checked = 0
    for run_id in ("sweep-1x", "sweep-4x", "partial-stamps"):
        want = _expected(layout.runs(NIGHT2) / run_id)
        got = {r["hop"]: r for r in rows if r["run_id"] == run_id}
        assert set(got) == {h.table_name for h in ALL_HOPS}
        for hop, w in want.items():
            g = got[hop]
            assert g["count"] == w["count"], (run_id, hop)
            assert g["min_ns"] == w["min_ns"] and g["max_ns"] == w["max_ns"], (run_id, hop)
            assert g["mean_ns"] == pytest.approx(w["mean_ns"], rel=1e-12), (run_id, hop)
            for p in PERCENTILES:
                if w[p.name] is None:
                    assert g[p.name] is None, (run_id, hop, p.name)
                else:
                    assert g[p.name] == pytest.approx(w[p.name], rel=1e-12), (run_id, hop, p.name)
            checked += 1
    assert checked == 3 * len(ALL_HOPS)


def test_tail_percentiles_need_ten_over_one_minus_p_samples(nights) -> None:
    layout, _, _ = nights
    rows = {(r["run_id"], r["hop"]): r for r in _table(layout, NIGHT2, "latency_breakdown")}
    fh = rows[("sweep-1x", "fh")]
    # 0.4 s at 24,000 packets/s, ~6 messages each, 1 in 8 sampled: ~7,000 samples.
    assert 1_000 <= fh["count"] < 10_000
    assert fh["p99_ns"] is not None and fh["p999_ns"] is None and fh["p9999_ns"] is None
    lag = rows[("sweep-1x", "send_lag")]  # one row per packet copy: 19,200
    assert lag["count"] == 2 * 9_600 and lag["p999_ns"] is not None and lag["p9999_ns"] is None


def test_unstamped_hops_are_left_out_not_counted_as_zero(nights) -> None:
    layout, _, _ = nights
    rows = {r["hop"]: r for r in _table(layout, NIGHT2, "latency_breakdown") if r["run_id"] == "partial-stamps"}
    n = rows["fh"]["count"]
    assert rows["de"]["count"] == n - (n + 2) // 3
    assert rows["to_de"]["count"] == rows["to_mc"]["count"] == rows["de"]["count"]
    assert rows["e2e_fh"]["count"] == n
    assert rows["de"]["min_ns"] > 0


def test_sustainability_of_each_rate_and_the_sweep(nights) -> None:
    layout, _, _ = nights
    runs = {r["run_id"]: r for r in _table(layout, NIGHT1, "latency_runs")}
    # 0.5x has too few samples for a p99 against the 1 ms bound: unknown, never yes
    assert [runs[f"sweep-{x:g}x"]["sustainable"] for x in RATES] == [None, True, False, False]
    assert "p99 latency from intended is n/a" in runs["sweep-0.5x"]["reasons"]
    assert runs["sweep-2x"]["missed_ratio"] == pytest.approx(0.001, rel=0.01)
    assert runs["sweep-2x"]["latency_growing"] is False
    grow = runs["sweep-4x"]
    assert grow["latency_growing"] is True and grow["growth_ratio"] > 2
    assert runs["sweep-1x"]["achieved_ratio"] == 1.0 and runs["sweep-1x"]["growth_ratio"] == pytest.approx(1, abs=0.1)
    (sweep,) = _table(layout, NIGHT1, "latency_sweeps")
    assert sweep["runs"] == 4 and sweep["max_sustainable_rate_x"] == 1.0 and sweep["first_unsustainable_rate_x"] == 2.0


def test_regression_against_the_earlier_night_is_flagged(nights) -> None:
    layout, first, second = nights
    assert first.flagged == []  # nothing earlier to compare with
    flagged = {(r["hop"], r["metric"], r["rate_x"]) for r in second.flagged}
    # FH got 60% slower: its mean and p99 regress at every rate, and so does end to end.
    for rate in RATES:
        assert ("fh", "mean_ns", rate) in flagged
        assert ("e2e_fh", "mean_ns", rate) in flagged
    assert not any(hop in ("to_de", "to_mc", "send_lag") for hop, _, _ in flagged)
    compared = _table(layout, NIGHT2, "latency_regressions")
    fh = next(r for r in compared if r["hop"] == "fh" and r["metric"] == "mean_ns" and r["rate_x"] == 1.0)
    assert fh["baseline_date"] == NIGHT1 and fh["change_ratio"] == pytest.approx(0.6, abs=0.05)


def test_corrupt_record_file_is_reported_by_name_and_skipped(nights) -> None:
    layout, _, second = nights
    skipped = _table(layout, NIGHT2, "latency_skipped_files")
    assert [Path(r["path"]).parts[-2:] for r in skipped] == [("crashed", "samples.parquet")]
    assert "unreadable Parquet" in skipped[0]["error"]
    assert second.runs == 5
    assert "crashed" not in {r["run_id"] for r in _table(layout, NIGHT2, "latency_runs")}
