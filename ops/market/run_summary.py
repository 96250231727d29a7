"""The market windows of a finished run summarized for its report (``omdp run --json``'s
``market``, report.json and a line of the printed report): how many windows, whether every
one is complete, what was counted, lost and late, the keys per dimension and the run's
busiest underlyings and exchanges. Read from market_windows.parquet, which the sink writes
at the end of the run."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ops.market.records import DIMS
from ops.market.sink import WINDOWS_FILE
from ops.market.window_table import live_tables

TOP = 5


def market_summary(run_dir: Path) -> dict[str, Any] | None:
    """The summary, or None when the run kept no market windows."""
    path = run_dir / WINDOWS_FILE
    if not path.is_file():
        return None
    table = pq.read_table(path)
    aggs, counts, incomplete = live_tables(table)
    ends = table.filter(pc.equal(table.column("kind"), "end"))
    missing = 0
    for m in ends.column("missing_sources").to_pylist():
        missing |= m
    starts = counts.column("start_ms").to_pylist()
    per_dim = {d: aggs.filter(pc.equal(aggs.column("dim"), d)) for d in DIMS}
    und, ex = per_dim["underlying"], per_dim["exchange"]
    und_total: dict[int, int] = {}
    for k, q, t in zip(*(und.column(c).to_pylist() for c in ("key", "quotes", "trades"))):
        und_total[k] = und_total.get(k, 0) + q + t
    ex_quotes: dict[int, int] = {}
    for k, q in zip(ex.column("key").to_pylist(), ex.column("quotes").to_pylist()):
        ex_quotes[k] = ex_quotes.get(k, 0) + q
    quotes = max(sum(ex_quotes.values()), 1)
    return {
        "file": str(path),
        "windows": counts.num_rows,
        "complete": counts.num_rows - incomplete,
        "incomplete": incomplete,
        "missing_sources": missing,
        "first_start_ms": starts[0] if starts else None,
        "last_start_ms": starts[-1] if starts else None,
        "messages": int(pc.sum(counts.column("messages")).as_py() or 0),
        "overflow": int(pc.sum(ends.column("overflow")).as_py() or 0),
        "late": int(pc.sum(ends.column("late")).as_py() or 0),
        "keys": {d: per_dim[d].num_rows for d in DIMS},
        "contracts": int(pc.sum(ex.column("contracts")).as_py() or 0),
        "notional": int(pc.sum(ex.column("notional")).as_py() or 0) / 1e4,
        "top_underlyings": [{"underlying": k, "messages": n} for k, n in
                            sorted(und_total.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]],
        "exchange_quote_share": {chr(k) if 32 < k < 127 else str(k): n / quotes for k, n in sorted(ex_quotes.items())},
    }


def summary_line(m: dict[str, Any]) -> str:
    """The printed report's line."""
    return (f"market windows: {m['windows']:,} ({m['complete']:,} complete, {m['incomplete']:,} incomplete"
            + (f", sources missing {m['missing_sources']:#x}" if m["missing_sources"] else "")
            + f"), {m['messages']:,} messages, {m['late']:,} late, {m['overflow']:,} lost to a full table; keys "
            + ", ".join(f"{n:,} {d}" for d, n in m["keys"].items()) + f"; {m['file']}")
