"""Assembling the OPRA pipeline: a topology file plus a capture (and the run's options)
become a topology whose operators know their lines, their routing and their replay.

A pipeline topology names its operators by kind: one ``feed_handler`` group, one
``decision_engine`` group, usually one ``feed_sender`` group and the collectors. From the
capture's manifest the assembly
  - deals the lines to the feed handlers and to the feed senders (equal consecutive
    blocks; with ring input a line's sender is its handler's, as the ring is the
    handler's), with the A/B endpoints of each line;
  - computes the routing table: underlyings balanced over the decision engines by the
    capture's message counts (``feedhandlers.routing``);
  - fills the replay's settings (capture, rate, length, loop, injected drops) into the feed
    senders, the capture date into the engines' pricing, the sampling into engines and
    latency collector, and ``run.stop_after`` with the feed senders' partitions, so the
    run ends when the replay does.
Everything lands in operator parameters, so ``plan.json`` carries it and ``omdp plan``
shows it. ``check_engine_edges`` then checks the plan: port ``de<k>`` of every handler must
feed engine k, and nothing else.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from decision_engines.engine_config import DEFAULT_MAX_SERIES
from feedhandlers.feed_handler import FeedLine
from feedhandlers.routing import DEFAULT_SAMPLE_MESSAGES, RoutingTable, build_routing, count_roots
from omdp.metrics.definitions import DEFAULT_RULE
from omdp.plan import Plan
from omdp.topology.load import TopologyError
from omdp.topology.schema import Topology
from ops.pipeline.capture_info import CaptureInfo
from ops.replay.shm_segments import intended_name

FEED_SENDER, FEED_HANDLER, DECISION_ENGINE = "feed_sender", "feed_handler", "decision_engine"
ELASTIC_ENGINE = "elastic_engine"  # decision_engines.elastic_operator: the same ports, elastic worker pool
LATENCY_COLLECTOR = "latency_collector"
INTENDED_TABLE_TEMPLATE = intended_name("{run_id}-fs{sender}")
"""The replayer's intended-time table of a feed sender, for the handlers to look up
(``ops.pipeline.feed_sender.replay_run_id`` names the replay ``<run_id>-fs<k>``)."""


@dataclass
class RunOptions:
    """What a run asks of the pipeline besides the topology (``omdp run`` options)."""

    rate: str = "1x"
    rate_schedule: str = ""  # Nx:seconds,... (ops.replay.rate_schedule); the run lasts its length
    seconds: float | None = 30.0
    loop: bool = True
    drops: str = ""
    seed: int = 0
    sample_every: int | None = None
    routing_sample: int = DEFAULT_SAMPLE_MESSAGES
    max_p99_from_intended_us: float | None = DEFAULT_RULE.max_p99_from_intended_us  # sustainable only below it; None: no bound
    reshard_buckets: int = 0  # > 0: buckets (underlying % N) may move between engines (omdp.runtime.reshard)
    reshard_every_ms: float = 0.0  # > 0: move a bucket this often (ReshardSchedule)


@dataclass
class PipelineGroups:
    """The topology's operator groups by role, and their replica counts."""

    feed_senders: str | None
    feed_handler: str
    engines: str
    latency: list[str] = field(default_factory=list)
    replicas: dict[str, int] = field(default_factory=dict)


