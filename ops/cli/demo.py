"""``omdp demo``: a short synthetic capture, decoded by the C batch decoder, with its
statistics - the first thing to run after installing."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click

from ops.cli.main import cli


@cli.command("demo")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the capture in this data directory (default: a temporary one, removed after).")
@click.option("--seconds", type=float, default=2.0, show_default=True, help="Length of the capture.")
@click.option("--rate", "rate_text", default="1x", show_default=True, help="Nx = N x 24,000 packets/s.")
@click.option("--seed", type=int, default=0, show_default=True)
def demo(data: Path | None, seconds: float, rate_text: str, seed: int) -> None:
    """Synthesize a February-2008-like capture, decode every packet in C, print statistics."""
    if data is not None:
        _run(data, seconds, rate_text, seed)
        return
    with tempfile.TemporaryDirectory(prefix="omdp-demo-") as tmp:
        _run(Path(tmp), seconds, rate_text, seed)


def _run(data: Path, seconds: float, rate_text: str, seed: int) -> None:
    from feedhandlers.captures import read_pcap
    from feedhandlers.opra_batch import BatchDecoder
    from ops.capture.locate import capture_lines
    from ops.capture.stats import capture_stats, format_stats
    from ops.synth.generator import SynthConfig, parse_rate, synthesize

    click.echo(f"1/3 synthesizing {seconds:g} s at {rate_text} into {data} ...")
    res = synthesize(SynthConfig(data=data, seconds=seconds, rate=parse_rate(rate_text), seed=seed, progress=False))
    m = res.manifest
    gen = res.setup_s + res.elapsed_s
    click.echo(f"    {m.rate.packets:,} packets, {m.rate.messages:,} messages on {len(m.lines)} lines in {gen:.1f} s "
               f"({m.universe.underlyings:,} underlyings, {m.universe.roots:,} roots, {m.universe.series:,} series)")

    click.echo("2/3 decoding every packet with the C batch decoder ...")
    decoder = BatchDecoder()
    n_msgs = n_pkts = 0
    spent = 0.0
    for files in capture_lines(res.directory).values():
        for f in files:
            cap = read_pcap(f)
            buf, off, ln = cap.contiguous()
            t = time.perf_counter()
            out = decoder.decode(buf, off, ln)
            spent += time.perf_counter() - t
            n_msgs += out.records.shape[0]
            n_pkts += len(cap)
    bad = decoder.counters.get("packets_bad", 0)
    click.echo(f"    {n_pkts:,} packets -> {n_msgs:,} records, {bad} malformed, in {spent * 1e3:.0f} ms "
               f"({n_msgs / max(spent, 1e-9) / 1e6:.1f} M messages/s)")

    click.echo("3/3 capture statistics")
    click.echo(format_stats(capture_stats(res.directory)))
    gt = m.ground_truth
    click.echo(f"ground truth: {gt.rows} anomalous quotes ({gt.kinds}) in {res.directory / gt.file}")
