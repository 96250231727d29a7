"""``omdp synth``: write a synthetic February-2008-like OPRA capture."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR, positive_seconds


def _anomaly_rates(values: tuple[str, ...]) -> dict[str, float]:
    from ops.synth.anomalies import DEFAULT_RATES, KINDS
    rates = dict(DEFAULT_RATES)
    for v in values:
        kind, sep, num = v.partition("=")
        if not sep or kind not in KINDS:
            raise click.BadParameter(f"{v!r}: expected KIND=N with KIND one of {', '.join(KINDS)}")
        try:
            rates[kind] = float(num)
        except ValueError as exc:
            raise click.BadParameter(f"{v!r}: {num!r} is not a number") from exc
    return rates


@click.command("synth")
@click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="Data directory; the capture goes to DATA/captures/<date>/.")
@click.option("--date", "date", type=click.DateTime(formats=["%Y-%m-%d"]), default="2008-02-04", show_default=True,
              help="Trade date (expirations and the session follow it).")
@click.option("--seconds", type=float, callback=positive_seconds, default=10.0, show_default=True, help="Length of the capture.")
@click.option("--rate", "rate_text", default="1x", show_default=True,
              help="Nx = N x 24,000 packets/s over all lines (1x, 0.5x, 30x).")
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same capture, byte for byte.")
@click.option("--num-lines", type=click.IntRange(1, 99), default=24, show_default=True, help="OPRA lines.")
@click.option("--universe", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Listed-options root file (fixed-width, 2008 layout) instead of the built-in universe.")
@click.option("--b-copy", is_flag=True, help="Also write each line's B copy (line<NN>-b.pcap).")
@click.option("--start", default="09:30:00", show_default=True, help="Eastern time the capture starts.")
@click.option("--messages-per-packet", type=float, default=14.0, show_default=True, help="Mean messages per packet.")
@click.option("--anomaly-rate", "anomaly", multiple=True, metavar="KIND=N",
              help="Anomaly events per second at 1x (locked, crossed, off_smile, parity); repeatable.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--force", is_flag=True, help="Replace the capture already at DATA/captures/<date>/ (once the new one is whole).")
def synth(data: Path, date: dt.datetime, seconds: float, rate_text: str, seed: int, num_lines: int, universe: Path | None,
          b_copy: bool, start: str, messages_per_packet: float, anomaly: tuple[str, ...], quiet: bool,
          force: bool) -> None:
    """Synthesize a capture: one pcap per OPRA line, manifest.json and the ground truth.

    The capture is written beside its place and moved there when whole, so a failure (a
    full disk) leaves no half capture; a capture already there is replaced only with
    --force. The manifest records every file's size and CRC-32, which replay checks."""
    from ops.synth.calendar import parse_clock
    from ops.cli.options import parse_rate_x
    from ops.synth.generator import CaptureExistsError, SynthConfig, synthesize

    rate = parse_rate_x(rate_text)
    try:
        cfg = SynthConfig(data=data, date=date.date(), seconds=seconds, rate=rate, seed=seed, num_lines=num_lines,
                          universe=universe, b_copy=b_copy, start=parse_clock(start),
                          messages_per_packet=messages_per_packet, anomalies_per_second=_anomaly_rates(anomaly),
                          progress=not quiet, force=force)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    try:
        res = synthesize(cfg)
    except CaptureExistsError as exc:
        raise click.ClickException(str(exc)) from None
    m = res.manifest
    r = m.rate
    click.echo(f"wrote {res.directory} ({len(m.lines)} lines{', A and B copies' if b_copy else ''})")
    click.echo(f"universe: {m.universe.source}, {m.universe.underlyings:,} underlyings, {m.universe.roots:,} roots, "
               f"{m.universe.series:,} series")
    click.echo(f"capture: {r.packets:,} packets, {r.messages:,} messages over {r.session_seconds:g} s of session: "
               f"{r.packets_per_second:,.0f} packets/s, {r.messages_per_second:,.0f} messages/s, "
               f"{r.messages_per_packet:.2f} messages/packet (target {r.target_packets_per_second:,.0f} packets/s)")
    click.echo(f"ground truth: {m.ground_truth.rows} anomalous quotes in {m.ground_truth.events} events "
               f"{m.ground_truth.kinds} -> {m.ground_truth.file}")
    gen = res.elapsed_s + res.setup_s
    click.echo(f"generated in {gen:.1f} s (setup {res.setup_s:.1f} s, then {res.elapsed_s:.1f} s wall / "
               f"{res.cpu_s:.1f} s CPU): {r.messages / gen:,.0f} messages/s overall")
