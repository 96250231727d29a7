"""Names of replicated things and references to them (``name``, ``name[k]``, ``name[a:b]``),
and CPU lists (``"0-3,8"``). Failures raise :class:`RefError`; callers add the field."""
from __future__ import annotations

from omdp.topology.schema import ENDPOINT_RE, REF_RE


class RefError(ValueError):
    """A reference that does not resolve; the message says why."""


def instance_names(name: str, replicas: int) -> list[str]:
    """``name`` for a single instance, ``name[0]`` .. ``name[N-1]`` for replicas."""
    return [name] if replicas == 1 else [f"{name}[{i}]" for i in range(replicas)]


def resolve(ref: str, groups: dict[str, list[str]], what: str) -> list[str]:
    """The instances ``ref`` names among ``groups`` (group name -> instance names)."""
    m = REF_RE.match(ref)
    if not m:
        raise RefError(f"{ref!r} is not a reference (name, name[k] or name[a:b])")
    name, sel = m["name"], m["sel"]
    if name not in groups:
        raise RefError(f"unknown {what} {name!r} (known: {', '.join(sorted(groups)) or 'none'})")
    members = groups[name]
    if sel is None:
        return list(members)
    if ":" not in sel:
        k = int(sel)
        if k >= len(members):
            raise RefError(f"{ref!r}: {what} {name!r} has {len(members)} instance(s)")
        return [members[k]]
    lo, _, hi = sel.partition(":")
    picked = members[int(lo) if lo else 0 : int(hi) if hi else len(members)]
    if not picked:
        raise RefError(f"{ref!r} selects no instance of {what} {name!r} ({len(members)} instance(s))")
    return picked


def split_endpoint(endpoint: str) -> tuple[str, str]:
    """'fh[2].out' -> ('fh[2]', 'out')."""
    m = ENDPOINT_RE.match(endpoint)
    if not m:
        raise RefError(f"{endpoint!r} is not operator.port")
    return m["ref"], m["port"]


def parse_cpus(spec: list[int] | str | None) -> list[int]:
    """CPU ids from a list or a string like ``"0-3,8"``; empty for none. Duplicates and
    negative ids are errors."""
    if spec is None:
        return []
    cpus: list[int] = []
    if isinstance(spec, str):
        for part in filter(None, (p.strip() for p in spec.split(","))):
            lo, dash, hi = part.partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                raise RefError(f"{part!r} is not a CPU or a range like 2-5")
            a, b = int(lo), int(hi) if dash else int(lo)
            if b < a:
                raise RefError(f"range {part!r} runs backwards")
            cpus.extend(range(a, b + 1))
    else:
        cpus = list(spec)
    if any(c < 0 for c in cpus):
        raise RefError(f"negative CPU id in {spec!r}")
    if len(set(cpus)) != len(cpus):
        raise RefError(f"a CPU is listed twice in {spec!r}")
    return cpus


def deal(items: list, parts: int, what: str) -> list[list]:
    """Split ``items`` into ``parts`` equal consecutive blocks."""
    if len(items) % parts:
        raise RefError(f"{len(items)} {what} cannot be dealt evenly to {parts} replicas")
    k = len(items) // parts
    return [items[i * k : (i + 1) * k] for i in range(parts)]
