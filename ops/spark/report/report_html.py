"""The night's report page: ``reports/<date>/index.html`` with the PNG figures beside it,
rendered from the summary tables already written there (so a page can be re-rendered
without Spark). Latencies show in the unit that reads best (``omdp.units``); a null
percentile shows as n/a. The page fits 1,400 px: headings wrap and long names break; a
figure with nothing to draw is left out, its table saying why.
"""
from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from omdp.atomic_files import write_text_atomic
from ops.spark.common.report_tables import read_rows
from ops.spark.report.backtest_report import backtest_section
from ops.spark.report.market_report import market_section
from ops.spark.report.report_cells import BOOL, FLOAT, INT, KEY, LINE, PCT, RATIO, TEXT, US, html_table
from ops.spark.report.report_plots import plot_breakdown, plot_messages_per_packet, plot_rate_profile, plot_sweeps

TABLES = (
    "feeds_day",
    "feeds_rate_profile",
    "feeds_rate_per_second",
    "feeds_messages_per_packet",
    "feeds_category_mix",
    "feeds_top_underlyings",
    "feeds_files",
    "feeds_skipped_files",
    "latency_breakdown",
    "latency_runs",
    "latency_sweeps",
    "latency_regressions",
    "latency_ingest",
    "latency_signals",
    "latency_skipped_files",
)


def regression_display(rows: list[dict]) -> list[dict]:
    """Regression rows as the page shows them: a latency metric (``p99_ns``) in µs like the
    rest of the page (``p99 µs``), the sustainable rate in x as it is."""
    out = []
    for r in rows:
        if r.get("metric", "").endswith("_ns"):
            r = {**r, "metric": r["metric"][:-3] + " µs",
                 "value": None if r["value"] is None else r["value"] / 1_000,
                 "baseline_value": None if r["baseline_value"] is None else r["baseline_value"] / 1_000}
        out.append(r)
    return out


def _img(path: Path | None, alt: str) -> str:
    """The figure, or nothing when it had nothing to draw (no empty panel)."""
    return "" if path is None else f"<img src='{html.escape(path.name)}' alt='{html.escape(alt)}'>"


