"""422 answers that do not echo a huge request back.

FastAPI answers a request that fails validation with every error and, in each, the input
that failed: a 50 MB query parameter came back whole. ``cap_validation_echo`` installs a
handler on an app (the dashboard's, the replay API's) that answers the same 422 with each
string in it cut to ``ECHO_LIMIT`` characters and its length said.
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

ECHO_LIMIT = 200
"""Characters of a rejected input a 422 answer repeats."""


def capped(value: Any, limit: int = ECHO_LIMIT) -> Any:
    """``value`` (JSON-ready data) with each string longer than ``limit`` cut and marked."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}... ({len(value):,} characters)"
    if isinstance(value, list):
        return [capped(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: capped(v, limit) for k, v in value.items()}
    return value


def cap_validation_echo(app: FastAPI) -> None:
    """Answer validation errors of ``app`` with 422 and capped echoes (see the module doc)."""

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": capped(jsonable_encoder(exc.errors()))})
