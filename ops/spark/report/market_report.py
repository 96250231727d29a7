"""The report page's "Market activity" section: the market job's windows of the night's
captures (ops/spark/market/market_job.py) and how the live runs' merged windows agree with
them (empty when the night wrote no such tables)."""
from __future__ import annotations

from pathlib import Path

from ops.spark.common.report_tables import read_rows
from ops.spark.report.report_cells import FLOAT, INT, KEY, TEXT, html_table


def market_section(reports_dir: Path) -> str:
    """The section's HTML."""
    windows = read_rows(reports_dir, "market_windows")
    recon = read_rows(reports_dir, "market_reconciliation")
    if not windows and not recon:
        return ""
    bad = [r for r in recon if r["status"] != "ok"]
    return "\n".join([
        "<h2>Market activity</h2>",
        f"<p class='flag'>{len(bad)} live run(s) whose market windows differ from the offline ones</p>" if bad
        else "<p class='ok'>every live run's market windows equal the offline ones</p>" if recon else "",
        "<p>Per window of event time, computed offline from the capture by the rules of the live market statistics "
        "(docs/market_stats.md): every message counts once per dimension.</p>",
        html_table(windows[:600], [
            ("date", "capture", TEXT), ("start", "window start", TEXT), ("messages", "messages", INT),
            ("quotes", "quotes", INT), ("trades", "trades", INT), ("contracts", "contracts", INT),
            ("notional", "notional", FLOAT), ("nbbo_changes", "NBBO changes", INT),
            ("underlyings", "underlyings", INT), ("series", "series", INT),
            ("top_underlying", "busiest underlying", KEY), ("top_underlying_messages", "its messages", INT),
            ("quote_shares", "exchanges' quote shares", TEXT)], "no capture"),
        "<h3>Live runs' windows against these</h3>",
        html_table(recon, [
            ("run_id", "run", TEXT), ("run_date", "filed under", TEXT), ("capture_date", "capture", TEXT),
            ("windows", "windows", INT), ("keys", "keys", INT), ("equal", "equal", INT), ("differ", "differ", INT),
            ("offline_only", "offline only", INT), ("live_only", "live only", INT),
            ("messages_differ", "windows whose messages differ", INT),
            ("incomplete_windows", "incomplete windows", INT), ("status", "status", TEXT)],
            "no --no-loop run of these captures with market statistics"),
    ])
