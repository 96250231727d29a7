"""``omdp run TOPOLOGY``: run a topology, one process per partition.

A pipeline topology (one with a ``feed_handler``) runs with a capture: ``--capture-date``
picks ``<data>/captures/<date>/``, ``--rate``/``--seconds`` (and ``--no-loop``, ``--drop``)
set the replay, and the run prints the latency breakdown (the paper's Figure 6) with the
feed's rate, ingest and accounting, then writes ``runs/<date>/<run_id>/`` (plan.json,
meta, samples, ingest, intended and signals Parquet, run.json, report.json, logs). The run
ends when the replay does. TOPOLOGY is a file or the name of a shipped topology
(``omdp plan --list``); a ``--run-id`` names one run (a used one is refused).

Any other topology runs until its sources end, ``--seconds`` pass or Ctrl-C (once:
sources stop and queues drain; twice: stop now) and prints its operators' counters.

Exit status: 0 when the run ended or was stopped cleanly, 1 when a partition died, 2 when
the topology or the capture cannot run here or an option is wrong (``--duration`` is a
hidden alias of ``--seconds``). Options that set values of the topology are
``--set`` overrides under another name.
"""
from __future__ import annotations

import os

import json
import sys
from pathlib import Path
from typing import Any

import click

from omdp.metrics.definitions import DEFAULT_RULE
from ops.cli.options import (DATA_ENVVAR, check_positive, one_address, positive_seconds, topology_argument,
                             writable_output)
from ops.progress import RunCountdown


DEFAULT_PIPELINE_SECONDS = 30.0
"""How long a pipeline replays without --seconds."""


def _summary(result: Any) -> list[str]:
    lines = [f"run {result.run_id}: {result.status} in {result.ended_at - result.started_at:.1f} s; {result.run_dir}"]
    for name, p in result.partitions.items():
        lines.append(f"  {name}: {p['state']} ({p['exit_description']})" + (f" - {p['error']}" if p.get("error") else ""))
        for op, counters in ((p.get("report") or {}).get("operators") or {}).items():
            shown = ", ".join(f"{k}={v}" for k, v in counters.items() if v and not k.endswith("_ns"))
            lines.append(f"    {op}: {shown or '-'}")
    return lines


def _write_json(out: str, data: Any) -> None:
    from ops.cli.options import write_output

    write_output(out, json.dumps(data, indent=2, default=str))


def dashboard_hook(address: str) -> Any:
    """The hook ``--address HOST:PORT`` gives a pipeline run: once the run's stats segment
    exists, serve its live dashboard (``ops.dashboard.serve.start_dashboard``, the
    dashboard's own component) from this process; the hook returns the server's stop.
    The address is bound now, so one in use is refused before the run starts."""
    try:
        from ops.dashboard.access import READ_TOKEN_ENV
        from ops.dashboard.serve import bind_address, parse_address, start_dashboard
    except ImportError:
        raise click.UsageError("--address: this installation has no dashboard (ops.dashboard)") from None
    try:
        host, port = parse_address(address)
        sock = bind_address(host, port)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--address") from None
    except OSError as e:
        raise click.BadParameter(e.strerror or str(e), param_hint="--address") from None

    read_token = os.environ.get(READ_TOKEN_ENV) or None

    def serve(run_id: str, run_dir: Path) -> Any:
        server = start_dashboard(run_id, host, port, read_token=read_token, sock=sock)
        click.echo(f"dashboard: {server.url}", err=True)
        if server.exposure_warning:
            click.echo(server.exposure_warning, err=True)
        return server.stop

    return serve


def check_rate(ctx: Any, param: Any, value: str | None) -> str | None:
    """Click callback: ``--rate`` must be ``Nx`` (parsed by the replay's own parser,
    ``ops.replay.rates.RateSpec``) before anything is created."""
    if value is None:
        return value
    from ops.replay.rates import RateError, RateSpec

    try:
        RateSpec.parse(rate=value)
    except RateError as e:
        raise click.UsageError(str(e), ctx=ctx) from None
    return value


def check_clock(ctx: Any, param: Any, value: str | None) -> str | None:
    """Click callback: ``--clock tsc`` is refused before anything is created where this
    host's TSC is not invariant (the partitions would refuse it at setup anyway)."""
    if value == "tsc":
        from omdp.clock import tsc_invariant

        ok, why = tsc_invariant()
        if not ok:
            raise click.UsageError(f"--clock tsc: {why}", ctx=ctx)
    return value


def clock_override(clock: str | None) -> tuple[str, ...]:
    """``--clock X`` as the ``--set`` override it stands for."""
    return () if clock is None else (f'run.clock="{clock}"',)


