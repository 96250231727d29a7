"""``omdp bench replay``: the replayer's maximum send rate and its pacing error (the work is in
``ops.bench.replay``)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.cli.options import positive_seconds


_SENDERS = {"both": ("udp", "packet"), "all": ("udp", "packet", "packet_ring"), "udp,xdp": ("udp", "xdp")}
"""--multicast-sender choices that name several senders, measured in turn at every step."""


@click.command("replay")
@click.option("--capture", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="capture directory to replay (default: one made with omdp synth)")
@click.option("--capture-seconds", type=float, default=5.0, show_default=True,
              help="length of the capture synthesized when --capture is not given")
@click.option("--seconds", type=float, callback=positive_seconds, default=3.0, show_default=True, help="longest run of each measurement")
@click.option("--cpus", default="0", show_default=True,
              help="pin the sender to this CPU ('' for none); a ring's consumer runs on another")
@click.option("--sweep", default="7.5,12.5,15,20", show_default=True,
              help="rates (x) tried, beside 1x, 5x and 10x, to find where multicast falls behind (stops at the first)")
@click.option("--realtime", is_flag=True, help="senders run SCHED_FIFO with their memory locked (omdp replay --realtime)")
@click.option("--multicast-sender", "senders",
              type=click.Choice(["udp", "packet", "packet_ring", "both", "all", "xdp", "udp,xdp"]),
              default="udp", show_default=True,
              help="multicast through a UDP socket, a packet socket past the qdisc (CAP_NET_RAW), its mapped TX "
                   "ring (packet_ring), 'both' (udp and packet side by side) or 'all' three; 'xdp' (AF_XDP) or "
                   "'udp,xdp' (side by side) send over a veth pair across two namespaces, not loopback (root, "
                   "docs/xdp.md)")
@click.option("--pacing-rates", default="1,5,10", show_default=True, help="rates (x) of the pacing-error runs")
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="write the results here")
def bench_replay(capture: Path | None, capture_seconds: float, seconds: float, cpus: str, sweep: str,
                 realtime: bool, senders: str, pacing_rates: str, json_out: Path | None) -> None:
    """Maximum packets/s over loopback multicast (or a veth pair, with xdp), and pacing error
    at 1x, 5x, 10x (--pacing-rates)."""
    from ops.bench.replay import render_table, render_targets, run_replay_bench
    from ops.netns.veth import xdp_veth_unavailable

    cpu_tuple = tuple(int(c) for c in cpus.split(",") if c.strip())
    rates = _rates(sweep, "--sweep")
    paced = _rates(pacing_rates, "--pacing-rates")
    sender_tuple = _SENDERS.get(senders, (senders,))
    why = xdp_veth_unavailable() if "xdp" in sender_tuple else None
    if why:
        raise click.UsageError(f"--multicast-sender {senders}: {why}")
    doc = run_replay_bench(capture, capture_seconds=capture_seconds, seconds=seconds, cpus=cpu_tuple, sweep=rates,
                           realtime=realtime, senders=sender_tuple, pacing_rates=paced)
    click.echo(render_table(doc))
    click.echo(render_targets(doc))
    click.echo(f"multicast keeps up to {doc['multicast_keeps_up_to_x']}x; behind at {doc['multicast_behind_at_x']}x")
    if json_out is not None:
        write_bench_json(json_out, doc)


def _rates(text: str, option: str) -> tuple[float, ...]:
    """Comma-separated rates (x), each > 0; a BadParameter naming the option otherwise."""
    try:
        out = tuple(float(x.strip().rstrip("xX")) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give rates such as 5,10,20", param_hint=option) from None
    if any(x <= 0 for x in out):
        raise click.BadParameter(f"{text!r}: rates are > 0", param_hint=option)
    return out
