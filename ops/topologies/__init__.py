"""Topology files shipped with omdp (TOML): the OPRA pipeline on this machine (fused and
split over vega-shm), the paper's shared-memory and InfiniBand layouts, and small generic
graphs. ``topology_path`` finds one by name wherever omdp is installed."""
from __future__ import annotations

from pathlib import Path

TOPOLOGIES = Path(__file__).resolve().parent


def topology_path(name: str) -> Path:
    """The shipped topology ``name`` (with or without ``.toml``)."""
    path = TOPOLOGIES / (name if name.endswith(".toml") else f"{name}.toml")
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in TOPOLOGIES.glob("*.toml")))
        raise FileNotFoundError(f"no shipped topology {name!r} (shipped: {known})")
    return path
