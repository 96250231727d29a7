"""``omdp decode``: print the messages of a capture, one line each."""
from __future__ import annotations

import os
import sys

import click


CHUNK_PACKETS = 4096


@click.command("decode")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["pcap", "siac"]), default=None,
              help="Capture format (default: a pcap if the file starts with a pcap magic, else SIAC).")
@click.option("--ascii", "ascii_", is_flag=True, help="SIAC's reference ASCII rendering instead of the table.")
def decode(path: str, fmt: str | None, ascii_: bool) -> None:
    """Decode every OPRA FAST V2 packet of a capture file, one line per message.

    Malformed packets are reported on stderr with their index and error, the others still
    decode; a pcap cut inside a packet reports the truncated record, and frames cut short by
    the snaplen or with a bad IPv4/UDP header are reported; both count as malformed. The
    exit status is 1 if any packet was malformed or the file is not a capture.
    """
    from feedhandlers.captures import read_capture
    from feedhandlers.opra_fast import TABLE_HEADER, BatchDecoder, render_text

    cap = read_capture(path, fmt)  # a bad file: one line, exit 1 (ops/cli/errors.py)
    style = "ascii" if ascii_ else "table"
    dec = BatchDecoder(max_errors=CHUNK_PACKETS)
    out = sys.stdout
    bad = 0
    try:
        if not ascii_:
            out.write(TABLE_HEADER + "\n")
        for start in range(0, len(cap), CHUNK_PACKETS):
            end = min(len(cap), start + CHUNK_PACKETS)
            batch = dec.decode(cap.buf, cap.offsets[start:end], cap.lengths[start:end], first_packet_index=start)
            text, _ = render_text(batch.records, batch.side, style)
            out.write(text)
            for e in batch.errors:
                click.echo(f"omdp decode: {e}", err=True)
            bad += len(batch.errors)
        out.flush()
    except BrokenPipeError:
        # The reader stopped early (``omdp decode FILE | head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    c = dec.counters
    tail, frames = cap.meta.get("truncated_tail"), cap.meta.get("malformed_frames")
    truncated, cut = int(cap.meta.get("truncated_packets", 0)), int(cap.meta.get("malformed_packets", 0))
    for problem in (tail, frames):
        if problem is not None:
            click.echo(f"omdp decode: {problem.describe()}", err=True)
    bad += truncated + cut
    parts = [f"{truncated} truncated"] * bool(truncated) + [f"{cut} cut short or bad IPv4/UDP header"] * bool(cut)
    click.echo(f"omdp decode: {c['packets'] + truncated + cut} packets, {c['messages']} messages, "
               f"{c['packets_bad'] + truncated + cut} malformed" + (f" ({', '.join(parts)})" if parts else ""),
               err=True)
    if bad:
        sys.exit(1)
