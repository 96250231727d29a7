"""``omdp info``: what this installation is built with (C flags, record layouts)."""
from __future__ import annotations

import click


@click.command("info")
def info() -> None:
    """Print the native build and the record layouts this installation uses."""
    from feedhandlers.opra_record import OPRA_MSG_DTYPE
    from omdp.clock import now_ns
    from omdp.native import ffi
    from omdp.record import RECORD_HEADER_SIZE

    click.echo(f"record header: {RECORD_HEADER_SIZE} bytes; OPRA message record: {OPRA_MSG_DTYPE.itemsize} bytes")
    click.echo(f"C sizeof(omdp_opra_msg_t) = {ffi.sizeof('omdp_opra_msg_t')}")
    click.echo(f"clock now: {now_ns()} ns")
