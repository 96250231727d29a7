"""``omdp bench ...``: benchmarks that measure, judge their targets and write JSON.

One module per command here (its options and what it prints); the measuring code is in
``ops/bench/``. This module builds the ``bench`` group from them; ``ops.cli.main`` adds the
group to ``omdp``."""
from __future__ import annotations

import click

from ops.cli.bench.analytics import analytics_bench
from ops.cli.bench.clock import bench_clock
from ops.cli.bench.collector import collector
from ops.cli.bench.decode import decode_bench
from ops.cli.bench.elastic import bench_elastic
from ops.cli.bench.engine import bench_engine
from ops.cli.bench.market import bench_market
from ops.cli.bench.replay import bench_replay
from ops.cli.bench.report import bench_report
from ops.cli.bench.scaling import bench_scaling
from ops.cli.bench.soak import bench_soak
from ops.cli.bench.sweep import bench_sweep
from ops.cli.bench.synth import bench_synth
from ops.cli.bench.transport import transport


@click.group("bench")
def bench() -> None:
    """Benchmarks (results and commands: docs/benchmarks.md)."""


for _command in (analytics_bench, bench_clock, bench_elastic, bench_engine, bench_market, bench_replay, bench_report,
                 bench_scaling, bench_soak, bench_sweep, bench_synth,
                 collector, decode_bench, transport):
    bench.add_command(_command)
