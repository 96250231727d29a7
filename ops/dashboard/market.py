"""The dashboard's market activity (docs/market_stats.md): the latest windows the run's
market_sink summarized in market_live.json - top underlyings, each exchange's share of
quotes and contracts, completeness - for ``/api/v1/market``, the page's market panel and
Prometheus gauges. A run without market statistics says so (``available`` false)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from ops.dashboard.source import DashboardSource
from ops.market.sink import LIVE_FILE


def market_view(source: DashboardSource, windows: int = 10) -> dict[str, Any]:
    """The newest ``windows`` windows, newest first."""
    run_dir = source.run_status().get("run_dir") or ""
    path = Path(run_dir) / LIVE_FILE if run_dir else None
    if path is None or not path.is_file():
        return {"available": False, "window_ms": None, "windows": []}
    try:
        live = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"available": False, "window_ms": None, "windows": []}
    return {"available": True, "window_ms": live.get("window_ms"), "windows": live.get("windows", [])[::-1][:windows]}


def market_metrics(source: DashboardSource) -> Iterator[Metric]:
    """Gauges of the newest market window (none when the run has no market statistics)."""
    view = market_view(source, 1)
    if not view["windows"]:
        return
    w = view["windows"][0]
    for name, doc, value in (
        ("omdp_market_window_messages", "Messages in the newest market window", w["messages"]),
        ("omdp_market_window_complete", "1 when the newest market window heard every partition", int(w["complete"])),
        ("omdp_market_window_start_ms", "Start of the newest market window, ms of the trading day", w["start_ms"]),
    ):
        g = GaugeMetricFamily(name, doc)
        g.add_metric([], value)
        yield g
    share = GaugeMetricFamily("omdp_market_exchange_quote_share", "Each exchange's share of the newest window's quotes",
                              labels=["exchange"])
    for e in w["exchanges"]:
        share.add_metric([e["exchange"]], e["quote_share"])
    yield share
    top = GaugeMetricFamily("omdp_market_underlying_messages", "Messages of the newest window's top underlyings",
                            labels=["underlying"])
    for u in w["top_underlyings"]:
        top.add_metric([str(u["underlying"])], u["messages"])
    yield top
