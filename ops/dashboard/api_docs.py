"""``/docs`` without the network: Swagger UI's script and stylesheet served from the
installed ``swagger-ui-py`` package (its ``static`` folder: Swagger UI 5, which reads the
OpenAPI 3.1 FastAPI writes; ``swagger-ui-bundle`` ships 4.x, which cannot) instead of
FastAPI's default CDN, so the API's page works on a host with no route out (the dashboard's
and the replay's apps alike). ReDoc, which only loads from a CDN, is not offered."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

SWAGGER_UI = "/vendor/swagger-ui"
"""Where the Swagger UI files are served."""


def swagger_ui_dir() -> str:
    """The folder of Swagger UI's files inside the installed ``swagger-ui-py``."""
    from swagger_ui.utils import SWAGGER_UI_PY_ROOT

    return str(SWAGGER_UI_PY_ROOT / "static")


def offline_docs_app(title: str, **kwargs: object) -> FastAPI:
    """A FastAPI app whose ``/docs`` loads nothing from outside this server."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, **kwargs)  # type: ignore[arg-type]
    app.mount(SWAGGER_UI, StaticFiles(directory=swagger_ui_dir()), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def get_docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{title} - API",
                                   swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
                                   swagger_favicon_url=f"{SWAGGER_UI}/favicon-32x32.png")

    return app
