"""The paper's shared-memory layout (``ops/topologies/paper_shm.toml``) scaled to a number of
cores, for measuring how the sustainable rate and the latency from intended grow with cores
(``omdp bench scaling``).

The paper's 32-core layout gives 2 cores to feed senders, 20 to feed handlers, 8 to decision
engines and 2 to collectors. A scaled layout keeps those roles and the handler:engine ratio
of 20:8 on ``cores`` CPUs (0 .. cores-1), one pinned process per partition:

- 1 feed sender per ``cores_per_sender`` cores (at least 1), multicasting its share of the
  lines (A copies) at its share of the rate;
- the paper's two collector cores folded into one: the latency and signal collectors in a
  spinning partition, the ingest collector (which sleeps between its looks) in a partition
  of its own on the same CPU, so that its sleep never stalls the collectors' loop;
- the rest split between feed handlers and engines at 20:8, at least one of each.

On 2 cores that leaves nothing to split, so the 2-core point is the paper's "Fused"
configuration (``opra_fused.toml`` with a multicast input): the sender and collectors on CPU
0, the handler, both engines and the latency collector in one process on CPU 1. The engines'
pricing threads run at nice 19 on the senders' CPUs, as in ``opra_fused.toml``.

Multicast is the path the paper measured and the one a deployment receives: the senders use
a packet socket and the handlers one packet ring each (``docs/replay.md``, ``docs/pipeline.md``).
The senders run SCHED_FIFO (``realtime``, where the user may; a warning where not): they
stand in for the exchange, which sends on time whatever our machine is doing. As ordinary
tasks sharing their CPU with the collectors' loops and other threads they got only a fair
share of it in the capture's 10 ms peaks and fell hundreds of milliseconds behind their
schedule, which the latency from intended then charged to the pipeline (``docs/benchmarks.md`` "Scaling with
cores"). ``--set operators.fs.params.realtime=false`` measures them as ordinary tasks.
"""
from __future__ import annotations

from dataclasses import dataclass

HANDLERS_PER_ENGINE = 20 / 8
"""The paper's layout: 20 feed handlers for 8 decision engines."""

CORES_PER_SENDER = 4
"""One multicast sender per this many cores by default. The senders stand in for the
exchange's feed and are not what is being sized: over loopback a sender pays for every
datagram's delivery into each handler's packet ring (about 1 us a datagram), so one sender
per 8 cores (the paper's 2 on 32) fell behind its schedule at 10x on 8 cores, with the
handlers and engines under a quarter busy (docs/benchmarks.md "Scaling with cores")."""


@dataclass(frozen=True)
class ScaledLayout:
    """How a scaled layout spends its cores."""

    cores: int
    senders: int
    handlers: int
    engines: int
    fused: bool

    def describe(self) -> str:
        if self.fused:
            return f"{self.cores} cores: fused (sender + collectors on CPU 0; handler, 2 engines, latency collector on CPU 1)"
        return (f"{self.cores} cores: {self.senders} sender(s), {self.handlers} feed handler(s), {self.engines} "
                f"engine(s), 1 collector partition")


def scaled_layout(cores: int, cores_per_sender: int = CORES_PER_SENDER) -> ScaledLayout:
    """The roles of a ``cores``-core layout (at least 2 cores)."""
    if cores < 2:
        raise ValueError(f"a layout needs at least 2 cores (got {cores}): a sender and a handler")
    if cores < 4:
        return ScaledLayout(cores, senders=1, handlers=1, engines=2, fused=True)
    if cores_per_sender < 1:
        raise ValueError(f"cores per sender must be 1 or more (got {cores_per_sender})")
    senders = min(max(1, cores // cores_per_sender), cores - 3)
    rest = cores - senders - 1
    engines = max(1, round(rest / (1 + HANDLERS_PER_ENGINE)))
    return ScaledLayout(cores, senders=senders, handlers=rest - engines, engines=engines, fused=False)


def _common(layout: ScaledLayout, name: str) -> list[str]:
    pricing = ", ".join(str(c) for c in range(layout.senders if not layout.fused else 1))
    return [
        f"# Written by `omdp bench scaling`: the paper's shared-memory layout scaled to {layout.cores} cores",
        f"# ({layout.describe()}).",
        f'name = "{name}"',
        f'description = "{layout.describe()}"', "",
        "[channel]", 'transport = "vega-shm"', "queue_size = 32", "max_message = 16384", "mutex = false",
        'wait = "spin"', "",
        "[operators.fs]", 'kind = "feed_sender"', f"replicas = {layout.senders}",
        'params = { copies = "A", multicast_sender = "packet", realtime = true }', "",
        "[operators.fh]", 'kind = "feed_handler"', f"replicas = {layout.handlers}",
        'params = { input = "multicast", copies = "A", receive = "packet_ring" }', "",
        "[operators.de]", 'kind = "decision_engine"', f"replicas = {layout.engines}",
        f"params = {{ pricing_period_s = 1.0, pricing_cpus = [{pricing}], pricing_nice = 19 }}", "",
        "[operators.lc]", 'kind = "latency_collector"', "",
        "[operators.sig]", 'kind = "signal_collector"', "",
        "[operators.ingest]", 'kind = "ingest_collector"', ""]


def _edges(engines: int) -> list[str]:
    out: list[str] = []
    for j in range(engines):
        out += ["[[edges]]", f'from = "fh.de{j}"', f'to = "de[{j}].quotes"', ""]
    return out + ["[[edges]]", 'from = "de.samples"', 'to = "lc.in"', "",
                  "[[edges]]", 'from = "de.signals"', 'to = "sig.in"', ""]


def scaled_topology_toml(cores: int, cores_per_sender: int = CORES_PER_SENDER) -> str:
    """The topology file of the ``cores``-core layout."""
    layout = scaled_layout(cores, cores_per_sender)
    name = f"paper-shm-{cores}c"
    if layout.fused:
        out = _common(layout, name)
        out += ["[partitions.feed]", 'operators = ["fs"]', "cpus = [0]", 'wait = "spin-block"', "",
                "[partitions.app]", 'operators = ["fh", "de", "lc"]', "cpus = [1]", 'wait = "spin"', "",
                "[partitions.signals]", 'operators = ["sig"]', "cpus = [0]", 'wait = "spin-block"', "",
                "[partitions.ingest]", 'operators = ["ingest"]', "cpus = [0]", 'wait = "spin-block"', ""]
        return "\n".join(out + _edges(layout.engines))
    s, h, e = layout.senders, layout.handlers, layout.engines
    collect = cores - 1
    out = _common(layout, name)
    out += ["[partitions.feed]", 'operators = ["fs"]', f"replicas = {s}", f'cpus = "0-{s - 1}"' if s > 1 else "cpus = [0]",
            'wait = "spin-block"', "",
            "[partitions.fh]", 'operators = ["fh"]', f"replicas = {h}", _cpu_range(s, s + h - 1), "",
            "[partitions.de]", 'operators = ["de"]', f"replicas = {e}", _cpu_range(s + h, s + h + e - 1), "",
            "[partitions.collect]", 'operators = ["lc", "sig"]', f"cpus = [{collect}]", "",
            "[partitions.ingest]", 'operators = ["ingest"]', f"cpus = [{collect}]", 'wait = "spin-block"', ""]
    return "\n".join(out + _edges(e))


def _cpu_range(first: int, last: int) -> str:
    return f"cpus = [{first}]" if first == last else f'cpus = "{first}-{last}"'