def pipeline_groups(topo: Topology, source: str = "<topology>") -> PipelineGroups:
    """Find the pipeline's groups; errors name the field."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name, op in topo.operators.items():
        by_kind[op.kind].append(name)

    def one(kind: str, required: bool) -> str | None:
        found = by_kind.get(kind, [])
        if len(found) > 1:
            raise TopologyError(source, [(f"operators.{found[1]}.kind", f"a pipeline has one {kind} group, "
                                          f"this one has {', '.join(found)}")])
        if required and not found:
            raise TopologyError(source, [("operators", f"a pipeline needs a {kind} group")])
        return found[0] if found else None

    fh = one(FEED_HANDLER, True)
    de = one(DECISION_ENGINE, False) or one(ELASTIC_ENGINE, False)
    if de is None:
        raise TopologyError(source, [("operators", f"a pipeline needs a {DECISION_ENGINE} or {ELASTIC_ENGINE} group")])
    assert fh is not None
    return PipelineGroups(feed_senders=one(FEED_SENDER, False), feed_handler=fh, engines=de,
                          latency=by_kind.get(LATENCY_COLLECTOR, []),
                          replicas={n: op.replicas for n, op in topo.operators.items()})


def deal_blocks(items: list[int], replicas: int) -> dict[int, int]:
    """item -> replica: equal consecutive blocks (the first ones one shorter when uneven)."""
    n = len(items)
    if replicas > n:
        raise ValueError(f"{replicas} replicas for {n} lines: every replica needs a line")
    return {item: k * replicas // n for k, item in enumerate(items)}


def sender_shares(capture: CaptureInfo, lines: list[FeedLine], senders: int) -> list[float]:
    """Each feed sender's share of the capture's packets, so that the senders together send
    at the run's rate (a sender's ``Nx`` counts only its own lines), all on one clock:
    every line's recorded gaps are scaled alike. Lines the manifest does not count weigh
    the mean of those it does (all alike when it counts none)."""
    if senders <= 1:
        return []
    counted = [capture.line_packets[ln.line] for ln in lines if ln.line in capture.line_packets]
    mean = sum(counted) / len(counted) if counted else 1.0
    weight = [0.0] * senders
    for ln in lines:
        weight[ln.sender] += capture.line_packets.get(ln.line, mean)
    total = sum(weight)
    return [w / total for w in weight]


def feed_lines(capture: CaptureInfo, handlers: int, senders: int, ring: bool) -> list[FeedLine]:
    """The capture's lines with their handler and sender."""
    handler_of = deal_blocks(capture.lines, handlers)
    sender_of = handler_of if ring else deal_blocks(capture.lines, senders)
    return [FeedLine(line=ln, handler=handler_of[ln], sender=sender_of[ln], a=capture.endpoints[ln].get("A"),
                     b=capture.endpoints[ln].get("B")) for ln in capture.lines]


def routing_for(capture: CaptureInfo, engines: int, sample: int = DEFAULT_SAMPLE_MESSAGES,
                buckets: int = 0) -> RoutingTable:
    """Balance the capture's underlyings (or, with re-sharding, their buckets) over
    ``engines`` by their message counts."""
    return build_routing(capture.root_underlying, count_roots(capture.line_files(), sample), engines, buckets)


SERIES_HEADROOM = 1.25
"""Slots per series an engine is sized with when the capture counts its series: new series are
listed during a day (OBI's R messages), and a hash table is slower full."""


def engine_series_slots(capture: CaptureInfo, routing: RoutingTable, movable: bool = False) -> int:
    """Series slots for each engine of a topology that does not set ``max_series``: the most
    series one engine is routed (from the capture's manifest, where it counts them; every
    series when buckets may move between engines, ``movable``) with ``SERIES_HEADROOM``, and
    never fewer than the engine's default. A today capture routes
    about 245,000 series to each of two engines, beyond the default 131,072: unsized, the
    engines refused a million quotes a run as ``table_full``."""
    if not capture.underlying_series:
        return DEFAULT_MAX_SERIES
    per_engine: dict[int, int] = defaultdict(int)
    for u, e in routing.engine_of_underlying().items():
        per_engine[e] += capture.underlying_series.get(u, 0)
    most = sum(per_engine.values()) if movable else max(per_engine.values(), default=0)
    return max(DEFAULT_MAX_SERIES, int(most * SERIES_HEADROOM) + 1)


def check_reshard(g: PipelineGroups, data: dict[str, Any], options: RunOptions, source: str) -> None:
    """Re-sharding needs static engines (``decision_engine``, two or more), a power-of-two
    bucket count and a period only with buckets; errors name the option."""
    b = options.reshard_buckets
    if options.reshard_every_ms and not b:
        raise TopologyError(source, [("--reshard-every", "needs --reshard-buckets N")])
    if not b:
        return
    if b < 1 or b > 4096 or b & (b - 1):
        raise TopologyError(source, [("--reshard-buckets", f"{b}: a power of two, 1..4096")])
    if options.reshard_every_ms < 0:
        raise TopologyError(source, [("--reshard-every", f"{options.reshard_every_ms} ms: must be >= 0")])
    if data["operators"][g.engines]["kind"] != DECISION_ENGINE:
        raise TopologyError(source, [(f"operators.{g.engines}.kind", f"re-sharding moves buckets between "
                                      f"{DECISION_ENGINE} replicas (an {ELASTIC_ENGINE} moves them between its "
                                      "own workers)")])
    if g.replicas[g.engines] < 2:
        raise TopologyError(source, [(f"operators.{g.engines}.replicas", "re-sharding needs two or more engines")])


@dataclass
class Assembly:
    """The assembled topology and what was computed for it."""

    topology: Topology
    groups: PipelineGroups
    lines: list[FeedLine]
    routing: RoutingTable
    capture: CaptureInfo


