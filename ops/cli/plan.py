"""``omdp plan TOPOLOGY``: the physical plan of a topology file, without running it.

Shows partitions, their operators and CPUs, the transport pairs the runtime inserts (one
per upstream -> downstream partition, with the streams multiplexed on it) and the fused
edges. Checks the file against the registry but not against this machine: a 32-core or
39-host plan prints anywhere; ``omdp run`` checks CPUs and hosts.
"""
from __future__ import annotations

import json
import sys

import click

from ops.cli.main import cli


@cli.command("plan")
@click.argument("topology", type=click.Path(dir_okay=False), required=False)
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON (what plan.json holds)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a value of the file, e.g. operators.src.params.rate=1000 (repeatable)")
@click.option("--schema", is_flag=True, help="print the topology file's JSON schema (fields, defaults) and exit")
def plan_command(topology: str | None, as_json: bool, overrides: tuple[str, ...], schema: bool) -> None:
    """Plan TOPOLOGY: partitions, operators, inserted transports, CPUs."""
    from omdp.plan import build_plan
    from omdp.plan_text import format_plan
    from omdp.topology.load import TopologyError, load_topology
    from omdp.topology.schema import Topology
    from ops.pipeline.registry import build_registry

    if schema:
        click.echo(json.dumps(Topology.model_json_schema(by_alias=True), indent=2))
        return
    if topology is None:
        raise click.UsageError("TOPOLOGY is required (or --schema)")
    try:
        plan = build_plan(load_topology(topology, overrides), build_registry(), topology)
    except TopologyError as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    click.echo(plan.model_dump_json(indent=2) if as_json else format_plan(plan))
