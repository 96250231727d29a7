"""``omdp plan TOPOLOGY``: the physical plan of a topology file, without running it.

Shows partitions, their operators and CPUs, the transport pairs the runtime inserts (one
per upstream -> downstream partition, with the streams multiplexed on it) and the fused
edges. Checks the file against the registry but not against this machine: a 32-core or
39-host plan prints anywhere; ``omdp run`` checks CPUs and hosts.

For a pipeline topology, ``--data``/``--capture-date`` assemble it with a capture first
(as ``omdp run`` does), and the plan gains the lines of each feed handler and the routing
table of underlyings to engines, both stored in plan.json (``--json``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR, positive_seconds, topology_argument
from ops.cli.run import check_rate


@click.command("plan")
@click.argument("topology", required=False, callback=topology_argument)
@click.option("--list", "list_shipped", is_flag=True, help="list the topologies shipped with omdp (run them by name)")
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON (what plan.json holds)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a value of the file, e.g. operators.src.params.rate=1000 (repeatable)")
@click.option("--schema", is_flag=True, help="print the topology file's JSON schema (fields, defaults) and exit")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory holding captures/ (pipeline topologies)")
@click.option("--capture-date", default=None, help="assemble a pipeline with <data>/captures/<date>")
@click.option("--rate", default="1x", show_default=True, callback=check_rate, help="replay rate written into the plan (pipelines)")
@click.option("--seconds", type=float, callback=positive_seconds, default=30.0, show_default=True, help="replay length written into the plan")
def plan_command(topology: str | None, list_shipped: bool, as_json: bool, overrides: tuple[str, ...], schema: bool, data_dir: Path,
                 capture_date: str | None, rate: str, seconds: float) -> None:
    """Plan TOPOLOGY (a file, or the name of a shipped one): partitions, operators, inserted
    transports, CPUs (and a pipeline's routing)."""
    from omdp.plan import build_plan
    from omdp.plan_text import format_plan
    from omdp.topology.load import TopologyError, load_topology
    from omdp.topology.schema import Topology
    from ops.pipeline.assemble import RunOptions, check_engine_edges, pipeline_groups
    from ops.pipeline.capture_info import CaptureInputError
    from ops.pipeline.plan_section import format_pipeline, format_unassembled
    from ops.pipeline.registry import build_registry
    from ops.pipeline.run_pipeline import plan_pipeline

    if list_shipped:
        from ops.topologies import shipped

        for name, description in shipped():
            click.echo(f"{name:24} {description}")
        return
    if schema:
        click.echo(json.dumps(Topology.model_json_schema(by_alias=True), indent=2))
        return
    if topology is None:
        raise click.UsageError("TOPOLOGY is required (or --list, --schema)")
    try:
        topo = load_topology(topology, overrides)
        is_pipeline = any(op.kind == "feed_handler" for op in topo.operators.values())
        if is_pipeline and capture_date:
            pp = plan_pipeline(topology, data_dir, capture_date, RunOptions(rate=rate, seconds=seconds), overrides)
            plan, extra = pp.plan, format_pipeline(pp.assembly)
        else:
            plan = build_plan(topo, build_registry(), topology)
            extra = ""
            if is_pipeline:
                groups = pipeline_groups(topo, topology)
                check_engine_edges(plan, groups, groups.replicas[groups.engines])
                extra = format_unassembled(groups)
    except (TopologyError, CaptureInputError) as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    click.echo(plan.model_dump_json(indent=2) if as_json else format_plan(plan) + extra)
