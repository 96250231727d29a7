"""One way the command line turns an expected error into a one-line message.

Every command runs inside ``OmdpGroup.invoke``: an ``omdp.errors.InputError`` (a bad file,
option or field, which names itself) and an ``OSError`` (a path that cannot be read or
written: ``PATH: reason``; a full disk's ``omdp.atomic_files.ArtifactWriteError``: ``cannot
write PATH: reason``) end the command with ``Error: <message>`` and exit status 1,
never a traceback (docs/cli.md "Errors"). Commands still raise ``click.UsageError`` for a
bad option (exit status 2); anything else is a fault of omdp and keeps its traceback.
"""
from __future__ import annotations

from typing import Any

import click

from omdp.errors import InputError


def os_error_text(e: OSError) -> str:
    """``PATH: reason`` (``/proc/x: No such file or directory``), or the reason alone."""
    reason = e.strerror or str(e)
    if e.filename is None:
        return reason
    if e.filename2 is not None:
        return f"{e.filename} -> {e.filename2}: {reason}"
    return f"{e.filename}: {reason}"


def error_text(e: BaseException) -> str:
    """The one-line message of an expected error (``InputError`` or ``OSError``)."""
    return os_error_text(e) if isinstance(e, OSError) and not isinstance(e, InputError) else str(e)


class OmdpGroup(click.Group):
    """The ``omdp`` group: its subcommands' expected errors become ``click.ClickException``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (InputError, OSError) as e:
            raise click.ClickException(error_text(e)) from None
