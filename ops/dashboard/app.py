"""The dashboard's FastAPI app: JSON API ``/api/v1``, ``/metrics``, the live stream and the page.

Read endpoints need no authentication unless the app is given a read token
(``ops.dashboard.access``); the only control endpoints are the replay
service's (``/api/v1/replay/...``), mounted when a replay router is given, and they check
the replay's token themselves (401 without it). Query parameters are validated (422 with
the reason).
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from omdp.metrics.stats_segment import SIGNALS, StatsSegmentError
from ops.dashboard import figures
from ops.dashboard.access import read_token_middleware
from ops.dashboard.api_docs import offline_docs_app
from ops.dashboard.assets import STATIC_PACKAGE, plotly_js, static_dir
from ops.dashboard.market import market_view
from ops.dashboard.models import Ingest, IngestHistory, Latency, LatencyHistory, Operators, RunStatus, Signals, Snapshot
from ops.dashboard.prometheus import metrics_registry
from ops.dashboard.source import DashboardSource, SourceUnavailable
from ops.dashboard.window import WindowError, parse_window
from ops.http_validation import cap_validation_echo

API = "/api/v1"

WindowQuery = Annotated[str | None, Query(description="seconds of the sliding window: '10s', '10', '1m', or 'all' "
                                                      "(the whole run); default 10 s, or all a shorter run has",
                                          examples=["10s"], max_length=32)]
DEFAULT_WINDOW_S = 10
AtQuery = Annotated[int | None, Query(ge=1, description="end of the window, ns since the epoch (default: now; for "
                                                        "a finished run, its end)")]


def _window(src: DashboardSource, text: str | None) -> int | None:
    if text is None:  # the default must answer for a finished run shorter than 10 s
        return min(DEFAULT_WINDOW_S, src.max_window_s)
    try:
        return parse_window(text, src.max_window_s)
    except WindowError as e:
        raise HTTPException(status_code=422, detail=str(e)) from None


def stream_window(request: Request, window: WindowQuery = None) -> int | None:
    """The stream's window, checked as a dependency so a bad one is refused (422) before
    the stream starts."""
    return _window(request.app.state.source, window)


def create_app(source: DashboardSource, replay_router: APIRouter | None = None, read_token: str | None = None
               ) -> FastAPI:
    """The app serving ``source``; mounts ``replay_router`` (the replay service's routes,
    guarded by its token) when given; with ``read_token`` every figure needs it
    (``ops.dashboard.access``). The caller owns the source (starts and closes it)."""
    app = offline_docs_app(
        title="omdp dashboard",
        version="1",
        description="Live per-hop latency, ingest, operators and signals of one omdp run.",
    )
    stopping = threading.Event()
    app.state.source = source
    app.state.stopping = stopping
    replay_control = replay_router is not None
    if read_token is not None:
        app.middleware("http")(read_token_middleware(read_token))
    cap_validation_echo(app)

    @app.exception_handler(SourceUnavailable)
    @app.exception_handler(StatsSegmentError)
    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    @app.get(f"{API}/latency", response_model=Latency, tags=["latency"])
    def get_latency(window: WindowQuery = None, at: AtQuery = None) -> Latency:
        """Per hop (FH, to DE, DE, to MC, end to end from fh_in and from intended): count,
        mean, p50, p90, p99, p99.9, p99.99, max in us over the window."""
        return figures.latency(source, _window(source, window), at)

    @app.get(f"{API}/latency/history", response_model=LatencyHistory, tags=["latency"])
    def get_history(seconds: Annotated[int | None, Query(ge=1, le=86_400, description="seconds of history (default: "
                                                                             "60, or all a shorter run has)")] = None,
                    at: AtQuery = None) -> LatencyHistory:
        """Per-second figures of every hop, oldest first (the percentile lines)."""
        if seconds is None:  # the default must answer for a finished run shorter than a minute
            seconds = min(60, source.max_window_s)
        elif seconds > source.max_window_s:
            raise HTTPException(422, f"seconds={seconds}: this run keeps 1 to {source.max_window_s} s of history")
        return figures.history(source, seconds, at)

    @app.get(f"{API}/ingest", response_model=Ingest, tags=["ingest"])
    def get_ingest() -> Ingest:
        """Per feed line: received, missed, duplicates, decode errors, packets/s and messages/s."""
        return figures.ingest(source)

    @app.get(f"{API}/ingest/history", response_model=IngestHistory, tags=["ingest"])
    def get_ingest_history(seconds: Annotated[int, Query(ge=1, le=86_400, description="seconds of history")] = 600
                           ) -> IngestHistory:
        """Packets/s and messages/s over all lines over time (the rate chart)."""
        return figures.ingest_history(source, seconds)

    @app.get(f"{API}/operators", response_model=Operators, tags=["operators"])
    def get_operators() -> Operators:
        """Every operator and channel: counters, rates, ring occupancy, full-ring events,
        spins, drops, peer state, CPU."""
        return figures.operators(source)

    @app.get(f"{API}/signals", response_model=Signals, tags=["signals"])
    def get_signals(limit: Annotated[int, Query(ge=1, le=SIGNALS, description="how many, newest first")] = 50
                    ) -> Signals:
        """The latest decision-engine signals."""
        return figures.signals(source, limit)

    @app.get(f"{API}/market", tags=["market"])
    def get_market(windows: Annotated[int, Query(ge=1, le=60, description="how many, newest first")] = 10) -> dict:
        """Market activity per window: top underlyings, exchange shares (docs/market_stats.md)."""
        return market_view(source, windows)

    @app.get(f"{API}/run", response_model=RunStatus, tags=["run"])
    def get_run() -> RunStatus:
        """Topology, plan, target and achieved rate, knobs, uptime."""
        return figures.run(source, replay_control)

    @app.get(f"{API}/stream", response_class=EventSourceResponse, tags=["stream"],
             responses={200: {"description": "server-sent events 'snapshot' (a Snapshot as JSON) every interval, "
                                             "then 'end' when the stream ends"}})
    async def get_stream(window_s: Annotated[int | None, Depends(stream_window)],
                         interval: Annotated[float, Query(ge=0.2, le=60, description="seconds between events")] = 1.0,
                         count: Annotated[int | None, Query(ge=1, description="end after this many snapshots "
                                                                              "(a finished run: 1 unless given)")] = None,
                         ) -> AsyncIterator[ServerSentEvent]:
        """Everything the page shows (a ``Snapshot``), once per interval.

        The stream ends (an ``end`` event, then the response closes) after ``count``
        snapshots, when the server stops, and for a finished run after one snapshot by
        default: its figures never change, and a stream left open keeps a headless
        browser's screenshot from ever completing (it waits for the network to go idle).
        """
        limit = count if count is not None or source.kind == "live" else 1
        sent = 0
        while not stopping.is_set() and (limit is None or sent < limit):
            try:
                snap: Snapshot = await run_in_threadpool(figures.snapshot, source, window_s, replay_control)
                yield ServerSentEvent(data=snap.model_dump(mode="json"), event="snapshot", id=str(snap.ts_ns))
            except (SourceUnavailable, StatsSegmentError) as e:
                yield ServerSentEvent(data={"detail": str(e)}, event="unavailable")
            sent += 1
            if limit is None or sent < limit:
                await asyncio.sleep(interval)
        reason = "stopping" if stopping.is_set() else "finished run" if count is None else f"{count} snapshots sent"
        yield ServerSentEvent(data={"reason": reason}, event="end")

    registry = metrics_registry(source)

    @app.get("/metrics", tags=["metrics"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
    def get_metrics() -> Response:
        """The run's figures in Prometheus text format (seconds; counters as ``_total``)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False)
    def get_page() -> FileResponse:
        return FileResponse(static_dir() / "index.html", media_type="text/html")

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    def get_plotly() -> FileResponse:
        return FileResponse(plotly_js(), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(packages=[STATIC_PACKAGE]), name="static")
    if replay_router is not None:
        app.include_router(replay_router)
    return app
