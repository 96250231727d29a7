"""``omdp reshard RUN --bucket B --to de[J]``: move a bucket of a live run to another engine
(omdp.runtime.reshard). The request goes into the run's reshard segment, which the feed
handlers look at between polls; nothing stops. Without ``--bucket``: the buckets' owners and
the moves so far."""
from __future__ import annotations

import json
import re
import sys
import time

import click

from omdp.units import fmt_ns

_ENGINE = re.compile(r"(?:de\[(\d+)\]|(\d+))")


def parse_engine(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Click callback: ``--to`` is ``de[J]`` or ``J``."""
    if value is None:
        return None
    m = _ENGINE.fullmatch(value.strip())
    if not m:
        raise click.BadParameter(f"{value!r}: an engine as de[J] or J, e.g. de[1]", ctx=ctx, param=param)
    return int(m.group(1) or m.group(2))


@click.command("reshard")
@click.argument("run")
@click.option("--bucket", type=click.IntRange(min=0), default=None, help="the bucket (underlying % buckets) to move")
@click.option("--to", "to", default=None, callback=parse_engine, metavar="de[J]", help="the engine to move it to")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0.0), default=5.0, show_default=True,
              help="seconds to wait for the move to be installed (0: do not wait)")
@click.option("--json", "json_out", is_flag=True, help="print the result as JSON")
def reshard(run: str, bucket: int | None, to: int | None, wait_s: float, json_out: bool) -> None:
    """Move BUCKET of the live run RUN (its id or its directory) to engine de[J] (the run
    was started with --reshard-buckets)."""
    from omdp.runtime.reshard import ReshardError, ReshardSegment, summarize_moves
    from ops.cli.run_ref import run_id_of

    run_id = run_id_of(run)
    if (bucket is None) != (to is None):
        raise click.UsageError("--bucket and --to go together (neither: show the buckets and moves)")
    try:
        seg = ReshardSegment.open(run_id)
    except (ReshardError, ValueError) as e:
        click.echo(f"omdp reshard: {e}", err=True)
        sys.exit(2)
    try:
        t = seg.totals()
        if bucket is None:
            owners = [seg.owner(b) for b in range(t["buckets"])]
            out = {"totals": t, "owners": owners, "summary": summarize_moves(seg.moves())}
            click.echo(json.dumps(out, indent=1) if json_out else
                       f"{t['buckets']} buckets over {t['n_engines']} engines, {t['n_fh']} feed handlers; "
                       f"{t['installed']} of {t['requested']} moves installed\nowners: "
                       + " ".join(f"{b}:de[{e}]" for b, e in enumerate(owners)))
            return
        if bucket >= t["buckets"] or (to is not None and to >= t["n_engines"]):
            raise click.UsageError(f"--bucket {bucket} --to de[{to}]: the run has buckets 0..{t['buckets'] - 1} "
                                   f"and engines de[0]..de[{t['n_engines'] - 1}]")
        if not seg.ready():
            click.echo("omdp reshard: the run's feed handlers and engines are not all up yet; try again", err=True)
            sys.exit(1)
        assert to is not None
        try:
            move_id = seg.request(bucket, to)
        except ReshardError as e:
            click.echo(f"omdp reshard: {e}", err=True)
            sys.exit(1)
        deadline = time.monotonic() + wait_s
        m = seg.move(move_id)
        while wait_s and (m is None or not m["installed"]) and time.monotonic() < deadline:
            time.sleep(0.001)
            m = seg.move(move_id)
        if json_out:
            click.echo(json.dumps(m, indent=1))
        elif m is not None and m["installed"]:
            click.echo(f"move {move_id}: bucket {bucket} de[{m['from']}] -> de[{to}] installed in "
                       f"{fmt_ns(m['installed_ns'] - m['requested_ns'])}; {m['n_series']:,} series "
                       f"({m['state_bytes']:,} bytes) handed over, {m['held']:,} messages held back")
        else:
            click.echo(f"move {move_id}: bucket {bucket} -> de[{to}] requested"
                       + (" (not installed yet: the new engine installs it with its next batch)" if wait_s else ""))
    finally:
        seg.close()
