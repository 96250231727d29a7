"""Running the dashboard: uvicorn in a background thread of the calling process.

``omdp run ... --dashboard HOST:PORT`` and ``omdp demo`` call ``start_dashboard`` with the
run id once the run's stats segment exists (or just before: the page waits for it), keep
the returned handle, and ``stop()`` it when the run's process ends; ``omdp dashboard``
(ops/cli/dashboard.py) serves a finished run directory or attaches to a live run from
another terminal. Binds 127.0.0.1 unless told otherwise.
"""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn
from fastapi import APIRouter, FastAPI

from ops.dashboard.access import exposure_warning
from ops.dashboard.app import create_app
from ops.dashboard.finished_source import FinishedRunSource
from ops.dashboard.live_source import LiveSource
from ops.dashboard.source import DashboardSource

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"address {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8000") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"address {text!r}: port {number} is not 0..65535")
    return (host.strip("[]") or DEFAULT_HOST), number


def bind_address(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening), so that a command can refuse an
    address in use before its run starts; raises OSError naming the address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"dashboard cannot listen on {host}:{port}: {e.strerror}") from None
    return sock


class DashboardServer:
    """A dashboard serving one source from a daemon thread; ``stop()`` ends it."""

    def __init__(self, source: DashboardSource, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 replay_router: APIRouter | None = None, owns_source: bool = False,
                 read_token: str | None = None, sock: socket.socket | None = None) -> None:
        self.source = source
        self.read_token = read_token
        self.app: FastAPI = create_app(source, replay_router, read_token)
        self._owns_source = owns_source
        self._sock = sock if sock is not None else bind_address(host, port)
        self.host = host
        self.port = int(self._sock.getsockname()[1])
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="omdp-dashboard", daemon=True)

    @property
    def exposure_warning(self) -> str | None:
        """What to warn the operator of when this server is reachable from other hosts."""
        return exposure_warning(self.host, self.port, self.read_token)

    @property
    def url(self) -> str:
        """The page's address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self, timeout: float = 10.0) -> DashboardServer:
        """Serve; returns once the server accepts connections."""
        if isinstance(self.source, LiveSource):
            self.source.start()
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dashboard on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """End open streams, stop the server, close the source if it was made here."""
        self.app.state.stopping.set()
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(10.0)
        self._sock.close()
        if self._owns_source:
            self.source.close()

    def __enter__(self) -> DashboardServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_dashboard(run: str | Path | DashboardSource, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                    replay_router: APIRouter | None = None, run_dir: Path | None = None,
                    read_token: str | None = None, sock: socket.socket | None = None) -> DashboardServer:
    """Serve a run's dashboard from a background thread and return its handle.

    run: a run id (str: the live run's stats segment on this host), a run directory
    (Path: a finished run's records), or a source. replay_router: the replay service's
    router (``ops.replay.http_api.replay_router(service, token)``), mounted at
    /api/v1/replay with its own token check. run_dir: a live run's directory, for its
    plan.json before the run info names it. read_token: every figure needs it
    (``ops.dashboard.access``); the caller prints ``exposure_warning`` when it is not None.
    sock: a socket ``bind_address`` bound earlier (host and port are then only its labels).
    """
    if isinstance(run, DashboardSource):
        source, owns = run, False
    elif isinstance(run, Path):
        source, owns = FinishedRunSource(run), True
    else:
        source, owns = LiveSource(run, run_dir=run_dir), True
    return DashboardServer(source, host, port, replay_router, owns_source=owns, read_token=read_token,
                           sock=sock).start()
