"""``omdp shm list`` / ``omdp shm clean``: Vega segments of this host, and removing the
ones no live process holds (left by crashed or killed runs)."""
from __future__ import annotations

import json

import click


@click.group("shm")
def shm() -> None:
    """Vega shared-memory segments (/dev/shm/omdp-<run>-<channel>)."""


@shm.command("list")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per segment")
def list_cmd(as_json: bool) -> None:
    """Every omdp segment: run, channel, size, both sides' state and the counters."""
    from omdp.transport.shm_names import list_segments

    segments = list_segments()
    if as_json:
        for seg in segments:
            click.echo(json.dumps({"name": seg.name, "run": seg.run, "channel": seg.channel, "size": seg.size,
                                   "stale": seg.stale, "stats": seg.stats}))
        return
    if not segments:
        click.echo("no omdp segments")
        return
    click.echo(f"{'segment':40} {'size':>10} {'sender':>9} {'receiver':>9} {'messages':>12} {'full':>8} "
               f"{'drops':>8}  stale")
    for seg in segments:
        st = seg.stats
        if st is None:
            click.echo(f"{seg.name:40} {seg.size:>10} {'-':>9} {'-':>9} {'-':>12} {'-':>8} {'-':>8}  "
                       "not a Vega ring (left alone)")
            continue
        click.echo(f"{seg.name:40} {seg.size:>10} {st['tx_state']:>9} {st['rx_state']:>9} {st['tx_messages']:>12} "
                   f"{st['tx_full_events']:>8} {st['tx_drops']:>8}  {'yes' if seg.stale else 'no'}")


@shm.command("clean")
@click.option("--run", default=None, help="only segments of this run id")
@click.option("--dry-run", is_flag=True, help="say what would go, remove nothing")
def clean_cmd(run: str | None, dry_run: bool) -> None:
    """Remove segments that no live process holds (never one with a live side)."""
    from omdp.transport.shm_names import clean_stale, list_segments

    from omdp.metrics.stats_cleanup import clean_stats_segments, list_stats_segments

    if dry_run:
        for seg in list_segments():
            if seg.stale and (run is None or seg.run == run):
                click.echo(f"would remove {seg.name}")
        for st in list_stats_segments():
            if st.stale and (run is None or st.run_id == run):
                click.echo(f"would remove {st.name} ({st.reason})")
        return
    removed = clean_stale(run)
    removed += [st.name for st in clean_stats_segments(run=run)]
    for name in removed:
        click.echo(f"removed {name}")
    click.echo(f"{len(removed)} stale segment(s) removed")
