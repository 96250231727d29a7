"""The physical plan: partitions (processes) with their fused operators, CPUs and host, and
the transport pairs the runtime inserts between them (the Vega paper, section III).

Operators in one partition are fused: their edges become direct calls. Every edge that
crosses partitions is carried by a sender in the upstream partition and a receiver in the
downstream one, and all edges from one upstream partition to one downstream partition
share ONE channel: each frame names its logical stream (a route). Planning checks the
graph and the placement against each other but not against this machine: CPUs and hosts
are checked by ``omdp run``.

The plan is JSON (``Plan.model_dump_json``): the supervisor writes it into the run
directory and every partition process builds itself from it.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from omdp.graph import Edge, LogicalGraph, topological_sort, build_graph, find_cycle
from omdp.registry import Registry
from omdp.topology.load import TopologyError
from omdp.topology.refs import RefError, deal, instance_names, parse_cpus, resolve
from omdp.topology.schema import RunSettings, Topology
from omdp.transport.spec import ChannelSpec, WaitStrategy

RUNTIME_TRANSPORTS = ("vega-shm", "vega-tcp", "vega-ib", "tcp", "mpi")
"""Transports the runtime inserts between partitions (``fused`` is within one; ``zmq`` and
``mpqueue`` exist for benchmarks only; ``mpi`` makes the run one MPI job: docs/mpi.md)."""
SAME_HOST_TRANSPORTS = ("vega-shm",)
WAIT_EAGERNESS: tuple[WaitStrategy, ...] = ("spin", "spin-yield", "spin-block")
DEFAULT_PARTITION_WAIT: WaitStrategy = "spin-yield"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanHost(_Frozen):
    """A host instance: where its receivers listen, its namespace if any, how its
    partitions start and how its clock is treated."""

    name: str
    address: str
    netns: str | None = None
    isolated: bool = True
    env: dict[str, str] = {}
    ptp: bool = False
    ib_device: str | None = None


class PlanOperator(_Frozen):
    """An operator instance, its validated parameters (defaults filled in) and its place."""

    name: str
    group: str
    kind: str
    replica: int
    replicas: int
    partition: str
    native: bool
    params: dict[str, Any]
    inputs: list[str]
    outputs: list[str]


class PlanFused(_Frozen):
    """A fused edge: a direct call from ``source`` (op.port) into ``target`` (op.port)."""

    source: str
    target: str


class PlanRoute(_Frozen):
    """A logical stream on a channel: one upstream output port, the input ports it feeds."""

    route: int
    source: str
    targets: list[str]


class PlanChannel(_Frozen):
    """An inserted transport pair: sender in ``upstream``, receiver in ``downstream``."""

    id: int
    name: str
    upstream: str
    downstream: str
    spec: ChannelSpec
    routes: list[PlanRoute]
    edges: list[int]


class PlanPartition(_Frozen):
    """A process: operators in topological order, its channels, CPUs, host and wait."""

    name: str
    group: str
    replica: int
    host: str
    cpus: list[int]
    wait: WaitStrategy
    operators: list[str]
    inputs: list[int]
    outputs: list[int]
    fused: list[PlanFused]
    realtime: bool = False


class Plan(_Frozen):
    """A whole physical plan."""

    topology: str
    source: str
    registry: str | None
    hosts: dict[str, PlanHost]
    operators: dict[str, PlanOperator]
    partitions: list[PlanPartition]
    channels: list[PlanChannel]
    run: RunSettings

    def partition(self, name: str) -> PlanPartition:
        """The partition called ``name``."""
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(f"no partition {name!r} in plan {self.topology!r}")


def _hosts(topo: Topology, source: str) -> tuple[dict[str, PlanHost], dict[str, list[str]]]:
    hosts: dict[str, PlanHost] = {}
    groups: dict[str, list[str]] = {}
    for name, spec in topo.hosts.items():
        groups[name] = instance_names(name, spec.replicas)
        for i, inst in enumerate(groups[name]):
            try:
                address = spec.address.format(i=i)
                netns = spec.netns.format(i=i) if spec.netns else None
                ib_device = spec.ib_device.format(i=i) if spec.ib_device else None
            except (KeyError, IndexError, ValueError) as e:
                raise TopologyError(source, [(f"hosts.{name}", f"bad '{{i}}' template: {e}")]) from None
            hosts[inst] = PlanHost(name=inst, address=address, netns=netns, isolated=spec.isolated, env=spec.env,
                                   ptp=spec.ptp, ib_device=ib_device)
    return hosts, groups


def _place(topo: Topology, graph: LogicalGraph, host_groups: dict[str, list[str]], source: str) -> list[dict[str, Any]]:
    """Partition instances with their operators, CPUs and host; every operator placed once."""
    placed: dict[str, str] = {}
    parts = []
    for name, spec in topo.partitions.items():
        field = f"partitions.{name}"
        try:
            host_refs = [spec.host] if isinstance(spec.host, str) else spec.host
            hosts = [h for r in host_refs for h in resolve(r, host_groups, "host")]
            if spec.replicas == 1 and len(hosts) != 1:
                raise RefError(f"one partition needs one host, {spec.host!r} names {len(hosts)}")
            host_of = hosts * spec.replicas if len(hosts) == 1 else [h for h in hosts for _ in range(spec.replicas // len(hosts))]
            if len(host_of) != spec.replicas:
                raise RefError(f"{len(hosts)} hosts cannot be dealt evenly to {spec.replicas} replicas")
        except RefError as e:
            raise TopologyError(source, [(f"{field}.host", str(e))]) from None
        try:
            cpus = _deal_cpus(parse_cpus(spec.cpus), host_of)
        except RefError as e:
            raise TopologyError(source, [(f"{field}.cpus", str(e))]) from None
        members: list[list[str]] = [[] for _ in range(spec.replicas)]
        for k, ref in enumerate(spec.operators):
            try:
                insts = resolve(ref, graph.groups, "operator")
                for r, block in enumerate(deal(insts, spec.replicas, f"instances of {ref!r}")):
                    members[r].extend(block)
            except RefError as e:
                raise TopologyError(source, [(f"{field}.operators[{k}]", str(e))]) from None
        for r, pname in enumerate(instance_names(name, spec.replicas)):
            for inst in members[r]:
                if inst in placed:
                    raise TopologyError(source, [(f"{field}.operators", f"{inst} is already in partition {placed[inst]}")])
                placed[inst] = pname
                why = graph.instances[inst].kind.alone
                if why and len(members[r]) > 1:
                    others = ", ".join(i for i in members[r] if i != inst)
                    raise TopologyError(source, [(f"{field}.operators", f"{inst} ({graph.instances[inst].kind.name}) "
                                                  f"{why}, which would stall {others} in the same loop: give it a "
                                                  "partition of its own (it may share the CPU)")])
            parts.append({"name": pname, "group": name, "replica": r, "host": host_of[r], "cpus": cpus[r],
                          "wait": spec.wait, "realtime": spec.realtime, "operators": members[r]})
    missing = [i for i in graph.instances if i not in placed]
    if missing:
        groups = sorted({graph.instances[i].group for i in missing})
        raise TopologyError(source, [(f"operators.{g}", f"{', '.join(i for i in missing if graph.instances[i].group == g)} "
                                      "in no partition") for g in groups])
    return parts


def _deal_cpus(cpus: list[int], host_of: list[str]) -> list[list[int]]:
    """Each host's replicas share out the CPU list (CPU ids are per host): equal
    consecutive chunks, in replica order."""
    out: list[list[int]] = [[] for _ in host_of]
    if not cpus:
        return out
    for host in dict.fromkeys(host_of):
        mine = [r for r, h in enumerate(host_of) if h == host]
        for r, chunk in zip(mine, deal(cpus, len(mine), f"CPUs on host {host}")):
            out[r] = chunk
    return out


def _check_channel(edges: list[Edge], up: dict[str, Any], down: dict[str, Any], source: str) -> ChannelSpec:
    first = edges[0]
    for e in edges[1:]:
        if e.channel != first.channel:
            raise TopologyError(source, [(
                f"edges[{e.index}].channel",
                f"differs from edges[{first.index}].channel, but both run from partition {up['name']} to "
                f"{down['name']}, which share one transport pair",
            )])
    spec = first.channel
    where = f"edges[{first.index}].channel.transport"
    if spec.transport not in RUNTIME_TRANSPORTS:
        why = ("'fused' joins operators of one partition only" if spec.transport == "fused"
               else f"{spec.transport!r} is for benchmarks only")
        raise TopologyError(source, [(where, f"{why}; {first.label} runs from partition {up['name']} to {down['name']} "
                                      f"(runtime transports: {', '.join(RUNTIME_TRANSPORTS)})")])
    if spec.transport in SAME_HOST_TRANSPORTS and up["host"] != down["host"]:
        raise TopologyError(source, [(where, f"{spec.transport!r} needs one host, but {up['name']} is on {up['host']} "
                                      f"and {down['name']} on {down['host']}")])
    return spec


def build_plan(topo: Topology, registry: Registry, source: str = "<topology>") -> Plan:
    """Plan ``topo``: the logical graph placed, fused and joined by inserted channels."""
    graph = build_graph(topo, registry, source)
    unknown = [g for g in topo.run.stop_after if g not in topo.partitions]
    if unknown:
        raise TopologyError(source, [("run.stop_after", f"{', '.join(unknown)} is not a partition "
                                      f"(partitions: {', '.join(topo.partitions)})")])
    hosts, host_groups = _hosts(topo, source)
    if topo.run.clock_reference is not None and topo.run.clock_reference not in hosts:
        raise TopologyError(source, [("run.clock_reference", f"no host {topo.run.clock_reference!r} "
                                      f"(hosts: {', '.join(hosts)})")])
    parts = _place(topo, graph, host_groups, source)
    part_of = {inst: p["name"] for p in parts for inst in p["operators"]}
    by_name = {p["name"]: p for p in parts}

    fused: dict[str, list[PlanFused]] = defaultdict(list)
    crossing: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    for e in graph.edges:
        up, down = part_of[e.source], part_of[e.target]
        if up == down:
            fused[up].append(PlanFused(source=f"{e.source}.{e.source_port}", target=f"{e.target}.{e.target_port}"))
        else:
            crossing[(up, down)].append(e)

    pairs = list(crossing)
    cycle = find_cycle([p["name"] for p in parts], pairs)
    if cycle:
        raise TopologyError(source, [("partitions", "partitions feed each other in a cycle " + " -> ".join(cycle)
                                      + " (a cycle of transports would deadlock under back-pressure)")])
    part_order = topological_sort([p["name"] for p in parts], pairs)
    pair_order = sorted(pairs, key=lambda pr: (part_order.index(pr[0]), part_order.index(pr[1])))

    channels: list[PlanChannel] = []
    for cid, (up, down) in enumerate(pair_order):
        edges = crossing[(up, down)]
        spec = _check_channel(edges, by_name[up], by_name[down], source)
        routes: dict[str, list[str]] = {}
        for e in edges:
            routes.setdefault(f"{e.source}.{e.source_port}", []).append(f"{e.target}.{e.target_port}")
        channels.append(PlanChannel(
            id=cid, name=f"{up}->{down}", upstream=up, downstream=down, spec=spec,
            routes=[PlanRoute(route=r, source=s, targets=t) for r, (s, t) in enumerate(routes.items())],
            edges=sorted({e.index for e in edges}),
        ))

    inst_order = graph.topological_order()
    operators = {}
    for name in inst_order:
        inst = graph.instances[name]
        operators[name] = PlanOperator(
            name=name, group=inst.group, kind=inst.kind.name, replica=inst.replica, replicas=inst.replicas,
            partition=part_of[name], native=inst.kind.native, params=inst.params.model_dump(mode="json"),
            inputs=[p.name for p in inst.kind.inputs], outputs=[p.name for p in inst.kind.outputs],
        )
    partitions = []
    for pname in part_order:
        p = by_name[pname]
        ins = [c.id for c in channels if c.downstream == pname]
        outs = [c.id for c in channels if c.upstream == pname]
        wait = p["wait"] or _derived_wait([channels[c].spec.wait for c in (ins or outs)])
        members = set(p["operators"])
        partitions.append(PlanPartition(
            name=pname, group=p["group"], replica=p["replica"], host=p["host"], cpus=p["cpus"], wait=wait,
            realtime=p["realtime"], operators=[i for i in inst_order if i in members], inputs=ins, outputs=outs,
            fused=fused[pname],
        ))
    return Plan(topology=topo.name, source=source, registry=registry.ref, hosts=hosts, operators=operators,
                partitions=partitions, channels=channels, run=topo.run)


def _derived_wait(waits: list[WaitStrategy]) -> WaitStrategy:
    return min(waits, key=WAIT_EAGERNESS.index) if waits else DEFAULT_PARTITION_WAIT
