"""A plan for people: partitions, their operators and CPUs, the inserted transports and
the streams multiplexed on each, and the fused edges."""
from __future__ import annotations

import re
from collections import Counter

from omdp.plan import Plan

_INST_RE = re.compile(r"^(?P<group>[^\[\]]+)\[(?P<i>\d+)\](?P<port>\.[A-Za-z_]\w*)?$")


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'; [] -> '-' (not pinned)."""
    if not cpus:
        return "-"
    out, start, prev = [], cpus[0], cpus[0]
    for c in [*cpus[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(out)


def compact_names(names: list[str]) -> str:
    """Runs of consecutive replicas folded: ['fh[0]', 'fh[1]', 'fh[2]', 'de'] -> 'fh[0-2], de'."""
    out: list[str] = []
    run: tuple[str, int, int] | None = None
    for n in [*names, None]:
        m = _INST_RE.match(n) if n is not None else None
        if run and m and m["group"] == run[0] and int(m["i"]) == run[2] + 1:
            run = (run[0], run[1], run[2] + 1)
            continue
        if run:
            out.append(f"{run[0]}[{run[1]}]" if run[1] == run[2] else f"{run[0]}[{run[1]}-{run[2]}]")
            run = None
        if m:
            run = (m["group"], int(m["i"]), int(m["i"]))
        elif n is not None:
            out.append(n)
    return ", ".join(out)


def _group_of(endpoint: str) -> str:
    inst, _, port = endpoint.rpartition(".")
    m = _INST_RE.match(inst)
    return f"{m['group'] if m else inst}.{port}"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _operators(plan: Plan, names: list[str]) -> str:
    by_kind: dict[str, list[str]] = {}
    for o in names:
        by_kind.setdefault(plan.operators[o].kind, []).append(o)
    return "; ".join(f"{compact_names(v)} ({k})" for k, v in by_kind.items())


def _ports(endpoints: list[str]) -> str:
    by_port: dict[str, list[str]] = {}
    for e in endpoints:
        inst, _, port = e.rpartition(".")
        by_port.setdefault(port, []).append(inst)
    return ", ".join(f"{compact_names(v)}.{p}" for p, v in by_port.items())


def format_plan(plan: Plan) -> str:
    """The whole plan as text."""
    transports = Counter(c.spec.transport for c in plan.channels)
    n_fused = sum(len(p.fused) for p in plan.partitions)
    hosts = sorted({p.host for p in plan.partitions})
    lines = [
        f"plan {plan.topology} ({plan.source})",
        f"  {len(plan.operators)} operators in {len(plan.partitions)} partitions on {len(hosts)} host(s); "
        f"{len(plan.channels)} inserted transport pair(s)"
        + (f" ({', '.join(f'{n} {t}' for t, n in sorted(transports.items()))})" if transports else "")
        + f"; {n_fused} fused edge(s)",
        "",
        "partitions (one process each, pinned to its CPUs)",
    ]
    rows = [["partition", "host", "cpus", "wait", "in", "out", "operators"]]
    for p in plan.partitions:
        rows.append([p.name, p.host, cpu_ranges(p.cpus), p.wait, str(len(p.inputs)), str(len(p.outputs)),
                     _operators(plan, p.operators)])
    lines += _table(rows)
    if plan.channels:
        lines += ["", "inserted transports (one sender/receiver pair per upstream -> downstream partition)"]
        rows = [["id", "sender -> receiver", "transport", "queue", "max_msg", "mutex", "wait", "on_full", "streams"]]
        for c in plan.channels:
            s = c.spec
            first = True
            for r in c.routes:
                stream = f"r{r.route}: {r.source} -> {_ports(r.targets)}"
                if first:
                    rows.append([str(c.id), f"{c.upstream} -> {c.downstream}", s.transport, str(s.queue_size),
                                 str(s.max_message), "on" if s.mutex else "off", s.wait, s.on_full, stream])
                    first = False
                else:
                    rows.append(["", "", "", "", "", "", "", "", stream])
        lines += _table(rows)
    fused = [p for p in plan.partitions if p.fused]
    if fused:
        lines += ["", "fused edges (direct calls, depth-first)"]
        for p in fused:
            kinds = Counter((_group_of(f.source), _group_of(f.target)) for f in p.fused)
            lines.append(f"  {p.name}: " + ", ".join(f"{a} -> {b} x{n}" for (a, b), n in kinds.items()))
    lines += ["", "hosts"]
    lines += _table([["host", "address", "netns"]] + [[h, plan.hosts[h].address, plan.hosts[h].netns or "-"] for h in hosts])
    return "\n".join(lines)
