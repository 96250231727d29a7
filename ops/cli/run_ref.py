"""A run, as the commands that take one accept it: its id (``20261206T201134p152178454``,
looked up under ``<data>/runs/<date>/``) or its directory (``runs/<date>/<run_id>``).

Finished-run commands (``runs show``, ``dashboard --run``) need the directory; live-run
commands (``dashboard --live``, ``reshard``) need the id, which a directory's name is.
"""
from __future__ import annotations

from pathlib import Path

import click

from omdp.runtime.rundir import RunIdError, check_run_id, find_run_dir

DATA_HELP = "data directory whose runs/ a run id is looked up in"


def run_dir_of(ref: str, data_dir: Path, option: str) -> Path:
    """The directory of run ``ref`` (an id or a directory); BadParameter naming ``option``
    when there is none."""
    path = Path(ref)
    if path.is_dir():
        return path
    if path.exists():
        raise click.BadParameter(f"{ref}: not a run directory", param_hint=option)
    try:
        check_run_id(ref)
    except RunIdError:
        raise click.BadParameter(f"{ref}: no such run directory, and not a run id", param_hint=option) from None
    found = find_run_dir(data_dir, ref)
    if found is None:
        raise click.BadParameter(f"no run {ref} under {Path(data_dir) / 'runs'} (give a run id, or the run's "
                                 "directory; `omdp runs list` lists them)", param_hint=option)
    return found


def run_id_of(ref: str) -> str:
    """The id of run ``ref``: ``ref`` itself, or the name of the run directory it is (the
    command that uses the id says when no such run lives here)."""
    path = Path(ref)
    return path.name if path.is_dir() else ref
