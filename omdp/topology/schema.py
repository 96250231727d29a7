"""The topology file: operators, partitions, hosts, edges and their channels (TOML).

Every default of a topology lives in this module (the channel knobs' defaults live in
``omdp.transport.spec.ChannelSpec`` and are only referenced here). docs/topology.md
describes the format with an example; ``omdp plan --schema`` prints this schema as JSON.

Replicas. An operator, partition or host may be replicated (``replicas = N``); its
instances are named ``name[0]`` .. ``name[N-1]`` (a single one is just ``name``). A
reference to ``name`` means all its instances, ``name[3]`` one, ``name[2:5]`` a slice. A
replicated partition deals the operator instances it lists to its replicas in equal
consecutive blocks, its ``cpus`` in equal consecutive chunks, and its hosts in blocks.
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from omdp.transport.spec import ChannelSpec, WaitStrategy

NAME_RE = r"^[A-Za-z_][A-Za-z0-9_-]*$"
"""Names of operators, partitions and hosts: no dots or brackets (those address ports and
replicas)."""

REF_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?:\[(?P<sel>\d+|\d*:\d*)\])?$")
ENDPOINT_RE = re.compile(r"^(?P<ref>[A-Za-z_][A-Za-z0-9_-]*(?:\[(?:\d+|\d*:\d*)\])?)\.(?P<port>[A-Za-z_][A-Za-z0-9_]*)$")

TOPOLOGY_NAME_MAX = 63
"""Characters of a topology's name: it is stored in the run's stats segment (a 64-byte field,
``OMDP_STATS_TEXT_LEN``)."""

OPERATOR_NAME_MAX = 40
"""Characters of an operator's name: with a replica index (``name[4095]``) it must fit an
entry of the stats segment (``OMDP_STATS_NAME_LEN``, 47 bytes)."""

PARTITION_NAME_MAX = 63
"""Characters of a partition's or host's name, as of a topology's: a partition's name names its
log file and its shared-memory and MPI files, whose names the file system limits."""

NAME_LIMITS = {
    "operators": (OPERATOR_NAME_MAX, "an operator's name (the run's stats segment holds it)"),
    "partitions": (PARTITION_NAME_MAX, "a partition's or host's name (it names the partition's files)"),
    "hosts": (PARTITION_NAME_MAX, "a partition's or host's name (it names the partition's files)"),
}
"""The longest name of each table of a topology, and why."""

LOCAL_HOST = "local"
"""The host every partition is on unless it says otherwise: this machine, loopback."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class HostSpec(_Strict):
    """A machine (or, for tests on one machine, a network namespace). ``address`` is where
    its partitions' receivers listen for network transports; with replicas, ``{i}`` in
    ``address``, ``netns`` or ``ib_device`` becomes the replica index."""

    address: str = Field("127.0.0.1", min_length=1, description="IP address of the host for network transports")
    netns: str | None = Field(None, description="run this host's partitions in this network namespace")
    isolated: bool = Field(
        True, description="netns hosts: also a mount namespace with a private /dev/shm and a PID namespace of "
                          "their own, shared by the host's partitions, so only the network joins hosts")
    env: dict[str, str] = Field(default_factory=dict,
                                description="environment of this host's partitions (e.g. OMDP_CLOCK_OFFSET_NS)")
    ptp: bool = Field(False, description="this host's clock is disciplined by PTP: its stamps are used as they are "
                                         "(checked: a /dev/ptp* device must exist there)")
    ib_device: str | None = Field(None, pattern=r"^[A-Za-z0-9_.{}-]+(:\d+(:\d+)?)?$",
                                  description="vega-ib: DEVICE[:PORT[:GID_INDEX]] (default: the first active port)")
    replicas: int = Field(1, ge=1, le=4096)


class OperatorSpec(_Strict):
    """An operator instance (or ``replicas`` of them) of a registered kind."""

    kind: str = Field(min_length=1, description="registered operator kind")
    params: dict[str, Any] = Field(default_factory=dict, description="validated by the kind's parameter model")
    replicas: int = Field(1, ge=1, le=4096)


class PartitionSpec(_Strict):
    """A process: the operators fused in it, the CPUs it is pinned to, its host."""

    operators: list[str] = Field(min_length=1, description="operator references: name, name[k], name[a:b]")
    replicas: int = Field(1, ge=1, le=4096)
    cpus: list[int] | str | None = Field(None, description="CPU ids, or a list like '0-3,8'; none = not pinned")
    host: str | list[str] = Field(LOCAL_HOST, description="host reference(s); several are dealt to replicas")
    wait: WaitStrategy | None = Field(
        None, description="how the idle loop waits; default: the most eager wait of its channels, spin-yield without any"
    )
    realtime: bool = Field(False, description="the loop thread runs SCHED_FIFO where allowed (docs/topology.md)")

    @field_validator("operators")
    @classmethod
    def _refs(cls, v: list[str]) -> list[str]:
        for r in v:
            if not REF_RE.match(r):
                raise ValueError(f"{r!r} is not an operator reference (name, name[k] or name[a:b])")
        return v


