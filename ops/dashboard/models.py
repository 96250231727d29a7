"""Response models of the dashboard's JSON API (``/api/v1``), documented by its OpenAPI.

Latencies are in microseconds, rates per second, times int64 nanoseconds since the epoch.
A percentile is null (n/a) when its window has fewer than 10 / (1 - p) samples
(docs/architecture.md), as everywhere in omdp.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class HopFigures(BaseModel):
    """One hop over a window: sample count, mean, percentiles and max in us (null: n/a)."""

    count: int
    mean_us: float | None
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    p99_9_us: float | None
    p99_99_us: float | None
    max_us: float | None


class HopLatency(HopFigures):
    """A hop's figures with its name and definition."""

    hop: str = Field(description="fh, to_de, de, to_mc, e2e or e2e_intended")
    label: str
    definition: str = Field(description="the stamps it subtracts, e.g. 'de_in - fh_out'")
    missing: int = Field(description="samples of the run that lacked a stamp this hop needs")


class Latency(BaseModel):
    """Per-hop latency over a sliding window."""

    run_id: str
    source: Literal["live", "finished"]
    window_s: int | None = Field(description="seconds; null: the whole run")
    at_ns: int = Field(description="end of the window (its last second is the one holding this time)")
    sample_every: int | None = Field(description="1 in N messages sampled")
    hops: list[HopLatency]


class HistoryPoint(BaseModel):
    """One epoch second of per-hop figures."""

    second: int
    hops: dict[str, HopFigures]


class LatencyHistory(BaseModel):
    """Per-second figures, oldest first (the percentile-lines chart)."""

    run_id: str
    at_ns: int
    seconds: int
    points: list[HistoryPoint]


class LineIngest(BaseModel):
    """One feed line: cumulative counters and rates now."""

    line: int
    state: str
    updated_ns: int
    packets_received: int
    messages_received: int
    messages_missed: int
    packets_duplicate: int
    decode_errors: int
    missed_ratio: float | None = Field(description="missed / (received + missed) messages")
    packets_per_s: float | None = Field(description="over about the last second (finished run: its average over "
                                               "the replay's span, first send to end); null until two snapshots")
    messages_per_s: float | None


class IngestTotals(BaseModel):
    """Every line summed."""

    packets_received: int
    messages_received: int
    messages_missed: int
    packets_duplicate: int
    decode_errors: int
    missed_ratio: float | None
    packets_per_s: float | None
    messages_per_s: float | None


class Ingest(BaseModel):
    """What arrived per feed line and what was lost."""

    run_id: str
    ts_ns: int
    lines: list[LineIngest]
    totals: IngestTotals


class IngestPoint(BaseModel):
    """Rates over all lines at one time."""

    ts_ns: int
    packets_per_s: float
    messages_per_s: float
    messages_missed: int = Field(description="cumulative, all lines")


class IngestHistory(BaseModel):
    """Rates over time (live: one point per second since the dashboard started, up to 10
    minutes; finished: one per ingest.parquet interval)."""

    run_id: str
    points: list[IngestPoint]


class Counter(BaseModel):
    """One named counter of an operator or channel."""

    name: str
    value: int
    per_s: float | None = Field(description="rate now; null for levels (gauges) and until known")
    gauge: bool = Field(description="a level (e.g. ring occupancy), not a running count")


class OperatorEntry(BaseModel):
    """An operator or transport channel with its counters and its process's CPU."""

    name: str
    kind: str = Field(description="operator, channel, collector ...")
    state: str
    pid: int
    cpu: int | None = Field(description="the CPU its partition is pinned to")
    process_cpu_percent: float | None = Field(description="CPU time of its process, % of one CPU, now")
    updated_ns: int
    counters: list[Counter]
    occupancy: int | None = Field(description="ring slots in use (counter 'occupancy' or 'ring_occupancy')")
    full_events: int | None = Field(description="puts that found the ring full ('full_events' or 'full_ring')")
    spins: int | None
    drops: int | None
    peer_state: str | None = Field(description="absent, attached, closed or dead (Vega's codes)")


class Operators(BaseModel):
    """Every operator and channel the run publishes."""

    run_id: str
    ts_ns: int
    operators: list[OperatorEntry]


class SignalEntry(BaseModel):
    """One decision-engine signal."""

    ts_ns: int
    engine: int
    kind: str
    series: str
    value: float


class Signals(BaseModel):
    """The latest signals, newest first."""

    run_id: str
    total: int = Field(description="signals raised since the run started")
    signals: list[SignalEntry]


class RunStatus(BaseModel):
    """The run: what runs, how fast it is asked to go and goes, and for how long."""

    run_id: str
    source: Literal["live", "finished"]
    state: str
    topology: str
    config: str
    run_dir: str
    knobs: dict[str, Any]
    plan: dict[str, Any] | None = Field(description="plan.json of the run directory, when there is one")
    target_pps: float | None
    achieved_pps: float | None
    target_x: float | None = Field(description="target / 24,000 packets/s (docs/architecture.md 'Nx')")
    achieved_x: float | None
    achieved_fraction: float | None = Field(description="achieved / target packets/s")
    messages_per_packet: float | None
    sample_every: int | None
    started_ns: int
    ended_ns: int | None
    uptime_s: float
    heartbeat_age_s: float | None = Field(description="seconds since a writer of the run last showed life")
    pid: int | None
    max_window_s: int = Field(description="longest latency window this run serves, in seconds")
    replay_control: bool = Field(description="the replay service's API is mounted at /api/v1/replay")
    sustainable: bool | None = Field(None, description="a finished run: was its rate sustainable (docs/architecture.md); "
                                                      "null while it runs")
    sustainable_reasons: list[str] = Field(default_factory=list, description="why it was not sustainable")


class Snapshot(BaseModel):
    """One event of the live stream: everything the page shows."""

    ts_ns: int
    run: RunStatus
    latency: Latency
    second: HistoryPoint | None = Field(description="the last complete second, for the lines over time")
    ingest: Ingest
    operators: Operators
    signals: Signals
