"""The logical graph: operator instances and the streams between their ports.

Built from a topology and a registry: replicas expanded, kinds looked up, parameters
validated by each kind's model, edges resolved to instance ports and typed by record type,
required inputs checked, cycles refused. Placement (partitions, hosts, CPUs) is the
planner's business (``omdp.plan``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from omdp.registry import OperatorKind, Registry, RegistryError
from omdp.topology.load import TopologyError, problems_of
from omdp.topology.refs import RefError, instance_names, resolve, split_endpoint
from omdp.topology.schema import Topology
from omdp.transport.spec import ChannelSpec


@dataclass(frozen=True)
class Instance:
    """One operator instance: ``fh[3]`` is replica 3 of the ``fh`` group."""

    name: str
    group: str
    replica: int
    replicas: int
    kind: OperatorKind
    params: BaseModel


@dataclass(frozen=True)
class Edge:
    """One stream: ``source.source_port`` -> ``target.target_port`` (instance names), from
    entry ``index`` of the file's edges, with the channel it uses if it crosses partitions."""

    index: int
    source: str
    source_port: str
    target: str
    target_port: str
    record_type: str
    channel: ChannelSpec

    @property
    def label(self) -> str:
        """'a.out -> b.in'."""
        return f"{self.source}.{self.source_port} -> {self.target}.{self.target_port}"


@dataclass
class LogicalGraph:
    """Instances in file order, edges in file order (each file entry expanded)."""

    instances: dict[str, Instance]
    edges: list[Edge]
    groups: dict[str, list[str]] = field(default_factory=dict)

    def topological_order(self) -> list[str]:
        """Instances, every one after all that feed it (file order among equals)."""
        order = topological_sort(list(self.instances), [(e.source, e.target) for e in self.edges])
        assert len(order) == len(self.instances), "build_graph refuses cycles"
        return order


def topological_sort(nodes: list[str], arcs: list[tuple[str, str]]) -> list[str]:
    """Nodes in an order where every arc points forward (input order among equals); nodes
    on a cycle are left out."""
    indeg = dict.fromkeys(nodes, 0)
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in set(arcs):
        succ[a].append(b)
        indeg[b] += 1
    rank = {n: i for i, n in enumerate(nodes)}
    ready = sorted((n for n in nodes if indeg[n] == 0), key=rank.__getitem__)
    order = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for m in sorted(succ[n], key=rank.__getitem__):
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
        ready.sort(key=rank.__getitem__)
    return order


def find_cycle(nodes: list[str], arcs: list[tuple[str, str]]) -> list[str]:
    """One cycle as [a, b, ..., a], or [] when there is none."""
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in arcs:
        succ[a].append(b)
    color = dict.fromkeys(nodes, 0)
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        color[n] = 1
        stack.append(n)
        for m in succ[n]:
            if color[m] == 1:
                return stack[stack.index(m):] + [m]
            if color[m] == 0 and (c := visit(m)):
                return c
        stack.pop()
        color[n] = 2
        return []

    for n in nodes:
        if color[n] == 0 and (c := visit(n)):
            return c
    return []


def build_graph(topo: Topology, registry: Registry, source: str = "<topology>") -> LogicalGraph:
    """The logical graph of ``topo``, or a TopologyError naming the field at fault."""
    problems: list[tuple[str, str]] = []
    instances: dict[str, Instance] = {}
    groups: dict[str, list[str]] = {}
    for name, spec in topo.operators.items():
        try:
            kind = registry.get(spec.kind)
        except RegistryError as e:
            problems.append((f"operators.{name}.kind", str(e)))
            continue
        try:
            params = kind.params.model_validate(spec.params)
        except ValidationError as e:
            problems += problems_of(e, ("operators", name, "params"))
            continue
        groups[name] = instance_names(name, spec.replicas)
        for i, inst in enumerate(groups[name]):
            instances[inst] = Instance(inst, name, i, spec.replicas, kind, params)
    if problems:
        raise TopologyError(source, problems)

    edges = _expand_edges(topo, instances, groups, source)
    _check_inputs(topo, instances, edges, source)
    cycle = find_cycle(list(instances), [(e.source, e.target) for e in edges])
    if cycle:
        raise TopologyError(source, [("edges", "cycle " + " -> ".join(cycle) + "; streams must form a DAG")])
    return LogicalGraph(instances, edges, groups)


def _expand_edges(topo: Topology, instances: dict[str, Instance], groups: dict[str, list[str]], source: str) -> list[Edge]:
    edges: list[Edge] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for i, e in enumerate(topo.edges):
        ends = []
        for field_name, endpoint, outward in (("from", e.source, True), ("to", e.target, False)):
            try:
                ref, port = split_endpoint(endpoint)
                insts = resolve(ref, groups, "operator")
            except RefError as err:
                raise TopologyError(source, [(f"edges[{i}].{field_name}", str(err))]) from None
            kind = instances[insts[0]].kind
            p = kind.output(port) if outward else kind.input(port)
            if p is None:
                side, names = ("output", kind.outputs) if outward else ("input", kind.inputs)
                raise TopologyError(source, [(
                    f"edges[{i}].{field_name}",
                    f"operator {instances[insts[0]].group!r} ({kind.name}) has no {side} port {port!r} "
                    f"({side}s: {', '.join(x.name for x in names) or 'none'})",
                )])
            ends.append((insts, port, p.record_type))
        (srcs, sport, stype), (dsts, dport, dtype) = ends
        if stype != dtype:
            raise TopologyError(source, [(f"edges[{i}]", f"{e.source} carries {stype!r} records but {e.target} takes {dtype!r}")])
        if len(srcs) > 1 and len(dsts) > 1 and e.pattern is None:
            raise TopologyError(source, [(
                f"edges[{i}].pattern",
                f"both ends have several instances ({len(srcs)} and {len(dsts)}): say 'all-to-all' or 'one-to-one'",
            )])
        if e.pattern == "one-to-one":
            if len(srcs) != len(dsts):
                raise TopologyError(source, [(f"edges[{i}].pattern", f"one-to-one needs equal counts, got {len(srcs)} and {len(dsts)}")])
            pairs = list(zip(srcs, dsts))
        else:
            pairs = [(s, d) for s in srcs for d in dsts]
        channel = topo.edge_channel(i)
        for s, d in pairs:
            key = (s, sport, d, dport)
            if key in seen:
                raise TopologyError(source, [(f"edges[{i}]", f"{s}.{sport} -> {d}.{dport} is already made by edges[{seen[key]}]")])
            seen[key] = i
            edges.append(Edge(i, s, sport, d, dport, stype, channel))
    return edges


def _check_inputs(topo: Topology, instances: dict[str, Instance], edges: list[Edge], source: str) -> None:
    fed = {(e.target, e.target_port) for e in edges}
    problems = []
    for inst in instances.values():
        for p in inst.kind.inputs:
            if not p.optional and (inst.name, p.name) not in fed:
                problems.append((f"operators.{inst.group}", f"input port {p.name!r} of {inst.name} is not connected (no edge ends there)"))
    if problems:
        raise TopologyError(source, problems)