class EdgeSpec(_Strict):
    """A stream from an output port to an input port. Between replicated operators the
    pattern says how instances pair up; ``channel`` sets the transport and knobs used when
    the edge crosses partitions (over the file's ``[channel]`` defaults)."""

    source: str = Field(alias="from", description="output port: operator.port, operator[k].port, operator[a:b].port")
    target: str = Field(alias="to", description="input port, same forms")
    pattern: Literal["all-to-all", "one-to-one"] | None = Field(
        None, description="required when both ends have several instances"
    )
    channel: dict[str, Any] = Field(default_factory=dict, description="ChannelSpec fields over the file's [channel]")

    @field_validator("source", "target")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        if not ENDPOINT_RE.match(v):
            raise ValueError(f"{v!r} is not a port (operator.port, operator[k].port or operator[a:b].port)")
        return v


class RunSettings(_Strict):
    """How ``omdp run`` supervises the partitions."""

    heartbeat_s: float = Field(0.5, gt=0, le=60, description="a partition reports this often")
    heartbeat_timeout_s: float = Field(10.0, gt=0, le=3600, description="silence after which a partition is dead")
    start_timeout_s: float = Field(30.0, gt=0, le=3600, description="time for every partition to open its channels")
    drain_timeout_s: float = Field(30.0, gt=0, le=3600, description="after stop: time for queues to drain to sinks")
    kill_timeout_s: float = Field(5.0, gt=0, le=600, description="after a hard stop: time before SIGKILL")
    log_tail_lines: int = Field(20, ge=0, le=10000, description="log lines shown for a failed partition")
    stop_after: list[str] = Field(
        default_factory=list,
        description="partition groups whose end stops the run: once every partition of these groups has ended, "
                    "the others are told to stop (sources stop, queues drain), e.g. a replayer's partitions",
    )
    on_death: Literal["stop", "continue"] = Field(
        "stop", description="when a partition dies: stop (every other partition stops at once) or continue (the others "
                            "are told which of their channels led to it and go on to their end; the run still fails)")
    clock_pings: int = Field(64, ge=0, le=100000,
                             description="round trips per host to estimate its clock offset (best one kept; 0: none)")
    clock_reference: str | None = Field(
        None, description="host whose clock all stamps are corrected to (default: the latency collector's host, "
                          "else the host of the last partition)")
    ptp_error_ns: int = Field(1000, ge=0, description="error assumed for a PTP-disciplined host's clock")
    clock: Literal["auto", "tsc", "realtime"] = Field(
        "auto", description="clock of the hop stamps (stamp_clock.h): tsc (rdtsc calibrated against CLOCK_REALTIME, "
                            "refused where the TSC is not invariant), realtime (clock_gettime), or auto (tsc where "
                            "invariant, else realtime); omdp run --clock")


class Topology(_Strict):
    """A whole topology file."""

    name: str = Field(pattern=NAME_RE, max_length=TOPOLOGY_NAME_MAX)
    description: str = ""
    hosts: dict[str, HostSpec] = Field(default_factory=lambda: {LOCAL_HOST: HostSpec()})
    channel: ChannelSpec = Field(default_factory=ChannelSpec, description="defaults for every edge's channel")
    operators: dict[str, OperatorSpec] = Field(min_length=1)
    partitions: dict[str, PartitionSpec] = Field(min_length=1)
    edges: list[EdgeSpec] = Field(default_factory=list)
    run: RunSettings = Field(default_factory=RunSettings)

    @field_validator("hosts", "operators", "partitions")
    @classmethod
    def _names(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        longest, why = NAME_LIMITS[info.field_name]
        for name in v:
            if not re.match(NAME_RE, name):
                raise ValueError(f"{name!r} is not a valid name (letters, digits, '_' and '-')")
            if len(name) > longest:
                raise ValueError(f"{name[:20]}... is {len(name)} characters; {why} has at most {longest}")
        return v

    def edge_channel(self, index: int) -> ChannelSpec:
        """The channel of edge ``index``: its own fields over the file's defaults."""
        return ChannelSpec(**{**self.channel.model_dump(), **self.edges[index].channel})
