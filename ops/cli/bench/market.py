"""``omdp bench market-state``: market statistics' CPU per message, shared state against the
re-partitioning baseline, over partitions and key skew (ops/market/bench.py)."""
from __future__ import annotations

import json
from pathlib import Path

import click


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected numbers separated by commas") from None


def _emit(r: dict) -> str:
    """The windows' emission after their end, or n/a when no window closed while records came."""
    if r.get("emit_wall_us_p50") is None:
        return "n/a"
    return (f"{r['emit_event_ms_p50']:.0f} / {r['emit_event_ms_p99']:.0f} ms, "
            f"wall {r['emit_wall_us_p50']:,.0f} / {r['emit_wall_us_p99']:,.0f} us, "
            f"CPU {r['emit_cpu_us_p50']:,.0f} / {r['emit_cpu_us_p99']:,.0f} us")


@click.command("market-state")
@click.option("--messages", type=click.IntRange(min=10_000), default=1_000_000, show_default=True,
              help="messages in the synthetic stream")
@click.option("--partitions", default="1,2,4", show_default=True, help="partition counts (leaders = partitions, <= 8)")
@click.option("--skew", "skews", default="0.2,1.0,2.0", show_default=True, help="Zipf exponents of the underlyings")
@click.option("--window-ms", type=click.IntRange(min=1), default=1000, show_default=True, help="window length")
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True,
              help="runs per point; medians reported")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
def bench_market(messages: int, partitions: str, skews: str, window_ms: int, runs: int, json_out: Path | None) -> None:
    """CPU per message of market statistics: shared state vs the re-partitioning baseline."""
    from ops.market.bench import run_market_bench

    parts = [int(p) for p in _floats(partitions)]
    if not parts or any(p < 1 or p > 64 for p in parts):
        raise click.BadParameter(f"{partitions!r}: partition counts must be 1 .. 64", param_hint="--partitions")
    rows = run_market_bench(messages, parts, _floats(skews), window_ms, runs)
    click.echo(f"{messages:,} messages, {window_ms} ms windows, median of {runs} runs; thread CPU, no transport")
    click.echo(f"{'skew':>5} {'parts':>5} {'mode':>7} {'partition ns/msg':>17} {'leader ns/msg':>14} "
               f"{'total ns/msg':>13} {'deltas/msg':>11} {'baseline/shared':>16} "
               f"{'emitted after end: event ms, wall us, CPU us (p50 / p99)':>64}")
    shared = {}
    for r in rows:
        key = (r["skew"], r["partitions"])
        if r["mode"] == "shared":
            shared[key] = r["total_ns_per_msg"]
        ratio = f"{r['total_ns_per_msg'] / shared[key]:.1f}x" if r["mode"] == "route" and key in shared else ""
        click.echo(f"{r['skew']:>5g} {r['partitions']:>5} {r['mode']:>7} {r['partition_ns_per_msg']:>17.1f} "
                   f"{r['leader_ns_per_msg']:>14.1f} {r['total_ns_per_msg']:>13.1f} "
                   f"{r['deltas_per_msg']:>11.3f} {ratio:>16} {_emit(r):>64}")
    if json_out:
        json_out.write_text(json.dumps(rows, indent=2))
        click.echo(f"wrote {json_out}")