def assemble(topo: Topology, capture: CaptureInfo, options: RunOptions, source: str = "<topology>") -> Assembly:
    """Fill the pipeline's operators from ``capture`` and ``options`` (see the module doc)."""
    g = pipeline_groups(topo, source)
    data: dict[str, Any] = topo.model_dump(by_alias=True, mode="json", exclude_unset=False)
    ops = data["operators"]
    fh_params = ops[g.feed_handler]["params"]
    ring = fh_params.get("input", "ring") == "ring"
    handlers = g.replicas[g.feed_handler]
    senders = g.replicas[g.feed_senders] if g.feed_senders else handlers
    if g.feed_senders and ring and senders != handlers:
        raise TopologyError(source, [(f"operators.{g.feed_senders}.replicas",
                                      f"with ring input each feed handler reads its own ring, so feed senders and "
                                      f"handlers pair up: {senders} senders for {handlers} handlers")])
    try:
        lines = feed_lines(capture, handlers, senders, ring)
    except ValueError as e:
        raise TopologyError(source, [(f"operators.{g.feed_handler}.replicas", f"{e} (the capture has "
                                      f"{len(capture.lines)} lines)")]) from None
    engines = g.replicas[g.engines]
    check_reshard(g, data, options, source)
    routing = routing_for(capture, engines, options.routing_sample, options.reshard_buckets)
    line_dicts = [ln.model_dump(mode="json") for ln in lines]
    fh_params.update(lines=line_dicts, routing=routing.model_dump(mode="json"), format=capture.feed_format,
                     intended_table=fh_params.get("intended_table") or INTENDED_TABLE_TEMPLATE)
    if g.feed_senders:
        fs = ops[g.feed_senders]["params"]
        fs.update(capture_dir=str(capture.directory), lines=line_dicts, rate=options.rate, seconds=options.seconds,
                  rate_schedule=options.rate_schedule, rate_shares=sender_shares(capture, lines, senders),
                  loop=options.loop, target="ring" if ring else "multicast", drops=options.drops, seed=options.seed)
        if fh_params.get("copies") and not ring:
            fs.setdefault("copies", fh_params["copies"])
    de = ops[g.engines]["params"]
    de.setdefault("as_of", capture.date.isoformat())
    if ops[g.engines]["kind"] == DECISION_ENGINE and "max_series" not in de:
        de["max_series"] = engine_series_slots(capture, routing, movable=bool(options.reshard_buckets))
    if options.reshard_buckets:
        fh_params["reshard"] = de["reshard"] = True
    if options.sample_every is not None:
        de["sample_every"] = options.sample_every
    sample_every = de.get("sample_every")
    for lc in g.latency:
        if sample_every:
            ops[lc]["params"]["sample_every"] = sample_every
    if g.feed_senders and not data["run"].get("stop_after"):
        data["run"]["stop_after"] = [p for p, spec in data["partitions"].items()
                                     if any(ref.split("[")[0] == g.feed_senders for ref in spec["operators"])]
    return Assembly(topology=Topology.model_validate(data), groups=g, lines=lines, routing=routing, capture=capture)


TAP_KINDS = ("market_stats",)
"""Operators that may take a feed handler's engine ports beside the engines (fan-out)."""


def check_engine_edges(plan: Plan, groups: PipelineGroups, engines: int) -> None:
    """Port ``de<k>`` of every feed handler must feed exactly engine k's ``quotes`` (and
    any tap of TAP_KINDS)."""
    targets: dict[str, set[str]] = defaultdict(set)
    for p in plan.partitions:
        for f in p.fused:
            targets[f.source].add(f.target)
    for c in plan.channels:
        for r in c.routes:
            targets[r.source].update(r.targets)
    taps = {name for name, op in plan.operators.items() if op.kind in TAP_KINDS}  # may read every port too
    problems = []
    for name, op in plan.operators.items():
        if op.group != groups.feed_handler:
            continue
        for k in range(len(op.outputs)):
            got = {t for t in targets.get(f"{name}.de{k}", set()) if t.split(".")[0] not in taps}
            want = {f"{groups.engines}[{k}].quotes" if engines > 1 else f"{groups.engines}.quotes"} if k < engines else set()
            if got != want:
                problems.append(f"{name}.de{k} feeds {sorted(got) or 'nothing'}, expected {sorted(want) or 'nothing'}")
    if problems:
        raise TopologyError(plan.source, [("edges", "routing ports: " + "; ".join(problems[:4])
                                           + (f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""))])
