"""``omdp synth``: write a synthetic OPRA capture: the February-2008 market in FAST V2
(default), or today's market in the binary OBI v6 feed (``--market today``)."""
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
@click.option("--market", type=click.Choice(["2008", "today"]), default="2008", show_default=True,
              help="2008: FAST V2 on 24 lines (February 2008); today: OBI v6 on 96 lines (docs/synth.md).")
@click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="Data directory; the capture goes to DATA/captures/<date>/.")
@click.option("--date", "date", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="Trade date (expirations and the session follow it) [default: 2008-02-04; today: 2026-03-02].")
@click.option("--seconds", type=float, callback=positive_seconds, default=10.0, show_default=True, help="Length of the capture.")
@click.option("--rate", "rate_text", default=None,
              help="2008: Nx = N x 24,000 packets/s over all lines [default 1x]. today: Nx = N x the mean of a profile "
                   "whose 10 ms peak is 120M msgs/s (15M msgs/s at the default ratio) [default 0.02x].")
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same capture, byte for byte.")
@click.option("--num-lines", type=click.IntRange(1, 99), default=None, help="OPRA lines [default 24; today 96, at most 96].")
@click.option("--universe", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Listed-options root file (fixed-width, 2008 layout) instead of the built-in universe.")
@click.option("--b-copy", is_flag=True, help="Also write each line's B copy (line<NN>-b.pcap).")
@click.option("--start", default="09:30:00", show_default=True, help="Eastern time the capture starts.")
@click.option("--messages-per-packet", type=float, default=14.0, show_default=True, help="Mean messages per packet.")
@click.option("--anomaly-rate", "anomaly", multiple=True, metavar="KIND=N",
              help="Anomaly events per second at 1x (locked, crossed, off_smile, parity); repeatable.")
@click.option("--underlyings", type=click.IntRange(1, None), default=None,
              help="today: underlyings of the universe [default 5,000].")
@click.option("--series", type=click.IntRange(4, None), default=None, help="today: series, about [default 1,000,000].")
@click.option("--peak-ratio", type=float, default=None, help="today: 10 ms peak over the mean [default 8].")
@click.option("--gaps", type=float, default=None, help="today: blocks left out (of A, B or both) per second [default 1].")
@click.option("--bad-checksums", type=float, default=None, help="today: blocks with a wrong checksum per second [default 1].")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--force", is_flag=True, help="Replace the capture already at DATA/captures/<date>/ (once the new one is whole).")
def synth(market: str, data: Path, date: dt.datetime | None, seconds: float, rate_text: str | None, seed: int,
          num_lines: int | None, universe: Path | None, b_copy: bool, start: str, messages_per_packet: float,
          anomaly: tuple[str, ...], underlyings: int | None, series: int | None, peak_ratio: float | None,
          gaps: float | None, bad_checksums: float | None, quiet: bool, force: bool) -> None:
    """Synthesize a capture: one pcap per OPRA line, manifest.json and the ground truth.

    The capture is written beside its place and moved there when whole, so a failure (a
    full disk) leaves no half capture; a capture already there is replaced only with
    --force. The manifest records every file's size and CRC-32, which replay checks."""
    from ops.synth.calendar import parse_clock
    from ops.cli.options import parse_rate_x
    from ops.synth.generator import CaptureExistsError

    if market == "today":
        try:
            _synth_today(data, date, seconds, rate_text, seed, num_lines, b_copy, start, underlyings, series, peak_ratio,
                         gaps, bad_checksums, quiet, force)
        except CaptureExistsError as exc:
            raise click.ClickException(str(exc)) from None
        return
    for name, value in (("--underlyings", underlyings), ("--series", series), ("--peak-ratio", peak_ratio),
                        ("--gaps", gaps), ("--bad-checksums", bad_checksums)):
        if value is not None:
            raise click.BadParameter(f"{name} applies to --market today only")
    from ops.synth.generator import SynthConfig, synthesize

    rate = parse_rate_x(rate_text or "1x")
    date = date or dt.datetime(2008, 2, 4)
    num_lines = num_lines or 24
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


def _synth_today(data: Path, date: dt.datetime | None, seconds: float, rate_text: str | None, seed: int,
                 num_lines: int | None, b_copy: bool, start: str, underlyings: int | None, series: int | None,
                 peak_ratio: float | None, gaps: float | None, bad_checksums: float | None, quiet: bool,
                 force: bool) -> None:
    """``omdp synth --market today``: today's OBI v6 feed (ops.synth.today)."""
    from ops.cli.options import parse_rate_x
    from ops.synth.calendar import parse_clock
    from ops.synth.today.generator import TodayConfig, synthesize_today

    given = {k: v for k, v in (("date", date.date() if date else None), ("num_lines", num_lines),
                               ("underlyings", underlyings), ("series", series), ("peak_ratio", peak_ratio),
                               ("gaps_per_second", gaps), ("checksums_per_second", bad_checksums)) if v is not None}
    if rate_text is not None:
        given["rate"] = parse_rate_x(rate_text)
    try:
        cfg = TodayConfig(data=data, seconds=seconds, seed=seed, b_copy=b_copy, start=parse_clock(start),
                          progress=not quiet, force=force, **given)
        res = synthesize_today(cfg)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    m = res.manifest
    r = m.rate
    click.echo(f"wrote {res.directory} (OBI v6, {len(m.lines)} lines{', A and B copies' if b_copy else ''})")
    click.echo(f"universe: {m.universe.underlyings:,} underlyings, {m.universe.roots:,} roots, {m.universe.series:,} series, "
               f"{len(m.exchanges) - 1} participants")
    click.echo(f"capture: {r.packets:,} blocks, {r.messages:,} messages over {r.session_seconds:g} s: "
               f"{r.messages_per_second:,.0f} messages/s (target mean {m.profile.target_msgs_per_second:,.0f}, "
               f"10 ms peak/mean {m.profile.peak_ratio:g}), {r.messages_per_packet:.2f} messages/block")
    g = m.ground_truth
    click.echo(f"ground truth: {g.rows} anomalous quotes {g.kinds} -> {g.file}; faults {g.faults} -> {g.faults_file}")
    gen = res.elapsed_s + res.setup_s
    click.echo(f"generated in {gen:.1f} s (setup {res.setup_s:.1f} s, then {res.elapsed_s:.1f} s wall / "
               f"{res.cpu_s:.1f} s CPU): {r.messages / gen:,.0f} messages/s overall")
