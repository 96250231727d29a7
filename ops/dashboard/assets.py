"""The page's files: our own small HTML/JS/CSS (package data of ``ops.dashboard``) and
plotly.js, served from the installed ``plotly`` Python package (nothing copied into the
repository, nothing fetched from the network)."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

STATIC_PACKAGE = ("ops.dashboard", "static")


def static_dir() -> Path:
    """The folder of our page files inside the installed package."""
    return Path(str(resources.files("ops.dashboard") / "static"))


def plotly_js() -> Path:
    """plotly.min.js as shipped in the plotly package (its ``package_data``)."""
    path = Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js is not in the installed plotly package (looked at {path}); "
                                "reinstall plotly")
    return path
