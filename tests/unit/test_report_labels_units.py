"""The nightly report's labels and units: two runs of one configuration and rate get
distinct bar labels, and the regression table shows latencies in µs like the rest of the
page (its header says so), the sustainable rate in x."""
from __future__ import annotations

from ops.spark.report.report_html import regression_display
from ops.spark.report.report_plots import run_labels


def test_two_runs_of_one_config_and_rate_are_told_apart() -> None:
    rows = [{"run_id": run, "config": "fused", "rate_x": 2.0, "hop": hop}
            for run in ("20080204T100000p1a", "20080204T110000p2b") for hop in ("fh", "de")]
    labels = run_labels(rows)
    assert len(set(labels.values())) == 2
    for run, text in labels.items():
        assert run in text and "fused 2x" in text


def test_regression_latencies_show_in_microseconds() -> None:
    rows = [
        {"kind": "latency", "metric": "p99_ns", "value": 12_345.0, "baseline_value": 6_000.0, "flagged": True},
        {"kind": "latency", "metric": "mean_ns", "value": None, "baseline_value": 900.0, "flagged": False},
        {"kind": "sustainable_rate", "metric": "max_sustainable_rate_x", "value": 3.0, "baseline_value": 4.0,
         "flagged": True},
    ]
    shown = regression_display(rows)
    assert shown[0]["metric"] == "p99 µs" and shown[0]["value"] == 12.345 and shown[0]["baseline_value"] == 6.0
    assert shown[1]["metric"] == "mean µs" and shown[1]["value"] is None and shown[1]["baseline_value"] == 0.9
    assert shown[2] == rows[2]
    assert rows[0]["value"] == 12_345.0, "the stored rows are left as they are"


def test_the_backtest_section_writes_its_figures_like_the_rest_of_the_page(tmp_path) -> None:
    """Counts with thousands separators, CPU seconds to two places, shares to three: the
    backtest tables once printed raw floats (1.9969836150000297)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ops.spark.backtest.backtest_job import BACKTEST_CONFIGS_SCHEMA
    from ops.spark.report.backtest_report import NIGHT_DATES_SCHEMA, backtest_section

    pq.write_table(pa.Table.from_pylist([{"date": "2026-12-01", "read_as": "run date", "capture_dates": "2008-02-04",
                                          "runs_made": 1, "runs_of_captures": "{}"}], schema=NIGHT_DATES_SCHEMA),
                   tmp_path / "night_dates.parquet")
    row = {f.name: None for f in BACKTEST_CONFIGS_SCHEMA}
    row.update(date="2008-02-04", config="default", messages=3_363_902, signals=63, nbbo_changes=1_503_571,
               engine_cpu_s=1.9969836150000297, precision=1.0, recall=0.8043478260869565)
    pq.write_table(pa.Table.from_pylist([row], schema=BACKTEST_CONFIGS_SCHEMA), tmp_path / "backtest_configs.parquet")
    page = backtest_section(tmp_path)
    for shown in ("<td>3,363,902</td>", "<td>1,503,571</td>", "<td>2.00</td>", "<td>0.804</td>", "<td>n/a</td>"):
        assert shown in page, shown
    assert "1.99698" not in page and "feeds tables those captures" in page
