"""Reading topology files: TOML in, a validated :class:`Topology` out, or a
:class:`TopologyError` that names every offending field and why."""
from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omdp.errors import InputError
from omdp.topology.schema import LOCAL_HOST, HostSpec, Topology
from omdp.transport.spec import ChannelSpec


class TopologyError(InputError):
    """A topology that cannot be used. ``problems`` holds (field, reason) pairs; the field
    is a path into the file such as ``edges[2].channel.queue_size``."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {field}: {why}" if field else f"  {why}" for field, why in problems)
        super().__init__(f"{source}: invalid topology\n{lines}")


def field_path(loc: Iterable[Any]) -> str:
    """('edges', 2, 'channel', 'queue_size') -> 'edges[2].channel.queue_size'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def problems_of(err: ValidationError, prefix: tuple[Any, ...] = ()) -> list[tuple[str, str]]:
    """pydantic errors as (field, reason) pairs, the reason with the offending value."""
    out = []
    for e in err.errors():
        msg = e["msg"].removeprefix("Value error, ")
        value = e.get("input")
        if e["type"] not in ("missing", "value_error") and isinstance(value, str | int | float | bool):
            msg += f" (got {value!r})"
        out.append((field_path((*prefix, *e["loc"])), msg))
    return out


def parse_topology(doc: dict[str, Any], source: str = "<topology>") -> Topology:
    """Validate a topology document (the parsed TOML)."""
    try:
        topo = Topology.model_validate(doc)
    except ValidationError as e:
        raise TopologyError(source, problems_of(e)) from None
    problems: list[tuple[str, str]] = []
    for i, edge in enumerate(topo.edges):
        try:
            ChannelSpec(**{**topo.channel.model_dump(), **edge.channel})
        except ValidationError as e:
            problems += problems_of(e, ("edges", i, "channel"))
        except TypeError as e:
            problems.append((f"edges[{i}].channel", str(e)))
    if problems:
        raise TopologyError(source, problems)
    if LOCAL_HOST not in topo.hosts:
        topo.hosts[LOCAL_HOST] = HostSpec()
    return topo


def read_topology_doc(path: str | Path) -> dict[str, Any]:
    """The TOML document of a topology file; syntax errors become a TopologyError."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise TopologyError(str(path), [("", "no such file")]) from None
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(str(path), [("", f"not valid TOML: {e}")]) from None
    except UnicodeDecodeError as e:
        raise TopologyError(str(path), [("", f"not UTF-8 text (TOML is): byte 0x{e.object[e.start]:02x} at offset "
                                             f"{e.start}")]) from None


def load_topology(path: str | Path, overrides: Iterable[str] = ()) -> Topology:
    """Read, override (``--set`` style ``a.b.c=value``) and validate a topology file."""
    doc = read_topology_doc(path)
    apply_overrides(doc, overrides, str(path))
    return parse_topology(doc, str(path))


def apply_overrides(doc: dict[str, Any], overrides: Iterable[str], source: str = "<topology>") -> None:
    """Set values in a topology document in place: each override is ``dotted.key=value``
    with a TOML value (``operators.src.params.rate=1000``, ``channel.wait="spin"``); a
    bare word that is not TOML is taken as a string."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise TopologyError(source, [("", f"override {item!r} is not key=value")])
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node: Any = doc
        parts = key.strip().split(".")
        for part in parts[:-1]:
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise TopologyError(source, [(key, f"override: no list element {part!r}")])
                node = node[int(part)]
            else:
                node = node.setdefault(part, {})
            if not isinstance(node, dict | list):
                raise TopologyError(source, [(key, f"override: {part!r} is not a table")])
        if isinstance(node, list):
            raise TopologyError(source, [(key, "override: cannot replace a whole list element")])
        node[parts[-1]] = value
