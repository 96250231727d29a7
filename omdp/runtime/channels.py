"""The inserted transport pairs, opened for the partition loop.

A channel of the plan is opened with the transport package (``omdp.transport.channels``:
the same ends a Python user gets, the same validation and errors), and its C handle is
bound to the partition loop through ``partition_channels.h`` - so frames go between the C
loop and the ring or socket without Python.

Endpoints are explicit and per medium: a ``vega-shm`` channel lives in the segment
``omdp-<run>-c<id>`` (made by the receiver), a ``tcp`` channel at ``<address of the
receiver's host>:<port the receiver picked>``. The supervisor carries the receivers'
endpoints to the senders; nothing assumes one host.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omdp.native import ffi, lib
from omdp.plan import Plan, PlanChannel, PlanHost
from omdp.transport.api import TransportError
from omdp.transport.channels import open_receiver, open_sender
from omdp.transport.shm_names import PREFIX, SHM_DIR, shm_name, unlink

CARRIED = ("vega-shm", "tcp")
"""Transports this build's partition loop carries; the plan may name others (vega-ib on
an InfiniBand cluster), which ``omdp run`` refuses here with the reason."""


def transport_unavailable(transport: str) -> str | None:
    """Why this build cannot carry ``transport`` between partitions, or None."""
    if transport in CARRIED:
        return None
    return (f"transport {transport!r} is not available in this build of the runtime "
            f"(it carries {', '.join(CARRIED)})")


@dataclass
class ChannelEnd:
    """One end of an inserted channel: the C ops and context the loop calls, the endpoint
    (receivers), and how to close it."""

    name: str
    endpoint: str
    ops: Any
    ctx: Any
    _close: Callable[[], None]

    def close(self) -> None:
        """Close the end (the transport frees what both ends closed)."""
        self._close()


def channel_key(channel: PlanChannel) -> str:
    """The channel's short name inside its run: ``c<id>``."""
    return f"c{channel.id}"


def open_input(channel: PlanChannel, run_id: str, host: PlanHost) -> ChannelEnd:
    """Create the receiving end of ``channel`` on ``host`` (before any sender exists)."""
    spec = channel.spec
    why = transport_unavailable(spec.transport)
    if why:
        raise TransportError(f"channel {channel.name}: {why}")
    if spec.transport == "vega-shm":
        rx = open_receiver(spec, shm_name(run_id, channel_key(channel)))
        ops = lib.omdp_chan_vega_in_ops()
    else:
        rx = open_receiver(spec, f"{host.address}:0")
        ops = lib.omdp_chan_tcp_in_ops()
    endpoint = rx.endpoint if spec.transport == "tcp" else rx.name
    return ChannelEnd(channel.name, endpoint, ops, rx.c_handle, rx.close)


def open_output(channel: PlanChannel, run_id: str, endpoint: str, timeout: float) -> ChannelEnd:
    """Join ``channel``'s receiver at ``endpoint`` as its sender."""
    spec = channel.spec
    tx = open_sender(spec, endpoint, connect_timeout=timeout)
    if spec.transport == "vega-shm":
        return ChannelEnd(channel.name, endpoint, lib.omdp_chan_vega_out_ops(), tx.c_handle, tx.close)
    out = lib.omdp_chan_tcp_out_new(tx.c_handle, spec.max_message)
    if out == ffi.NULL:
        tx.close()
        raise TransportError(f"channel {channel.name}: cannot allocate the staging buffer")

    def close() -> None:
        lib.omdp_chan_tcp_out_free(out)
        tx.close()

    return ChannelEnd(channel.name, endpoint, lib.omdp_chan_tcp_out_ops(), out, close)


def cleanup_run(plan: Plan, run_id: str, shm_dir: Path = SHM_DIR) -> list[str]:
    """Remove every shared memory segment of run ``run_id`` (call once no partition of it
    is alive), except the run's stats segment while its owner (the process that started the
    run) lives; returns the names it removed."""
    from omdp.metrics.stats_cleanup import list_stats_segments

    owned = {s.name for s in list_stats_segments(shm_dir) if not s.stale}
    removed = []
    for c in plan.channels:
        if c.spec.transport == "vega-shm" and unlink(name := shm_name(run_id, channel_key(c))):
            removed.append(name)
    for path in sorted(shm_dir.glob(f"{PREFIX}{run_id}-*")):
        if path.name not in owned and unlink(path.name):
            removed.append(path.name)
    return removed
