"""Target ``ring:NAME``: the replay as the sender of a Vega ring its consumer made.

The consumer (a feed handler reading from a ring, a benchmark) creates the channel with its
receiver; the replay attaches with the channel's own knobs, read from the segment, so the
two ends cannot disagree. Each message is one packet: an omdp_replay_frame_t (line, copy,
intended and sent times) and the packet's bytes; ``max_message`` must hold the largest.
"""
from __future__ import annotations

import time

from omdp.native import ffi, lib
from omdp.transport.api import ChannelNotFoundError
from omdp.transport.shm_names import stats_dict
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import ON_FULL_CODES, WAIT_CODES, VegaSender

FRAME_HEADER_BYTES = 24
"""sizeof(omdp_replay_frame_t)."""


def ring_spec(name: str, connect_timeout: float = 10.0) -> ChannelSpec:
    """The knobs of the existing Vega channel ``name``, waiting for its receiver to make it."""
    st = ffi.new("omdp_vega_stats_t *")
    deadline = time.monotonic() + connect_timeout
    while lib.omdp_vega_stats_shm(name.encode(), st) != lib.OMDP_VEGA_OK:
        if time.monotonic() >= deadline:
            raise ChannelNotFoundError(f"ring {name!r}: no receiver made it within {connect_timeout:g} s")
        time.sleep(0.005)
    d = stats_dict(st)
    wait = {v: k for k, v in WAIT_CODES.items()}[int(d["wait"])]
    on_full = {v: k for k, v in ON_FULL_CODES.items()}[int(d["on_full"])]
    return ChannelSpec(transport="vega-shm", queue_size=int(d["queue_size"]), max_message=int(d["max_message"]),
                       mutex=bool(d["mutex"]), wait=wait, on_full=on_full)


def attach_ring(name: str, largest_packet: int, connect_timeout: float = 10.0) -> VegaSender:
    """Attach as the ring's sender, checking that its slots hold the largest frame."""
    spec = ring_spec(name, connect_timeout)
    need = FRAME_HEADER_BYTES + largest_packet
    if spec.max_message < need:
        raise ValueError(f"ring {name!r}: max_message {spec.max_message} cannot hold a {largest_packet}-byte packet "
                         f"and its {FRAME_HEADER_BYTES}-byte frame header ({need} bytes)")
    return VegaSender.attach(spec, name, connect_timeout)
