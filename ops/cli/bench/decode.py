"""``omdp bench decode``: OPRA decode throughput per core, FAST V2 or the binary OBI feed
beside FAST V2 on the same messages (the work is in ``ops.bench.decode``)."""
from __future__ import annotations


import click

from ops.cli.bench.output import write_bench_json


def _row(name: str, r: dict) -> str:
    c, w = r["msgs_per_s_cpu"], r["msgs_per_s_wall"]
    return f"{name:34s} {c['median'] / 1e6:10.2f} {c['min'] / 1e6:8.2f} {c['max'] / 1e6:8.2f} {w['median'] / 1e6:10.2f}"


@click.command("decode")
@click.argument("capture", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["auto", "pcap", "siac"]), default="auto", show_default=True,
              help="Capture format (auto: by magic).")
@click.option("--feed", type=click.Choice(["auto", "fast", "obi"]), default="auto", show_default=True,
              help="The capture's feed (auto: from its first packet's bytes). With --random-messages, obi builds the "
                   "messages as OBI blocks and as FAST V2 packets and times both.")
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
def decode_bench(capture: str | None, fmt: str, feed: str, random_messages: int | None, seed: int, repeats: int,
                 chunk_packets: int, python_packets: int, in_cache_packets: int, in_cache_passes: int,
                 json_out: str | None) -> None:
    """Decode throughput (messages/s per core): per packet from C as the feed handler decodes, C batch path, per-packet Python API."""
    if capture is None and random_messages is None:
        raise click.UsageError("give a CAPTURE or --random-messages N")
    from ops.bench.decode import held_in_memory, run_decode_bench
    from ops.bench.random_capture import random_packets
    from ops.bench.targets import DECODE

    if capture is not None:
        buf, offsets, lengths = held_in_memory(capture, None if fmt == "auto" else fmt)
        source = capture
        if feed == "auto":
            from feedhandlers.opra_obi import detect_feed

            first = next((bytes(buf[o : o + n]) for o, n in zip(offsets[:64].tolist(), lengths[:64].tolist()) if n), b"")
            feed = detect_feed(first) or "fast"
    else:
        source = f"random:{random_messages}:seed={seed}"
        if feed == "obi":
            from ops.bench.random_capture import random_obi_blocks

            buf, offsets, lengths = random_obi_blocks(int(random_messages), seed)
        else:
            buf, offsets, lengths = random_packets(int(random_messages), seed)
    if feed == "obi":
        _obi_bench(buf, offsets, lengths, source, repeats, in_cache_packets, in_cache_passes, json_out)
        return
    res = run_decode_bench(buf, offsets, lengths, repeats=repeats, chunk=chunk_packets, python_packets=python_packets,
                           in_cache_packets=in_cache_packets, in_cache_passes=in_cache_passes)
    _stamp(res, source)
    cap = res["capture"]
    click.echo(f"capture {source}: {cap['packets']} packets, {cap['messages']} messages, "
               f"{cap['msgs_per_packet']:.2f} messages/packet, {cap['bytes_per_packet']:.0f} bytes/packet")
    _echo_machine_and_columns(res)
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


def _stamp(res: dict, source: str) -> None:
    """What was measured, and on what."""
    from omdp.runtime.machine import machine_info

    res["source"] = source
    res["machine"] = machine_info()


def _echo_machine_and_columns(res: dict) -> None:
    """The machine line and the table's column heads, shared by both feeds' tables."""
    click.echo(f"machine: {res['machine']['cpu_model']}, {res['machine']['logical_cpus']} CPUs, "
               f"load {res['machine']['load_average'][0]:.2f}")
    click.echo(f"{'path':34s} {'M msg/s cpu':>10s} {'min':>8s} {'max':>8s} {'M msg/s wall':>10s}")


def _obi_bench(buf, offsets, lengths, source: str, repeats: int, in_cache_packets: int, in_cache_passes: int,  # type: ignore[no-untyped-def]
               json_out: str | None) -> None:
    """OBI per block from C, beside FAST V2 per packet from C on the same messages."""
    from ops.bench.decode import fast_twin_of_obi, run_obi_decode_bench
    from ops.bench.targets import OBI_DECODE, OBI_OVER_FAST

    res = run_obi_decode_bench((buf, offsets, lengths), fast_twin_of_obi(buf, offsets, lengths), repeats=repeats,
                               in_cache_packets=in_cache_packets, in_cache_passes=in_cache_passes)
    _stamp(res, source)
    cap, twin = res["capture"], res["fast_twin"]
    click.echo(f"OBI capture {source}: {cap['packets']} blocks, {cap['messages']} messages, "
               f"{cap['msgs_per_packet']:.2f} messages/block, {cap['bytes_per_packet']:.0f} bytes/block")
    click.echo(f"the same messages as FAST V2: {twin['packets']} packets, {twin['messages']} messages, "
               f"{twin['bytes_per_packet']:.0f} bytes/packet")
    _echo_machine_and_columns(res)
    click.echo(_row("OBI per block, from C (as the FH)", res["obi_c_per_packet"]))
    hot = res["obi_c_per_packet_in_cache"]
    if hot is not None:
        click.echo(_row(f"  the same, first {hot['packets']} in cache", hot)
                   + f"   (best of {hot['passes']} passes: {hot['best_msgs_per_s_cpu'] / 1e6:.2f})")
    click.echo(_row("FAST V2 per packet, same messages", res["fast_c_per_packet"]))
    per_core = res["obi_c_per_packet"]["msgs_per_s_cpu"]["median"]
    ratio = res["obi_over_fast"]
    click.echo(OBI_DECODE.line(per_core, f"{cap['messages']:,} messages"))
    click.echo(OBI_OVER_FAST.line(ratio))
    res["targets"] = [OBI_DECODE.verdict(per_core), OBI_OVER_FAST.verdict(ratio)]
    if json_out:
        write_bench_json(json_out, res)
        click.echo(f"wrote {json_out}")
