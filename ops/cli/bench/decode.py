"""``omdp bench decode``: OPRA FAST V2 decode throughput per core (the work is in
``ops.bench.decode``)."""
from __future__ import annotations


import click

from ops.cli.bench.output import write_bench_json


def _row(name: str, r: dict) -> str:
    c, w = r["msgs_per_s_cpu"], r["msgs_per_s_wall"]
    return f"{name:34s} {c['median'] / 1e6:10.2f} {c['min'] / 1e6:8.2f} {c['max'] / 1e6:8.2f} {w['median'] / 1e6:10.2f}"


@click.command("decode")
@click.argument("capture", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["pcap", "siac"]), default=None, help="Capture format (default: by magic).")
@click.option("--random-messages", type=int, default=None,
              help="No capture: decode this many random valid messages built in memory (ops.bench.random_capture).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of --random-messages.")
@click.option("--repeats", type=int, default=7, show_default=True, help="Repetitions of the C batch path (median reported).")
@click.option("--chunk-packets", type=int, default=1024, show_default=True, help="Packets per C batch call.")
@click.option("--python-packets", type=int, default=20000, show_default=True, help="Packets for the per-packet Python API.")
@click.option("--in-cache-packets", type=click.IntRange(min=0), default=20000, show_default=True,
              help="Also run the per-packet loop over the first N packets only, in cache (0: not at all).")
@click.option("--in-cache-passes", type=click.IntRange(min=1), default=60, show_default=True,
              help="Passes of the in-cache loop; its 'max' column is the best pass, the figure to compare builds by "
                   "on a machine whose speed drifts.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
def decode_bench(capture: str | None, fmt: str | None, random_messages: int | None, seed: int, repeats: int,
                 chunk_packets: int, python_packets: int, in_cache_packets: int, in_cache_passes: int,
                 json_out: str | None) -> None:
    """Decode throughput (messages/s per core): per packet from C as the feed handler decodes, C batch path, per-packet Python API."""
    if capture is None and random_messages is None:
        raise click.UsageError("give a CAPTURE or --random-messages N")
    from omdp.runtime.machine import machine_info
    from ops.bench.decode import held_in_memory, run_decode_bench
    from ops.bench.random_capture import random_packets
    from ops.bench.targets import DECODE

    if capture is not None:
        buf, offsets, lengths = held_in_memory(capture, fmt)
        source = capture
    else:
        buf, offsets, lengths = random_packets(int(random_messages), seed)
        source = f"random:{random_messages}:seed={seed}"
    res = run_decode_bench(buf, offsets, lengths, repeats=repeats, chunk=chunk_packets, python_packets=python_packets,
                           in_cache_packets=in_cache_packets, in_cache_passes=in_cache_passes)
    res["source"] = source
    res["machine"] = machine_info()
    cap = res["capture"]
    click.echo(f"capture {source}: {cap['packets']} packets, {cap['messages']} messages, "
               f"{cap['msgs_per_packet']:.2f} messages/packet, {cap['bytes_per_packet']:.0f} bytes/packet")
    click.echo(f"machine: {res['machine']['cpu_model']}, {res['machine']['logical_cpus']} CPUs, "
               f"load {res['machine']['load_average'][0]:.2f}")
    click.echo(f"{'path':34s} {'M msg/s cpu':>10s} {'min':>8s} {'max':>8s} {'M msg/s wall':>10s}")
    click.echo(_row("C per packet, from C (as the FH)", res["c_per_packet"]))
    hot = res["c_per_packet_in_cache"]
    if hot is not None:
        click.echo(_row(f"  the same, first {hot['packets']} in cache", hot)
                   + f"   (best of {hot['passes']} passes: {hot['best_msgs_per_s_cpu'] / 1e6:.2f})")
    click.echo(_row(f"C batch ({chunk_packets} packets/call)", res["c_batch"]))
    click.echo(_row("C batch, field-by-field path only", res["c_batch_field_by_field"]))
    click.echo(_row(f"Python decode_packet ({res['python_per_packet']['packets']} pkts)", res["python_per_packet"]))
    per_core = res["c_per_packet"]["msgs_per_s_cpu"]["median"]
    click.echo(DECODE.line(per_core, f"{cap['messages']:,} messages of this capture"))
    res["targets"] = [DECODE.verdict(per_core)]
    if json_out:
        write_bench_json(json_out, res)
        click.echo(f"wrote {json_out}")
