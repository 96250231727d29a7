"""``omdp bench elastic``: the elastic engine partition's overhead beside the static engine,
and a rate-step run of its control loop (ops/bench/elastic.py)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.replay.rate_schedule import parse_rate_schedule
from ops.replay.rates import RateError


@click.command("elastic")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
@click.option("--rate-schedule", default="2x:20s,10x:20s,2x:20s", show_default=True,
              help="offered rate per stage (Nx:seconds,...); 'none' skips the rate-step run")
@click.option("--period", "period_s", default=1.0, show_default=True, type=float, help="control period, seconds")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64), help="worker pool size")
@click.option("--overhead-runs", default=5, show_default=True, type=click.IntRange(0, 100),
              help="static/elastic pairs timed (0 skips the overhead runs)")
@click.option("--messages", default=1_000_000, show_default=True, type=click.IntRange(1000), help="re-quotes per overhead run")
@click.option("--buckets", default=16, show_default=True, type=click.IntRange(1, 1024),
              help="underlying buckets (a power of two)")
@click.option("--stream-messages", default=2_000_000, show_default=True, type=click.IntRange(1000),
              help="re-quotes in the rate-step stream (offered in a cycle)")
def bench_elastic(json_out: Path | None, rate_schedule: str, period_s: float, workers: int, overhead_runs: int,
                  messages: int, stream_messages: int, buckets: int) -> None:
    """Measure the elastic engine partition against the static engine."""
    if buckets & (buckets - 1):
        raise click.UsageError(f"--buckets must be a power of two (got {buckets})")
    if not period_s > 0:
        raise click.UsageError(f"--period must be positive (got {period_s})")
    try:
        schedule = None if rate_schedule == "none" else parse_rate_schedule(rate_schedule)
    except RateError as e:
        raise click.UsageError(str(e)) from None
    from ops.bench.elastic import run_elastic_bench

    r = run_elastic_bench(schedule, period_s, workers, overhead_runs, messages, stream_messages, buckets)
    m = r["machine"]
    click.echo(f"machine: {m['cpu_model']} ({m['logical_cpus']} CPUs), load {m['load_average'][0]:.2f} at start, "
               f"{r['machine_after']['load_average'][0]:.2f} at end")
    if "overhead" in r:
        o = r["overhead"]
        click.echo(f"overhead, {o['runs']} runs alternated, {o['messages_per_run']} messages each, {o['series']} series:")
        click.echo(f"  static engine, batches of 1,024:     {o['static_median']:6.1f} ns/message CPU (median; "
                   f"{', '.join(f'{v:.1f}' for v in o['static_ns_per_message'])})")
        for k, label in (("inline", "worker 0 inline"), ("thread", "worker 0 a thread")):
            e = o[k]
            click.echo(f"  elastic, level 1, {label}, {o['buckets']} buckets: {e['median']:6.1f} ns/message CPU "
                       f"(median; {', '.join(f'{v:.1f}' for v in e['ns_per_message'])}); worker busy "
                       f"{e['worker_busy_median']:.1f}")
            click.echo(f"    / static: per run median {e['ratio_median']:.3f} "
                       f"({', '.join(f'{v:.3f}' for v in e['ratio_per_run'])}); of the medians {e['ratio_of_medians']:.3f}")
        click.echo(f"  signals equal: {o['signals_equal']}; 1-min load per run {', '.join(f'{v:.1f}' for v in o['load_1min'])}")
    if "rate_step" in r:
        s = r["rate_step"]
        click.echo(f"rate step {s['schedule']}, period {s['period_s']} s, pool {s['workers']}, steps at "
                   f"{s['steps_at_s']} s:")
        click.echo("     t   offered   fed M/s  level  busy  sat  decision       -> next")
        for p in s["periods"]:
            click.echo(f"  {p['t_s']:5.1f}  {p['offered_x']:6.1f}x  {p['fed_per_s'] / 1e6:7.2f}  {p['level']:5d}  "
                       f"{p['busy']:4.2f}  {'y' if p['saturated'] else 'n':3}  {p['decision']:13}  {p['next_level']}")
        click.echo(f"  fed {s['messages_fed']} of {s['messages_offered']} offered "
                   f"({100 * s['fed_fraction_of_schedule']:.2f}%); processed {s['processed']}, lost/duplicated "
                   f"{s['lost']}; moves {s['moves']}; signals {s['signals']} (static {s['signals_static']}, equal: "
                   f"{s['signals_equal']}); final NBBO of {s['series']} series equal: {s['books_equal']}")
        f = s["followed"]
        click.echo(f"  level: rose {f['rose_after_periods'] or 'never'} period(s) after the step up (highest "
                   f"{f['max_level']}), back at 1 {f['fell_after_periods'] or 'never'} period(s) after the step down; "
                   f"{s['messages_skipped']} offered messages skipped (not taken within {s['max_lag_s']} s); "
                   f"{s['inplace']} run in place")
    if json_out:
        write_bench_json(json_out, r)
        click.echo(f"wrote {json_out}")