_STYLE = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1400px; box-sizing: border-box; color: #222; }
.table { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.8em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.4em; text-align: right; overflow-wrap: anywhere; }
th { max-width: 9em; vertical-align: bottom; }
td { max-width: 24em; }
th { background: #f0f0f0; }
td:first-child, th:first-child { text-align: left; }
.flag { color: #b00; font-weight: bold; }
.ok { color: #070; }
.empty { color: #777; font-style: italic; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""


HEADLINE_NOTE = ("Latency from intended counts from the replayer's planned send time, so it is safe from coordinated "
                 "omission; the difference from fh_in is queueing before the feed handler (replayer lag, ring or "
                 "socket queue).")


def headline_rows(breakdown: list[dict]) -> list[dict]:
    """Per run: end to end from intended (the honest figure, first) beside from fh_in, from
    the night's latency_breakdown rows (hops ``e2e_intended`` and ``e2e_fh``)."""
    runs: dict[str, dict] = {}
    for r in breakdown:
        if r.get("hop") not in ("e2e_intended", "e2e_fh"):
            continue
        row = runs.setdefault(r["run_id"], {"run_id": r["run_id"], "config": r.get("config"), "rate_x": r.get("rate_x")})
        tag = "intended" if r["hop"] == "e2e_intended" else "fh"
        for k in ("p50_ns", "p99_ns"):
            row[f"{tag}_{k}"] = r.get(k)
    return list(runs.values())


def render_report(reports_dir: Path, date: str) -> Path:
    """Draw the figures and write ``index.html`` in ``reports_dir``; return the page."""
    t = {name: read_rows(reports_dir, name) for name in TABLES}
    rate_png = plot_rate_profile(t["feeds_rate_per_second"], t["feeds_rate_profile"], reports_dir / "rate_profile.png")
    mpp_png = plot_messages_per_packet(t["feeds_messages_per_packet"], reports_dir / "messages_per_packet.png")
    breakdown_png = plot_breakdown(t["latency_breakdown"], reports_dir / "latency_breakdown.png")
    sweeps_png = plot_sweeps(t["latency_runs"], reports_dir / "sweeps.png")

    regressions = regression_display(t["latency_regressions"])
    flagged = [r for r in regressions if r["flagged"]]
    skipped = t["feeds_skipped_files"] + t["latency_skipped_files"]
    verdict = (
        f"<p class='flag'>{len(flagged)} regression(s) flagged</p>" if flagged else "<p class='ok'>no regression flagged</p>"
    )
    day_cols = [
        ("date", "capture date", TEXT),
        ("lines", "lines", INT), ("files", "files", INT), ("files_skipped", "files skipped", INT),
        ("packets", "packets", INT), ("messages", "messages", INT), ("messages_per_packet", "messages/packet", FLOAT),
        ("bad_packets", "bad packets", INT), ("bad_checksums", "of them bad checksums", INT), ("gaps", "gaps", INT),
        ("gap_messages", "messages in gaps", INT), ("span_s", "span s", FLOAT),
        ("mean_pps", "mean packets/s", FLOAT), ("peak_1s_pps", "peak 1 s packets/s", FLOAT),
        ("peak_100ms_pps", "peak 100 ms packets/s", FLOAT), ("peak_10ms_pps", "peak 10 ms packets/s", FLOAT),
        ("mean_mps", "mean messages/s", FLOAT), ("peak_100ms_mps", "peak 100 ms messages/s", FLOAT),
        ("peak_10ms_mps", "peak 10 ms messages/s", FLOAT),
        ("rate_x", "day's 1x in units of 24,000 packets/s (mean)", FLOAT), ("peak_1s_rate_x", "peak 1 s in x", FLOAT),
    ]
    lat_cols = [
        ("run_id", "run", TEXT), ("config", "config", TEXT), ("rate_x", "rate x", FLOAT), ("hop", "hop", TEXT),
        ("count", "samples", INT), ("mean_ns", "mean", US), ("p50_ns", "p50", US), ("p90_ns", "p90", US),
        ("p99_ns", "p99", US), ("p999_ns", "p99.9", US), ("p9999_ns", "p99.99", US), ("max_ns", "max", US),
    ]
    run_cols = [
        ("run_id", "run", TEXT), ("sweep_id", "sweep", TEXT), ("topology", "topology", TEXT), ("config", "config", TEXT),
        ("rate_x", "rate x", FLOAT), ("target_pps", "target packets/s", FLOAT), ("achieved_ratio", "achieved/target", RATIO),
        ("messages_per_packet", "messages/packet", FLOAT), ("missed_ratio", "missed", PCT), ("samples", "samples", INT),
        ("e2e_intended_p50_ns", "p50 from intended", US), ("first_third_p50_ns", "first third p50", US),
        ("last_third_p50_ns", "last third p50", US), ("latency_growing", "latency growing", BOOL),
        ("sustainable", "sustainable", BOOL), ("reasons", "why not", TEXT),
    ]
    reg_cols = [
        ("kind", "kind", TEXT), ("topology", "topology", TEXT), ("config", "config", TEXT), ("rate_x", "rate x", FLOAT),
        ("hop", "hop", TEXT), ("metric", "metric", TEXT), ("value", "tonight", FLOAT),
        ("baseline_date", "baseline night", TEXT), ("baseline_value", "baseline", FLOAT), ("change_ratio", "change", PCT),
        ("flagged", "flagged", BOOL),
    ]
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>omdp nightly {html.escape(date)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>omdp nightly report {html.escape(date)}</h1>",
        f"<p>Generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC. Latencies in the unit that reads best; "
        "a percentile with fewer than 10/(1-p) samples is n/a.</p>",
        verdict,
        html_table(flagged, reg_cols) if flagged else "",
        "<h2>Headline: latency from intended beside from fh_in</h2>",
        f"<p>{html.escape(HEADLINE_NOTE)}</p>",
        html_table(headline_rows(t["latency_breakdown"]),
               [("run_id", "run", TEXT), ("config", "config", TEXT), ("rate_x", "rate x", FLOAT),
                ("intended_p50_ns", "from intended p50", US), ("intended_p99_ns", "from intended p99", US),
                ("fh_p50_ns", "from fh_in p50", US), ("fh_p99_ns", "from fh_in p99", US)], "no runs this night"),
        "<h2>Files skipped</h2>",
        html_table(skipped, [("job", "job", TEXT), ("path", "file", TEXT), ("action", "action", TEXT), ("error", "why", TEXT)]),
        "<h2>Feeds</h2>",
        html_table(t["feeds_day"], day_cols, "no captures this night"),
        _img(rate_png, "rate profile"),
        "<h3>Rate profile</h3>",
        html_table(
            t["feeds_rate_profile"],
            [("date", "capture date", TEXT), ("line", "line", LINE), ("window_ms", "window ms", KEY),
             ("windows", "windows", INT),
             ("mean_pps", "mean packets/s", FLOAT), ("peak_pps", "peak packets/s", FLOAT),
             ("mean_mps", "mean messages/s", FLOAT), ("peak_mps", "peak messages/s", FLOAT)],
        ),
        _img(mpp_png, "messages per packet"),
        "<h3>Category mix</h3>",
        html_table(t["feeds_category_mix"], [("date", "capture date", TEXT), ("category", "category", TEXT),
                                         ("category_name", "name", TEXT), ("messages", "messages", INT),
                                         ("share", "share", PCT)]),
        "<h3>Top underlyings</h3>",
        html_table(t["feeds_top_underlyings"], [("date", "capture date", TEXT), ("rank", "rank", KEY),
                                            ("underlying", "underlying", TEXT), ("messages", "messages", INT),
                                            ("quotes", "quotes", INT),
                                            ("last_sales", "last sales", INT), ("share", "share", PCT)]),
        "<h3>Capture files</h3>",
        html_table(t["feeds_files"], [("date", "capture date", TEXT), ("path", "file", TEXT), ("line", "line", KEY), ("copy", "copy", TEXT), ("part", "part", KEY),
                                  ("feed", "feed", TEXT), ("bytes", "bytes", INT), ("packets", "packets", INT),
                                  ("messages", "messages", INT), ("bad_packets", "bad packets", INT),
                                  ("bad_checksums", "of them bad checksums", INT), ("gaps", "gaps", INT),
                                  ("gap_messages", "messages in gaps", INT), ("status", "status", TEXT)]),
        "<h2>Latency</h2>",
        _img(breakdown_png, "latency breakdown"),
        html_table(t["latency_breakdown"], lat_cols, "no runs this night"),
        "<h3>Runs and sustainability</h3>",
        _img(sweeps_png, "sweeps"),
        html_table(t["latency_runs"], run_cols, "no runs this night"),
        "<h3>Sweeps</h3>",
        html_table(t["latency_sweeps"], [("sweep_id", "sweep", TEXT), ("topology", "topology", TEXT), ("config", "config", TEXT),
                                     ("runs", "runs", INT), ("min_rate_x", "lowest x", FLOAT), ("max_rate_x", "highest x", FLOAT),
                                     ("first_unsustainable_rate_x", "first unsustainable x", FLOAT),
                                     ("max_sustainable_rate_x", "sustainable up to x", FLOAT)]),
        "<h3>Comparison with earlier nights</h3>",
        html_table(regressions, reg_cols, "no earlier night with runs to compare with"),
        "<h3>Ingest per line</h3>",
        html_table(t["latency_ingest"], [("run_id", "run", TEXT), ("line", "line", KEY), ("packets_received", "packets", INT),
                                     ("messages_received", "messages", INT), ("messages_missed", "missed", INT),
                                     ("packets_duplicate", "duplicates", INT), ("decode_errors", "decode errors", INT)]),
        "<h3>Signals</h3>",
        html_table(t["latency_signals"], [("run_id", "run", TEXT), ("kind", "kind", TEXT), ("signals", "signals", INT)]),
        backtest_section(reports_dir),
        market_section(reports_dir),
        "</body></html>",
    ]
    page = reports_dir / "index.html"
    write_text_atomic(page, "\n".join(parts))
    return page
