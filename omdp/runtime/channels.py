"""The inserted transport pairs, opened for the partition loop.

A channel of the plan is opened with the transport package (``omdp.transport.channels``:
the same ends a Python user gets, the same validation and errors), and its C handle is
bound to the partition loop through ``partition_channels.h`` - so frames go between the C
loop and the ring or socket without Python.

Endpoints are explicit and per medium: a ``vega-shm`` channel lives in the segment
``omdp-<run>-c<id>`` (made by the receiver), a ``tcp`` or ``vega-tcp`` channel at
``<address of the receiver's host>:<port the receiver picked>``, a ``vega-ib`` channel's
bootstrap listener likewise (with the host's InfiniBand device), an ``mpi`` channel at
``<receiver's rank>:<channel id>`` (the partitions are the ranks of one MPI job:
``omdp.runtime.mpi_supervisor``). The supervisor carries
the receivers' endpoints to the senders; nothing assumes one host.
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

CARRIED = ("vega-shm", "tcp", "vega-tcp")
"""Transports every build's partition loop carries; ``vega-ib`` also, where the InfiniBand
path was built and pyverbs imports (``omdp run`` refuses it elsewhere with the reason)."""


def transport_unavailable(transport: str) -> str | None:
    """Why this build cannot carry ``transport`` between partitions, or None."""
    if transport in CARRIED:
        return None
    if transport == "mpi":
        from omdp.transport.mpi_job import mpi_job_unavailable

        why = mpi_job_unavailable()
        return None if why is None else f"transport 'mpi' is not available here: {why}"
    if transport == "vega-ib":
        from omdp.transport.vega_ib import ib_unavailable

        why = ib_unavailable()
        return None if why is None else f"transport 'vega-ib' is not available here: {why}"
    return (f"transport {transport!r} is not available in this build of the runtime "
            f"(it carries {', '.join(CARRIED)}, and vega-ib where InfiniBand is built)")


def _network_endpoint(spec_transport: str, host: PlanHost) -> str:
    """Where a network receiver on ``host`` listens (port 0: it picks one)."""
    endpoint = f"{host.address}:0"
    if spec_transport == "vega-ib" and host.ib_device:
        endpoint += f"@{host.ib_device}"
    return endpoint


@dataclass
class ChannelEnd:
    """One end of an inserted channel: the C ops and context the loop calls, the endpoint
    (receivers), and how to close it."""

    name: str
    endpoint: str
    ops: Any
    ctx: Any
    _close: Callable[[], None]
    _link_error: Callable[[], str] | None = None

    def close(self) -> None:
        """Close the end (the transport frees what both ends closed)."""
        self._close()

    def link_error(self) -> str:
        """What broke a mirrored ring's link (a bad record, a completion error), or ""."""
        return self._link_error() if self._link_error else ""


def _vtcp_error(link: Any) -> Callable[[], str]:
    return lambda: ffi.string(lib.omdp_vtcp_error(link)).decode(errors="replace")


def _vib_error(link: Any) -> Callable[[], str]:
    return lambda: ffi.string(lib.omdp_vib_error(link)).decode(errors="replace")


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
        return ChannelEnd(channel.name, rx.name, lib.omdp_chan_vega_in_ops(), rx.c_handle, rx.close)
    if spec.transport == "mpi":
        from omdp.native_mpi import mpi_native
        from omdp.runtime.mpi_rank import endpoint_of

        rx = open_receiver(spec, endpoint_of(channel.upstream, channel.id))
        return ChannelEnd(channel.name, endpoint_of(channel.downstream, channel.id), mpi_native()[1].omdp_chan_mpi_in_ops(),
                          rx.c_handle, rx.close)
    rx = open_receiver(spec, _network_endpoint(spec.transport, host))
    if spec.transport == "tcp":
        return ChannelEnd(channel.name, rx.endpoint, lib.omdp_chan_tcp_in_ops(), rx.c_handle, rx.close)
    if spec.transport == "vega-tcp":
        return ChannelEnd(channel.name, rx.endpoint, lib.omdp_chan_vtcp_in_ops(), rx.c_link, rx.close,
                          _vtcp_error(rx.c_link))
    return ChannelEnd(channel.name, rx.endpoint, lib.omdp_chan_vib_in_ops(), rx.c_link, rx.close,
                      _vib_error(rx.c_link))


def open_output(channel: PlanChannel, run_id: str, endpoint: str, timeout: float, host: PlanHost) -> ChannelEnd:
    """Join ``channel``'s receiver at ``endpoint`` as its sender on ``host``."""
    spec = channel.spec
    if spec.transport == "vega-ib" and host.ib_device:
        endpoint = endpoint.partition("@")[0] + f"@{host.ib_device}"
    tx = open_sender(spec, endpoint, connect_timeout=timeout)
    if spec.transport == "vega-shm":
        return ChannelEnd(channel.name, endpoint, lib.omdp_chan_vega_out_ops(), tx.c_handle, tx.close)
    if spec.transport == "mpi":
        from omdp.native_mpi import mpi_native

        return ChannelEnd(channel.name, endpoint, mpi_native()[1].omdp_chan_mpi_out_ops(), tx.c_handle, tx.close)
    if spec.transport == "vega-tcp":
        return ChannelEnd(channel.name, endpoint, lib.omdp_chan_vtcp_out_ops(), tx.c_link, tx.close,
                          _vtcp_error(tx.c_link))
    if spec.transport == "vega-ib":
        return ChannelEnd(channel.name, endpoint, lib.omdp_chan_vib_out_ops(), tx.c_link, tx.close,
                          _vib_error(tx.c_link))
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