def pipeline_options(f: Any) -> Any:
    """The options a pipeline run takes (shared by ``omdp run`` and ``omdp demo``)."""
    for opt in reversed([
        click.option("--capture-date", default=None, help="replay <data>/captures/<date> (default: the newest capture)"),
        click.option("--rate", default="1x", show_default=True, callback=check_rate, help="Nx = N x 24,000 packets/s over all lines"),
        click.option("--seconds", type=float, default=None, callback=positive_seconds,
                     help="pipeline: replay this long (default 30); other topologies: stop after this long "
                          "(default: when the sources end)"),
        click.option("--no-loop", is_flag=True, help="replay the capture once (the run ends with it)"),
        click.option("--drop", "drops", default="", help="inject losses at the replayer, e.g. A:0.001"),
        click.option("--seed", type=int, default=0, show_default=True, help="seed of the injected losses"),
        click.option("--sample-every", type=int, default=None, help="engines forward 1 in N messages (default 1,600)"),
        click.option("--clock", type=click.Choice(["auto", "tsc", "realtime"]), default=None, callback=check_clock,
                     help="clock of the hop stamps: tsc (calibrated rdtsc; refused where the TSC is not invariant), "
                          "realtime, or auto (the topology's [run] clock, default: tsc where invariant)"),
        click.option("--config", "config_label", default="", help="label of this configuration in meta.parquet"),
        click.option("--address", "dashboard", default=None, metavar="HOST:PORT",
                     help="serve the live dashboard on HOST:PORT (port 0: any free one)"),
        click.option("--dashboard", "dashboard_old", default=None, hidden=True, help="old spelling of --address"),
        click.option("--quiet", "-q", is_flag=True, help="no progress bar or progress messages (the report still prints)"),
    ]):
        f = opt(f)
    return f


def run_pipeline_command(topology: str, data_dir: Path, overrides: tuple[str, ...], capture_date: str | None,
                         rate: str, seconds: float | None, no_loop: bool, drops: str, seed: int,
                         sample_every: int | None, config_label: str, dashboard: str | None, json_out: str | None,
                         run_id: str | None = None, sweep_id: str = "",
                         max_p99_from_intended: float | None = DEFAULT_RULE.max_p99_from_intended_us, rate_schedule: str = "",
                         reshard_buckets: int = 0, reshard_every_ms: float = 0.0, quiet: bool = False) -> int:
    """Assemble, run and report a pipeline; returns the exit status. A countdown of the
    replay's seconds runs on stderr meanwhile (``ops.progress.RunCountdown``)."""
    from omdp.topology.load import TopologyError
    from ops.pipeline.assemble import RunOptions
    from ops.pipeline.capture_info import CaptureInputError, latest_capture_date
    from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline

    date = capture_date or latest_capture_date(data_dir)
    if date is None:
        click.echo(f"no capture under {data_dir / 'captures'}: make one with `omdp synth` or give --capture-date", err=True)
        return 2
    hook = dashboard_hook(dashboard) if dashboard else None
    options = RunOptions(rate=rate, seconds=None if no_loop else seconds, loop=not no_loop, drops=drops, seed=seed,
                         sample_every=sample_every, max_p99_from_intended_us=max_p99_from_intended,
                         rate_schedule=rate_schedule, reshard_buckets=reshard_buckets,
                         reshard_every_ms=reshard_every_ms)
    try:
        with RunCountdown(None if no_loop else seconds, quiet=quiet) as progress:
            pp = plan_pipeline(topology, data_dir, date, options, overrides)
            progress.start()
            run = run_pipeline(pp, data_dir, config=config_label, sweep_id=sweep_id, run_id=run_id, dashboard=hook,
                               echo=progress.write)
    except (TopologyError, CaptureInputError) as e:
        click.echo(str(e), err=True)
        return 2
    click.echo(run.text())
    if json_out:
        _write_json(json_out, run.to_dict())
    if run.result.failure:
        click.echo(run.result.failure, err=True)
    return 0 if run.result.ok else 1


def is_pipeline(topology: str, overrides: tuple[str, ...]) -> bool:
    """True when the topology has a feed handler (it then runs with a capture)."""
    from omdp.topology.load import load_topology

    return any(op.kind == "feed_handler" for op in load_topology(topology, overrides).operators.values())


@click.command("run")
@click.argument("topology", callback=topology_argument)
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory (captures/, runs/<date>/<run_id>/)")
@click.option("--duration", type=float, default=None, hidden=True,
              help="deprecated alias of --seconds (docs/cli.md \"Option spellings\")")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a value of the file, e.g. operators.src.params.rate=1000 (repeatable)")
