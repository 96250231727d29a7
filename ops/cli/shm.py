"""``omdp shm list`` / ``omdp shm clean``: Vega segments of this host, and removing the
ones no live process holds (left by crashed or killed runs)."""
from __future__ import annotations

import json

import click

from ops.cli.table_output import chosen_output, csv_text, output_option


@click.group("shm")
def shm() -> None:
    """omdp shared-memory segments (/dev/shm/omdp-*): Vega rings, replay, stats."""


@shm.command("list")
@click.option("--json", "as_json", is_flag=True, hidden=True, help="old spelling of --output json")
@output_option
def list_cmd(as_json: bool, output: str) -> None:
    """Every omdp segment: type (vega-ring, replay-ctl, replay-intended, stats; mpi-shm: an MPI
    library's file, owned by whoever maps it), run, size,
    owner pid and state (alive / dead / closed), and whether ``shm clean`` would remove it."""
    from omdp.transport.shm_inventory import list_owned_segments

    segments = list_owned_segments()
    output = chosen_output(output, as_json)
    if output == "csv":
        click.echo(csv_text(seg.as_dict() for seg in segments))
        return
    if output == "json":
        for seg in segments:
            click.echo(json.dumps(seg.as_dict()))
        return
    if not segments:
        click.echo("no omdp segments")
        return
    click.echo(f"{'segment':48} {'type':15} {'size':>10} {'owner pid':>9} {'owner':>7} {'removable':>9}  detail")
    for seg in segments:
        pid = "-" if seg.owner_pid is None else str(seg.owner_pid)
        detail = seg.detail
        if seg.stats is not None:
            st = seg.stats
            detail += f"; {st['tx_messages']} messages, {st['tx_full_events']} full, {st['tx_drops']} drops"
        click.echo(f"{seg.name:48} {seg.kind:15} {seg.size:>10} {pid:>9} {seg.owner:>7} "
                   f"{'yes' if seg.removable else 'no':>9}  {detail}")


@shm.command("clean")
@click.option("--run", default=None, metavar="RUN", help="only segments of this run (its id or its directory)")
@click.option("--dry-run", is_flag=True, help="say what would go, remove nothing")
def clean_cmd(run: str | None, dry_run: bool) -> None:
    """Remove every omdp segment whose owner is dead (never one with a live owner)."""
    from omdp.transport.shm_inventory import clean_dead
    from ops.cli.run_ref import run_id_of

    if run is not None:
        run = run_id_of(run)

    gone = clean_dead(run, dry_run=dry_run)
    for seg in gone:
        click.echo(f"{'would remove' if dry_run else 'removed'} {seg.name} ({seg.kind}: {seg.detail})")
    if not dry_run:
        click.echo(f"{len(gone)} stale segment(s) removed")
