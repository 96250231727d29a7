"""The replay's HTTP API as a FastAPI router, for ``omdp replay`` and for the dashboard.

``GET /api/v1/replay`` reports the status to anyone who can reach 127.0.0.1; the actions
(``POST .../start``, ``.../stop``, ``.../rate``) need the token the service printed at
start-up, as ``Authorization: Bearer <token>`` (or an ``X-Omdp-Token`` header).
"""
from __future__ import annotations

import secrets

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, status
from pydantic import BaseModel, ConfigDict, Field

from ops.http_validation import cap_validation_echo
from ops.replay.capture_set import CaptureInputError
from ops.replay.config import ReplayConfigError
from ops.replay.rates import RateError, RateSpec
from ops.replay.service import ReplaySenderError, ReplayService, ReplayStateError
from ops.replay.status import ReplayStatus

API_PREFIX = "/api/v1/replay"
RATE_TEXT_MAX = 64
"""A rate is a few characters ('10x'); a longer one is refused before it is parsed (and the
422 repeats only the start of it: ``ops.http_validation``)."""


class RateRequest(BaseModel):
    """Exactly one of ``rate`` ('10x'), ``speed`` or ``pps``."""

    model_config = ConfigDict(extra="forbid")

    rate: str | None = Field(None, max_length=RATE_TEXT_MAX)
    speed: float | None = None
    pps: float | None = None

    def spec(self) -> RateSpec:
        return RateSpec.parse(rate=self.rate, speed=self.speed, pps=self.pps)


class StartRequest(BaseModel):
    """Optionally a new rate for this start."""

    model_config = ConfigDict(extra="forbid")

    rate: str | None = Field(None, max_length=RATE_TEXT_MAX)
    speed: float | None = None
    pps: float | None = None

    def spec(self) -> RateSpec | None:
        if self.rate is None and self.speed is None and self.pps is None:
            return None
        return RateSpec.parse(rate=self.rate, speed=self.speed, pps=self.pps)


def new_token() -> str:
    """A fresh random token for the control endpoints."""
    return secrets.token_urlsafe(24)


def replay_router(service: ReplayService, token: str) -> APIRouter:
    """Routes of one service, guarded by ``token``; mount with ``app.include_router``."""
    if not token:
        raise ValueError("the replay API needs a non-empty token")

    def require_token(
        authorization: str | None = Header(default=None),
        x_omdp_token: str | None = Header(default=None),
    ) -> None:
        given = x_omdp_token
        if authorization and authorization.lower().startswith("bearer "):
            given = authorization[7:].strip()
        if not given or not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                status_code=status.HTTP_401_UNAUTHORIZED,
                detail="a valid token is required (Authorization: Bearer <token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    router = APIRouter(prefix=API_PREFIX, tags=["replay"])

    @router.get("", response_model=ReplayStatus)
    def get_status() -> ReplayStatus:
        """The replay's status: rates, per-line counts, pacing error, warnings."""
        return service.status()

    @router.post("/start", response_model=ReplayStatus, dependencies=[Depends(require_token)])
    def post_start(body: StartRequest | None = None) -> ReplayStatus:
        """Start the configured replay (optionally at a new rate)."""
        try:
            return service.start(rate=body.spec() if body else None)
        except ReplayStateError as e:
            raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from None
        except (RateError, CaptureInputError, ReplayConfigError) as e:
            raise HTTPException(422, str(e)) from None
        except ReplaySenderError as e:
            raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(e)) from None

    @router.post("/stop", response_model=ReplayStatus, dependencies=[Depends(require_token)])
    def post_stop() -> ReplayStatus:
        """Stop the running replay (no-op when none runs)."""
        return service.stop()

    @router.post("/rate", response_model=ReplayStatus, dependencies=[Depends(require_token)])
    def post_rate(body: RateRequest) -> ReplayStatus:
        """Change the rate, now."""
        try:
            return service.set_rate(body.spec())
        except RateError as e:
            raise HTTPException(422, str(e)) from None
        except ReplayStateError as e:
            raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from None

    return router


def replay_app(service: ReplayService, token: str) -> FastAPI:
    """The app ``omdp replay --address`` serves: the router, ``/docs`` served offline, and 422
    answers that repeat only the start of a rejected input (``ops.http_validation``)."""
    from ops.dashboard.api_docs import offline_docs_app

    app = offline_docs_app("omdp replay")
    cap_validation_echo(app)
    app.include_router(replay_router(service, token))
    return app
