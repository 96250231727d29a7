"""``omdp``: the command line of omdp.

Each command (or group of commands) lives in its own module of ``ops.cli`` and knows
nothing of its parent; this module imports them and adds them to ``cli``. The ``bench``
group is built the same way in ``ops/cli/bench/``."""
from __future__ import annotations

import click

from ops.cli.analytics import analytics
from ops.cli.bench import bench
from ops.cli.capacity import capacity
from ops.cli.capture import capture
from ops.cli.dashboard import dashboard
from ops.cli.decode import decode
from ops.cli.demo import demo
from ops.cli.errors import OmdpGroup
from ops.cli.native_info import info
from ops.cli.plan import plan_command
from ops.cli.replay import replay
from ops.cli.reshard import reshard
from ops.cli.run import run_command
from ops.cli.runs import runs
from ops.cli.shm import shm
from ops.cli.synth import synth


@click.group(cls=OmdpGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Documentation: README.md and docs/ (architecture: docs/architecture.md).")
@click.version_option(package_name="omdp")
def cli() -> None:
    """omdp: low-latency OPRA options market data processing.

    Decode OPRA's two formats (FAST V2 of 2008, today's binary OBI v6), synthesize
    either market, replay captures, run the feed handler -> decision engine -> metrics
    pipeline over Vega rings (or MPI), watch latency live, and analyse runs on Spark.
    """


for _command in (analytics, bench, capacity, capture, dashboard, decode, demo, info, plan_command, replay, reshard,
                 run_command, runs, shm, synth):
    cli.add_command(_command)


def main() -> None:
    """Console entry point."""
    cli()


if __name__ == "__main__":
    main()
