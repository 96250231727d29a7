"""The pipeline's part of ``omdp plan``: which lines each feed handler and sender serves, and
how underlyings are routed to the decision engines (all of it stored in plan.json, in the
operators' parameters)."""
from __future__ import annotations

from collections import defaultdict

from omdp.plan_text import cpu_ranges
from ops.pipeline.assemble import Assembly, PipelineGroups


def _ranges(nums: list[int]) -> str:
    return cpu_ranges(sorted(nums)).replace(",", ", ")


def _inst(group: str, k: int, replicas: int) -> str:
    return f"{group}[{k}]" if replicas > 1 else group


def format_lines(asm: Assembly) -> list[str]:
    """Lines per feed handler, with the sender of each."""
    g = asm.groups
    nh = g.replicas[g.feed_handler]
    ns = g.replicas[g.feed_senders] if g.feed_senders else 0
    by_handler: dict[int, list[int]] = defaultdict(list)
    senders: dict[int, set[int]] = defaultdict(set)
    for ln in asm.lines:
        by_handler[ln.handler].append(ln.line)
        senders[ln.handler].add(ln.sender)
    inp = asm.topology.operators[g.feed_handler].params.get("input", "ring")
    out = [f"lines ({len(asm.lines)} of capture {asm.capture.date}; feed handler input: {inp})"]
    for h in sorted(by_handler):
        src = ", ".join(_inst(g.feed_senders, s, ns) for s in sorted(senders[h])) if g.feed_senders else "external"
        out.append(f"  {_inst(g.feed_handler, h, nh)} <- lines {_ranges(by_handler[h])} (sent by {src})")
    return out


def format_routing(asm: Assembly) -> list[str]:
    """Underlyings, roots and sampled messages per engine."""
    r, g = asm.routing, asm.groups
    und: dict[int, set[int]] = defaultdict(set)
    roots: dict[int, int] = defaultdict(int)
    for uid, e in zip(r.underlying_ids, r.root_engines):
        und[e].add(uid)
        roots[e] += 1
    total = sum(r.engine_messages) or 1
    out = ["routing (by underlying across all exchanges; balanced by the messages of a sample of the capture)"]
    rows = [["engine", "underlyings", "roots", "messages", "share"]]
    for e in range(r.engines):
        msgs = r.engine_messages[e] if e < len(r.engine_messages) else 0
        rows.append([f"{_inst(g.engines, e, r.engines)} (port de{e})", f"{len(und[e]):,}", f"{roots[e]:,}", f"{msgs:,}",
                     f"{msgs / total:.1%}"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out += ["  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in rows]
    imb = r.imbalance()
    out.append(f"  {r.sampled_messages:,} messages sampled; most loaded engine / mean = "
               + (f"{imb:.3f}" if imb is not None else "n/a") + "; messages without a root go to "
               + _inst(g.engines, int(asm.topology.operators[g.feed_handler].params.get("default_engine", 0)), r.engines))
    return out


def format_pipeline(asm: Assembly) -> str:
    """The pipeline section of ``omdp plan``."""
    return "\n".join(["", "", *format_lines(asm), "", *format_routing(asm)])


def format_unassembled(groups: PipelineGroups) -> str:
    """What ``omdp plan`` says of a pipeline topology planned without a capture."""
    return (f"\n\npipeline: {groups.feed_handler} (feed_handler) routes to {groups.replicas[groups.engines]} "
            f"{groups.engines} (decision_engine); its lines and routing table come from a capture: "
            "give --data and --capture-date to see them")
