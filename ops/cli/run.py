"""``omdp run TOPOLOGY``: run a topology, one process per partition, until its sources end,
``--duration`` passes or Ctrl-C (once: sources stop and queues drain; twice: stop now).

Writes ``<data>/runs/<date>/<run_id>/``: plan.json, run.json (status, every operator's
counters) and logs/<partition>.log. Exit status: 0 when the run ended or was stopped
cleanly, 1 when a partition died, 2 when the topology cannot run here.

Options that set values of the topology (a pipeline's ``--rate``, ``--speed`` ...) are
``--set`` overrides under another name: add them here as click options that extend
``overrides``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ops.cli.main import cli


def _summary(result) -> list[str]:  # noqa: ANN001 - omdp.runtime.supervisor.RunResult, imported lazily
    lines = [f"run {result.run_id}: {result.status} in {result.ended_at - result.started_at:.1f} s; {result.run_dir}"]
    for name, p in result.partitions.items():
        lines.append(f"  {name}: {p['state']} ({p['exit_description']})" + (f" - {p['error']}" if p.get("error") else ""))
        for op, counters in ((p.get("report") or {}).get("operators") or {}).items():
            shown = ", ".join(f"{k}={v}" for k, v in counters.items() if v and not k.endswith("_ns"))
            lines.append(f"    {op}: {shown or '-'}")
    return lines


@cli.command("run")
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory (runs go to runs/<date>/<run_id>/)")
@click.option("--duration", type=float, default=None, help="stop after this many seconds (sources stop, queues drain)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a value of the file, e.g. operators.src.params.rate=1000 (repeatable)")
@click.option("--run-id", default=None, help="the run's id (default: time, pid and a random suffix)")
@click.option("--json", "as_json", is_flag=True, help="print run.json instead of the summary")
def run_command(topology: str, data_dir: Path, duration: float | None, overrides: tuple[str, ...],
                run_id: str | None, as_json: bool) -> None:
    """Run TOPOLOGY: one pinned process per partition, transports inserted between them."""
    from omdp.plan import build_plan
    from omdp.runtime.run import run_plan
    from omdp.topology.load import TopologyError, load_topology
    from ops.pipeline.registry import build_registry

    try:
        plan = build_plan(load_topology(topology, overrides), build_registry(), topology)
        result = run_plan(plan, data_dir, duration, run_id, echo=lambda line: click.echo(line, err=True))
    except TopologyError as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    click.echo(json.dumps(result.to_json(), indent=2, default=str) if as_json else "\n".join(_summary(result)))
    if result.failure:
        click.echo(result.failure, err=True)
    sys.exit(0 if result.ok else 1)
