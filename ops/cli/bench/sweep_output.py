"""What ``omdp bench sweep`` and ``omdp bench scaling`` print and write alike: the command as
typed and the machine above the table, the table on stdout and in ``--markdown``, every
point with the command and machine in ``--json``."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ops.cli.bench.output import write_bench_json


def emit_sweep(name: str, data: dict[str, Any], table: Callable[[str, str], str], json_out: Path | None,
               md_out: Path | None) -> None:
    """Print ``table(command, machine)`` and write the outputs asked for; then, when any run
    failed (an error, or a partition died), end with a one-line error (exit status 1): an
    unsustainable rate is a result, a failed run is not."""
    from omdp.runtime.machine import machine_info

    command = f"omdp bench {name} " + " ".join(sys.argv[3:])
    m = machine_info()
    machine = f"{m['cpu_model']} ({m['cpus_usable']} CPUs), Python {m['python']}"
    text = table(command, machine)
    click.echo(text)
    if json_out:
        write_bench_json(json_out, {**data, "command": command}, indent=1)
    if md_out:
        md_out.write_text(text)
    failed = [p for p in data.get("points", []) if p.get("error")]
    if failed:
        first = failed[0]
        where = first.get("config") or f"{first.get('cores')} cores"
        raise click.ClickException(f"bench {name}: {len(failed)} of {len(data['points'])} runs failed; "
                                   f"the first, {where} at {first['rate']}: {first['error']}")
