"""``omdp``: the command line of omdp. Each command lives in its own module of ``ops.cli``."""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="omdp")
def cli() -> None:
    """omdp: low-latency OPRA options market data processing.

    Decode OPRA FAST V2 captures, synthesize February-2008-like feeds, replay them,
    run the feed handler -> decision engine -> metrics pipeline over Vega rings,
    watch latency live, and analyse runs on Spark.
    """


def _register() -> None:
    # One import per command module; each module adds its commands to ``cli``.
    import ops.cli.bench  # noqa: F401
    import ops.bench.analytics  # noqa: F401
    import ops.bench.collector  # noqa: F401
    import ops.bench.decode  # noqa: F401
    import ops.bench.synth  # noqa: F401
    import ops.cli.analytics  # noqa: F401
    import ops.cli.bench_engine  # noqa: F401
    import ops.cli.bench_replay  # noqa: F401
    import ops.cli.bench_sweep  # noqa: F401
    import ops.cli.capture  # noqa: F401
    import ops.cli.dashboard  # noqa: F401
    import ops.cli.decode  # noqa: F401
    import ops.cli.demo  # noqa: F401
    import ops.cli.native_info  # noqa: F401
    import ops.cli.plan  # noqa: F401
    import ops.cli.replay  # noqa: F401
    import ops.cli.run  # noqa: F401
    import ops.cli.runs  # noqa: F401
    import ops.cli.shm  # noqa: F401
    import ops.cli.synth  # noqa: F401


def main() -> None:
    """Console entry point."""
    _register()
    cli()


if __name__ == "__main__":
    main()
