"""Topology files shipped with omdp (TOML): the OPRA pipeline on this machine (fused and
split over vega-shm), the paper's shared-memory and InfiniBand layouts, and small generic
graphs. ``topology_path`` finds one by name wherever omdp is installed; ``resolve`` lets
every command that takes a topology take a file or a shipped name (``omdp run
opra_fused``); ``shipped`` lists them (``omdp plan --list``)."""
from __future__ import annotations

import tomllib
from pathlib import Path

TOPOLOGIES = Path(__file__).resolve().parent


def topology_path(name: str) -> Path:
    """The shipped topology ``name`` (with or without ``.toml``)."""
    path = TOPOLOGIES / (name if name.endswith(".toml") else f"{name}.toml")
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in TOPOLOGIES.glob("*.toml")))
        raise FileNotFoundError(f"no shipped topology {name!r} (shipped: {known})")
    return path


def resolve(topology: str) -> str:
    """``topology`` itself when it is a file (or a path: its errors are the file's), else
    the path of the shipped topology of that name; FileNotFoundError naming both."""
    if Path(topology).exists() or "/" in topology:
        return topology
    try:
        return str(topology_path(topology))
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{topology}: no such file, and {e}; `omdp plan --list` lists them") from None


def shipped() -> list[tuple[str, str]]:
    """(name, description) of every shipped topology, by name."""
    out = []
    for path in sorted(TOPOLOGIES.glob("*.toml")):
        try:
            description = str(tomllib.loads(path.read_text()).get("description", ""))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            description = ""
        out.append((path.stem, description))
    return out
