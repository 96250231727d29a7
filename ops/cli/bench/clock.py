"""``omdp bench clock``: a hop stamp's cost on the TSC and on CLOCK_REALTIME, and the TSC
clock's calibration error and drift (ops/bench/clock.py)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json


@click.command("clock")
@click.option("--calls", default=2_000_000, show_default=True, help="stamps per timed run")
@click.option("--runs", default=5, show_default=True, help="runs of each clock, alternated; the median is reported")
@click.option("--seconds", type=click.FloatRange(min=0.1, max=3600), default=5.0, show_default=True,
              help="how long the TSC clock's drift against CLOCK_REALTIME is followed")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
def bench_clock(calls: int, runs: int, seconds: float, json_out: Path | None) -> None:
    """Time a stamp on each clock and follow the TSC clock's drift."""
    from ops.bench.clock import run_clock_bench
    from ops.bench.targets import TSC_STAMP

    r = run_clock_bench(calls=calls, runs=runs, seconds=seconds)
    click.echo(f"machine: {r['machine']['cpu_model']} ({r['machine']['logical_cpus']} CPUs)")
    rt = r["realtime_ns_per_stamp"]
    click.echo(f"stamp on CLOCK_REALTIME (vDSO): {rt['median']:.1f} ns median of {runs} runs "
               f"({', '.join(f'{v:.1f}' for v in rt['runs'])})")
    if not r["tsc_invariant"]:
        click.echo(f"TSC clock refused: {r['why_not']}")
        click.echo(TSC_STAMP.line(None, "the TSC clock was refused"))
        r["targets"] = [TSC_STAMP.verdict(None)]
    else:
        ts, cal, d = r["tsc_ns_per_stamp"], r["calibration"], r["drift"]
        click.echo(f"stamp on the TSC clock: {ts['median']:.1f} ns median ({', '.join(f'{v:.1f}' for v in ts['runs'])})")
        fl = r["tsc_read_ns"]
        click.echo(f"bare TSC read (rdtsc alone, the floor of a TSC stamp on this CPU): {fl['median']:.1f} ns median "
                   f"({', '.join(f'{v:.1f}' for v in fl['runs'])})")
        click.echo(f"calibration: {cal['ticks_per_ns']:.6f} ticks/ns, pairing error {cal['pair_error_ns']} ns, "
                   f"rate error {cal['rate_error_ppm']:.3f} ppm")
        click.echo(f"drift against CLOCK_REALTIME over {d['seconds']:g} s ({d['checks']} checks): at most "
                   f"{d['max_abs_drift_ns']} ns; stated error then {d['stated_error_ns']} ns; "
                   f"{d['over_error']} checks beyond it; the checks bound the error at {d['checked_bound_ns']} ns")
        click.echo(TSC_STAMP.line(ts["median"]))
        r["targets"] = [TSC_STAMP.verdict(ts["median"])]
    if json_out:
        write_bench_json(json_out, r)
        click.echo(f"wrote {json_out}")
