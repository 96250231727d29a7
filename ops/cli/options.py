"""Option spellings shared by the commands (docs/cli.md "Option spellings"):

- copies: ``--copies A|B|A,B``, case-insensitive, everywhere (a command that reads one copy
  takes ``A`` or ``B``); ``capture stats --copy a|b`` is a hidden, deprecated alias.
- rates: always ``Nx`` (N x 24,000 packets/s), parsed by ``ops.replay.rates.RateSpec``.
- lengths of time: ``--seconds`` (positive); ``run --duration`` is a hidden alias.
- topologies: a TOPOLOGY argument is a file or the name of a shipped one (``opra_fused``).
- where a server listens: ``--address HOST:PORT`` (``PORT`` alone: on 127.0.0.1) on
  ``dashboard``, ``run``, ``demo`` and ``replay``; ``run``/``demo --dashboard`` and
  ``replay --http-port`` are hidden aliases.
- the data directory: ``--data DIR``, or ``OMDP_DATA`` in the environment, on every command
  that takes one.

Every error names the option (``--seconds must be positive``) and never shows a traceback.
"""
from __future__ import annotations

import math
from typing import Any

import click

DATA_ENVVAR = "OMDP_DATA"
"""The environment variable every ``--data`` option reads when the option is not given."""


def parse_copies_option(text: str, *, option: str = "--copies", one: bool = False) -> tuple[str, ...]:
    """'a', 'B', 'A,B' -> ('A',), ('B',), ('A', 'B'); ``one``: exactly one copy."""
    from ops.replay.config import ReplayConfigError, parse_copies

    try:
        copies = parse_copies(text)
    except ReplayConfigError:
        raise click.UsageError(f"{option} {text!r}: give A, B" + ("" if one else " or A,B") + " (either case)") from None
    if one and len(copies) != 1:
        raise click.UsageError(f"{option} {text!r}: this command reads one copy: give A or B")
    return copies


def parse_rate_x(text: str, *, option: str = "--rate") -> float:
    """``Nx`` -> N (a positive multiple of 24,000 packets/s); a bare number gets a hint."""
    from ops.replay.rates import RateError, RateSpec

    try:
        return RateSpec.parse(rate=text).value
    except RateError as e:
        msg = str(e).replace("--rate", option, 1)
        try:
            float(text)
            msg += f" (rates are always written Nx: {text}x)"
        except ValueError:
            pass
        raise click.UsageError(msg) from None


def check_positive(option: str, value: float | None) -> float | None:
    """``--seconds must be positive`` style check (None passes)."""
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.UsageError(f"{option} must be positive (got {value:g})")
    return value


def positive_seconds(ctx: Any, param: Any, value: float | None) -> float | None:
    """Click callback: a positive, finite number of seconds."""
    try:
        return check_positive(f"--{param.name.replace('_', '-')}", value)
    except click.UsageError as e:
        e.ctx = ctx
        raise


def one_address(address: str | None, old: str | None, old_flag: str) -> str | None:
    """``--address`` or its hidden old spelling (``--dashboard``, ``--http-port``), not both."""
    if old is None:
        return address
    if address is not None:
        raise click.UsageError(f"{old_flag} is the old spelling of --address: give only --address")
    return old


def seconds_bar_format() -> str:
    """tqdm ``bar_format`` of a bar counting seconds: clean numbers (``0.3/2.0 s``), not
    the float sums tqdm shows by default (``0.33499999999999996/2.0``)."""
    from ops.progress import SECONDS_BAR_FORMAT

    return SECONDS_BAR_FORMAT


def topology_argument(ctx: Any, param: Any, value: str | None) -> str | None:
    """Click callback: TOPOLOGY is a file or the name of a shipped one (``opra_fused``)."""
    if value is None:
        return value
    from ops.topologies import resolve

    try:
        return resolve(value)
    except FileNotFoundError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def writable_output(ctx: Any, param: Any, value: Any) -> Any:
    """Click callback of an output file option (``--json OUT``): refuse, before the command
    runs, a path whose folder is missing or not writable, or that is a folder ('-': stdout)."""
    import os
    from pathlib import Path

    if value is None or str(value) == "-":
        return value
    path = Path(value)
    folder = path.parent
    why = None
    if path.is_dir():
        why = "is a directory"
    elif not folder.is_dir():
        why = f"no such directory {str(folder)!r}"
    elif not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        why = "not writable"
    if why is not None:
        raise click.BadParameter(f"{value}: {why}", ctx=ctx, param=param)
    return value


def write_output(out: str | Any, text: str) -> None:
    """Write a command's ``--json OUT`` document: '-' prints it; a path is written whole or not
    at all (temporary, then renamed: a reader never finds half a report, and a full disk
    leaves no 0-byte file), ending in one newline."""
    from omdp.atomic_files import write_text_atomic

    text = text.rstrip("\n") + "\n"
    if str(out) == "-":
        click.echo(text, nl=False)
    else:
        write_text_atomic(out, text)
