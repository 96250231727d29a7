"""``omdp bench transport``: the paper's Figure 7 on this machine (the work is in
``ops.bench.transport`` and ``ops.bench.transport_hosts``)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json


@click.command("transport")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the full report here")
@click.option("--markdown", "md_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the tables (as in docs/benchmarks.md) here")
@click.option("--quick", is_flag=True, help="two sizes each and few samples: a smoke run for tests")
@click.option("--hosts", type=click.Choice(["local", "netns"]), default="local", show_default=True,
              help="netns: the network media (vega-tcp, tcp, vega-ib where a device exists) between two "
                   "namespace hosts, beside loopback (needs root)")
def transport(json_out: Path | None, md_out: Path | None, quick: bool, hosts: str) -> None:
    """Figure 7 of the paper on this machine: one-way latency (8..512 B) and throughput
    (32 B..16 KB) of vega-shm (C loop, Python, Python batched), fused, tcp, zmq and
    mpqueue, with memcpy and a cache-line ping-pong as ceiling and floor. Sender on CPU 0,
    receiver on CPU 1; every payload checksummed. With --hosts netns: vega-tcp against
    tcp (and vega-ib) across two namespace hosts and on loopback."""
    from ops.bench.transport import Plan, measure
    from ops.bench.transport_report import markdown

    plan = Plan.quick() if quick else Plan.full()
    say = lambda line: click.echo(line, err=True)  # noqa: E731
    command = "omdp bench transport" + (" --quick" if quick else "") + (" --hosts netns" if hosts == "netns" else "") \
        + (f" --json {json_out}" if json_out else "") + (f" --markdown {md_out}" if md_out else "")
    if hosts == "netns":
        from ops.bench.transport_hosts import HostPlan, markdown_hosts, measure_hosts

        data = measure_hosts(HostPlan.quick() if quick else HostPlan.full(), say)
        render = markdown_hosts
    else:
        data = measure(plan, say=say).as_dict()
        render = markdown
    data["command"] = command
    if json_out:
        write_bench_json(json_out, data, indent=1, default=float)
    text = render(data, data["command"])
    if md_out:
        md_out.write_text(text)
    click.echo(text)
