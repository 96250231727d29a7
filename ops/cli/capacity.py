"""``omdp capacity TOPOLOGY --for-rate 25x``: the partitions, cores and hosts a rate needs, from
earlier runs' measured costs and a capture's burst profile (ops/pipeline/capacity.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from omdp.metrics.definitions import DEFAULT_RULE
from ops.cli.options import DATA_ENVVAR, check_positive, topology_argument


def check_for_rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Click callback: ``--for-rate`` is ``Nx`` (the replay's parser), returned as N."""
    from ops.replay.rates import RateError, RateSpec

    if value is None:
        return None

    try:
        return RateSpec.parse(rate=value).value
    except RateError as e:
        raise click.UsageError(str(e).replace("--rate", "--for-rate"), ctx=ctx) from None


@click.command("capacity")
@click.argument("topology", callback=topology_argument)
@click.option("--for-rate", "rate_x", default=None, callback=check_for_rate, help="the rate to plan for, Nx")
@click.option("--for-peak-msgs", "peak_msgs", default=None,
              help="or the peak to plan for: messages/s in the capture's busiest --peak-window over all lines, "
                   "e.g. 120M (today's OPRA); the rate is the one whose bursts reach it")
@click.option("--costs-from", "costs_from", default=None, callback=topology_argument,
              help="the topology whose finished runs give the measured costs (default: TOPOLOGY itself, e.g. "
                   "opra_fused's runs on an OBI capture for a topology too big for this host)")
@click.option("--peak-window", type=click.Choice(["10ms", "100ms"]), default="10ms", show_default=True,
              help="absorb the capture's peak rate over this window")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory: runs/ (measured costs) and captures/")
@click.option("--capture-date", default=None, help="the capture whose bursts to absorb (default: the newest)")
@click.option("--utilization", type=float, default=0.7, show_default=True, help="planned busy fraction of a core")
@click.option("--cores-per-host", type=int, default=None, help="cores of one host (default: this machine's)")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the proposed topology here (default: print only)")
@click.option("--max-p99-from-intended", "p99_bound_us", type=float, default=DEFAULT_RULE.max_p99_from_intended_us,
              show_default=True, help="the bound on p99 latency from intended (us) the queueing model checks")
@click.option("--json", "json_out", is_flag=True, help="print the proposal as JSON")
def capacity(topology: str, rate_x: float | None, peak_msgs: str | None, costs_from: str | None, peak_window: str,
             data_dir: Path, capture_date: str | None, utilization: float, cores_per_host: int | None,
             p99_bound_us: float, out: Path | None, json_out: bool) -> None:
    """Propose feed handlers, engines, cores and hosts for a rate from measured costs (a projection),
    and project latency from intended with a queueing model of the capture's packets."""
    from omdp.plan import build_plan
    from omdp.topology.load import TopologyError, load_topology
    from ops.capture.stats import capture_packets, stats_of
    from ops.pipeline.capacity import (CapacityError, measured_runs, parse_count, plan_capacity,
                                       rate_for_peak_messages, topology_toml)
    from ops.pipeline.capture_info import latest_capture_date
    from ops.pipeline.latency_model import Arrivals, latency_outlook
    from ops.pipeline.registry import build_registry
    from ops.replay.rates import PAPER_1X_PPS

    check_positive("--utilization", utilization)
    check_positive("--max-p99-from-intended", p99_bound_us)
    if (rate_x is None) == (peak_msgs is None):
        raise click.UsageError("give one of --for-rate and --for-peak-msgs")
    try:
        topo = load_topology(topology)
        costs_name = load_topology(costs_from).name if costs_from else topo.name
    except TopologyError as e:
        raise click.UsageError(str(e)) from None
    name = topo.name
    given = tuple(sum(op.replicas for op in topo.operators.values() if op.kind in kinds)
                  for kinds in (("feed_handler",), ("decision_engine", "elastic_engine")))
    date = capture_date or latest_capture_date(data_dir)
    cap_dir = data_dir / "captures" / str(date)
    if date is None or not cap_dir.is_dir():
        click.echo(f"no capture under {data_dir / 'captures'} (give --capture-date, or make one with omdp synth)", err=True)
        raise SystemExit(2)
    packets = capture_packets(cap_dir)
    stats = stats_of(str(cap_dir), packets)
    t = stats.total
    burst = t.peak_packets_per_s[peak_window] / t.packets_per_s if t.packets_per_s else 1.0
    try:
        if peak_msgs is not None:
            rate_x = rate_for_peak_messages(parse_count(peak_msgs, "--for-peak-msgs"), t.packets_per_s,
                                            t.peak_messages_per_s[peak_window])
        plan = plan_capacity(name, measured_runs(data_dir, costs_name), rate_x, burst, peak_window, len(stats.lines),
                             utilization, cores_per_host or os.cpu_count() or 1)
    except CapacityError as e:
        click.echo(str(e), err=True)
        raise SystemExit(2) from None
    plan.given = given
    plan.costs_from = costs_name if costs_name != name else ""
    if t.packets:
        plan.messages_per_packet = t.messages / t.packets
        plan.peak_messages_per_s = rate_x * PAPER_1X_PPS * t.peak_messages_per_s[peak_window] / t.packets_per_s
    outlook = latency_outlook(Arrivals.of(packets), rate_x, plan.handler_ns_per_packet, plan.measured_handler_partitions,
                              plan.handlers, p99_bound_us * 1e3)
    if json_out:
        click.echo(json.dumps({**plan.to_dict(), "latency_model": outlook.to_dict()}, indent=2))
    else:
        click.echo(plan.text() + "\n" + outlook.text())
    if out is not None:
        text = topology_toml(plan, f"{name}-for-{rate_x:g}x")
        out.write_text(text)
        try:  # the proposal must be a topology omdp can plan
            build_plan(load_topology(out), build_registry(), str(out))
        except TopologyError as e:
            click.echo(f"internal error: the written topology does not plan: {e}", err=True)
            raise SystemExit(1) from None
        click.echo(f"wrote {out}")