@click.option("--run-id", default=None, help="the run's id (default: time, pid and a random suffix)")
@click.option("--json", "json_out", default=None, metavar="OUT", callback=writable_output,
              help="write the run's report as JSON to OUT ('-': stdout)")
@click.option("--max-p99-from-intended", type=click.FloatRange(min=0.0), default=DEFAULT_RULE.max_p99_from_intended_us,
              show_default=True, metavar="US",
              help="a rate is sustainable only if p99 latency from intended stays below this (us; 0: no bound)")
@click.option("--rate-schedule", default=None, metavar="NX:S,...",
              help="pipeline: step the rate through stages, e.g. 2x:20s,10x:20s,2x:20s (the run lasts their sum)")
@click.option("--reshard-buckets", type=click.IntRange(min=0), default=0, metavar="N",
              help="pipeline: buckets (underlying % N, a power of two) that may move between the engines at run time "
                   "(`omdp reshard RUN`); the routing is then by bucket")
@click.option("--reshard-every", "reshard_every_ms", type=click.FloatRange(min=0.0), default=0.0, metavar="MS",
              help="pipeline, with --reshard-buckets: move a bucket to the next engine every MS milliseconds")
@pipeline_options
def run_command(topology: str, data_dir: Path, duration: float | None, overrides: tuple[str, ...], run_id: str | None,
                json_out: str | None, rate_schedule: str | None, reshard_buckets: int, reshard_every_ms: float,
                capture_date: str | None, rate: str,
                seconds: float | None, no_loop: bool, drops: str, seed: int, sample_every: int | None,
                config_label: str, dashboard: str | None, max_p99_from_intended: float, clock: str | None,
                quiet: bool, dashboard_old: str | None) -> None:
    """Run TOPOLOGY: one pinned process per partition, transports inserted between them."""
    dashboard = one_address(dashboard, dashboard_old, "--dashboard")
    overrides = overrides + clock_override(clock)
    if duration is not None:
        if seconds is not None:
            raise click.UsageError("--duration is the old spelling of --seconds: give only --seconds")
        seconds = check_positive("--duration", duration)
    if rate_schedule is not None:
        from ops.replay.rate_schedule import parse_rate_schedule
        from ops.replay.rates import RateError

        try:
            schedule = parse_rate_schedule(rate_schedule)
        except RateError as e:
            raise click.UsageError(str(e)) from None
        if seconds is not None or no_loop:
            raise click.UsageError("--rate-schedule sets the run's length: give it without --seconds or --no-loop")
        rate, seconds = f"{schedule.stages[0].rate_x:g}x", schedule.seconds
    from omdp.plan import build_plan
    from omdp.runtime.run import run_plan
    from omdp.topology.load import TopologyError, load_topology
    from ops.pipeline.registry import build_registry

    try:
        pipeline = is_pipeline(topology, overrides)
    except TopologyError as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    if rate_schedule is not None and not pipeline:
        raise click.UsageError("--rate-schedule paces a capture replay: TOPOLOGY has no feed handler")
    if reshard_every_ms and not reshard_buckets:
        raise click.UsageError("--reshard-every moves buckets: give --reshard-buckets N too")
    if reshard_buckets & (reshard_buckets - 1) or reshard_buckets > 4096:
        raise click.UsageError(f"--reshard-buckets {reshard_buckets}: a power of two, 1..4096")
    if (reshard_buckets or reshard_every_ms) and not pipeline:
        raise click.UsageError("--reshard-buckets/--reshard-every move buckets between engines: TOPOLOGY has no feed handler")
    if pipeline:
        sys.exit(run_pipeline_command(topology, data_dir, overrides, capture_date, rate,
                                      DEFAULT_PIPELINE_SECONDS if seconds is None else seconds, no_loop, drops, seed,
                                      sample_every, config_label, dashboard, json_out, run_id,
                                      max_p99_from_intended=max_p99_from_intended or None,
                                      rate_schedule=rate_schedule or "", reshard_buckets=reshard_buckets,
                                      reshard_every_ms=reshard_every_ms, quiet=quiet))
    try:
        plan = build_plan(load_topology(topology, overrides), build_registry(), topology)
        with RunCountdown(seconds, quiet=quiet) as progress:
            progress.start()
            result = run_plan(plan, data_dir, seconds, run_id, echo=progress.write)
    except TopologyError as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    if json_out == "-":
        _write_json("-", result.to_json())
    else:
        click.echo("\n".join(_summary(result)))
        if json_out:
            _write_json(json_out, result.to_json())
    if result.failure:
        click.echo(result.failure, err=True)
    sys.exit(0 if result.ok else 1)
