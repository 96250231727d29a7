"""Who may read the dashboard: an optional read token, and a warning for exposed addresses.

The dashboard binds 127.0.0.1 unless told otherwise. Bound elsewhere, its figures (run ids,
paths, rates, signals) are readable by any host that reaches it, so it warns at start;
with a read token every figure (``/api/v1/...`` reads, the stream, ``/metrics``) needs
it, as ``Authorization: Bearer TOKEN`` (what Prometheus sends), ``X-Omdp-Read-Token`` or
``?token=`` (what a browser's EventSource can send). The page itself, its scripts and the
API's documentation carry no figures and stay open. The replay service's actions keep
their own token (``ops.replay.http_api``).
"""
from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Awaitable, Callable

from fastapi import Request
from fastapi.responses import JSONResponse, Response

READ_TOKEN_ENV = "OMDP_DASHBOARD_TOKEN"
"""Environment variable every command that serves a dashboard takes its read token from."""

GUARDED_PREFIXES = ("/api/", "/metrics")

CallNext = Callable[[Request], Awaitable[Response]]
Middleware = Callable[[Request, CallNext], Awaitable[Response]]


def is_loopback(host: str) -> bool:
    """True for addresses only this host reaches (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def exposure_warning(host: str, port: int, read_token: str | None) -> str | None:
    """The warning to print when the dashboard listens beyond this host, or None."""
    if is_loopback(host):
        return None
    where = f"{host}:{port}"
    if read_token:
        return (f"warning: the dashboard listens on {where}, reachable from other hosts; reads need the read token, "
                "sent in plain HTTP")
    return (f"warning: the dashboard listens on {where}, reachable from other hosts, and anyone there can read the "
            f"run's figures: set a read token ({READ_TOKEN_ENV} or omdp dashboard --read-token), or bind 127.0.0.1")


def presented_token(request: Request) -> str | None:
    """The read token a request carries, from whichever of the three places it uses."""
    auth = request.headers.get("authorization")
    if auth and auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.headers.get("x-omdp-read-token") or request.query_params.get("token")


def needs_token(request: Request) -> bool:
    """Whether the request reads figures (the replay's POST actions check their own token)."""
    path = request.url.path
    if request.method == "POST" and path.startswith("/api/v1/replay/"):
        return False
    return path.startswith(GUARDED_PREFIXES)


def read_token_middleware(token: str) -> Middleware:
    """An HTTP middleware refusing figure reads without ``token`` (401)."""
    if not token:
        raise ValueError("the dashboard's read token must not be empty")
    expected = token.encode()

    async def check(request: Request, call_next: CallNext) -> Response:
        if needs_token(request):
            given = presented_token(request)
            if not given or not secrets.compare_digest(given.encode(), expected):
                return JSONResponse(status_code=401, headers={"WWW-Authenticate": "Bearer"},
                                    content={"detail": "this dashboard needs its read token (Authorization: Bearer "
                                                       "TOKEN, X-Omdp-Read-Token or ?token=)"})
        return await call_next(request)

    return check
