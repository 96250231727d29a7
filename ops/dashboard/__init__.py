"""The live latency dashboard: a FastAPI app over a run's figures.

It reads a running run's shared-memory stats segment (``LiveSource``) or a finished run's
directory (``FinishedRunSource``), never the data path, and serves them as a versioned JSON
API (``/api/v1/...``), Prometheus ``/metrics``, a server-sent event stream and one page
(``/``). ``ops.dashboard.serve.start_dashboard`` runs it in a background thread of the
process that starts a run (``serve_run`` is the pipeline's ``--dashboard`` hook);
``omdp dashboard`` serves a run from another terminal.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def serve_run(run_id: str, run_dir: Path, host: str, port: int) -> Callable[[], None]:
    """The ``--dashboard HOST:PORT`` hook of ``omdp run`` and ``omdp demo``: serve run
    ``run_id`` live (its stats segment; plan.json from ``run_dir``), say where on stderr,
    and return the function that stops it."""
    from ops.dashboard.serve import start_dashboard

    server = start_dashboard(run_id, host, port, run_dir=run_dir)
    print(f"dashboard: {server.url} (API {server.url}docs, Prometheus {server.url}metrics)", file=sys.stderr)
    return server.stop
