"""Opening channels from a spec: ``open_receiver(spec, endpoint)`` and
``open_sender(spec, endpoint)``.

The spec is a ``ChannelSpec``, a dict, TOML text or a TOML file (top-level keys or a
``[channel]`` table). The endpoint says where the channel lives, by medium:

| transport | endpoint | who makes it |
|---|---|---|
| ``vega-shm`` | shm segment name ``omdp-<run>-<channel>`` (``shm_names.shm_name``) | the receiver creates, the sender attaches |
| ``tcp`` | ``host:port`` (receiver: port 0 picks one, see ``receiver.endpoint``) | the receiver listens, the sender connects |
| ``vega-tcp`` | ``host:port``, as ``tcp`` | the receiver listens, the sender connects |
| ``vega-ib`` | ``host:port`` of the receiver's bootstrap listener; the sender's spec may name the device | the receiver listens, the sender connects |
| ``fused`` | any name, unique in the process | the receiver makes the pair, the sender picks its end |
| ``zmq`` | ``ipc://PATH`` or a path | the receiver binds, the sender connects |
| ``mpqueue`` | a name made by ``mpqueue.create_endpoint`` before the processes fork | the parent |
| ``mpi`` | ``PEER_RANK:CHANNEL``: the other end's rank in the MPI job, the channel's number | the receiver posts its receives and greets; the sender waits for the greeting |

Open the receiver first; a sender waits up to ``connect_timeout`` for it.
"""
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omdp.transport.api import Receiver, Sender, TransportError
from omdp.transport.spec import ChannelSpec


class ChannelSpecError(ValueError):
    """A channel spec that does not validate: the message names each bad field."""


def load_spec(spec: ChannelSpec | Mapping[str, Any] | str | Path) -> ChannelSpec:
    """A ``ChannelSpec`` from any accepted form; raises ChannelSpecError naming fields."""
    if isinstance(spec, ChannelSpec):
        return spec
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.endswith(".toml") and "\n" not in spec):
        data: Mapping[str, Any] = tomllib.loads(Path(spec).read_text())
    elif isinstance(spec, str):
        try:
            data = tomllib.loads(spec)
        except tomllib.TOMLDecodeError as e:
            raise ChannelSpecError(f"channel spec: not valid TOML: {e}") from e
    else:
        data = spec
    if "channel" in data and isinstance(data["channel"], Mapping):
        data = data["channel"]
    try:
        return ChannelSpec.model_validate(dict(data))
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'spec'}: {err['msg']} (got {err.get('input')!r})"
            for err in e.errors()
        )
        raise ChannelSpecError(f"channel spec: {problems}") from None


def open_receiver(spec: ChannelSpec | Mapping[str, Any] | str | Path, endpoint: str) -> Receiver:
    """The receiving end of a channel at ``endpoint`` (made here, see the module table)."""
    spec = load_spec(spec)
    if spec.transport == "vega-shm":
        from omdp.transport.vega import VegaReceiver

        return VegaReceiver.create(spec, endpoint)
    if spec.transport == "tcp":
        from omdp.transport.tcp import TcpReceiver

        return TcpReceiver(spec, endpoint)
    if spec.transport == "vega-tcp":
        from omdp.transport.vega_tcp import VegaTcpReceiver

        return VegaTcpReceiver(spec, endpoint)
    if spec.transport == "vega-ib":
        from omdp.transport.vega_ib import VegaIbReceiver

        return VegaIbReceiver(spec, endpoint)
    if spec.transport == "fused":
        from omdp.transport.fused import open_fused_receiver

        return open_fused_receiver(spec, endpoint)
    if spec.transport == "zmq":
        from omdp.transport.zmq_channel import ZmqReceiver

        return ZmqReceiver(spec, endpoint)
    if spec.transport == "mpqueue":
        from omdp.transport.mpqueue import MpQueueReceiver

        return MpQueueReceiver(spec, endpoint)
    if spec.transport == "mpi":
        from omdp.transport.mpi import MpiReceiver

        return MpiReceiver(spec, endpoint)
    raise TransportError(f"transport {spec.transport!r}: no such medium")


def open_sender(spec: ChannelSpec | Mapping[str, Any] | str | Path, endpoint: str,
                connect_timeout: float = 10.0) -> Sender:
    """The sending end of the channel at ``endpoint``, waiting up to ``connect_timeout``
    seconds for its receiver."""
    spec = load_spec(spec)
    if spec.transport == "vega-shm":
        from omdp.transport.vega import VegaSender

        return VegaSender.attach(spec, endpoint, connect_timeout)
    if spec.transport == "tcp":
        from omdp.transport.tcp import TcpSender

        return TcpSender(spec, endpoint, connect_timeout)
    if spec.transport == "vega-tcp":
        from omdp.transport.vega_tcp import VegaTcpSender

        return VegaTcpSender(spec, endpoint, connect_timeout)
    if spec.transport == "vega-ib":
        from omdp.transport.vega_ib import VegaIbSender

        return VegaIbSender(spec, endpoint, connect_timeout)
    if spec.transport == "fused":
        from omdp.transport.fused import open_fused_sender

        return open_fused_sender(spec, endpoint, connect_timeout)
    if spec.transport == "zmq":
        from omdp.transport.zmq_channel import ZmqSender

        return ZmqSender(spec, endpoint, connect_timeout)
    if spec.transport == "mpqueue":
        from omdp.transport.mpqueue import MpQueueSender

        return MpQueueSender(spec, endpoint)
    if spec.transport == "mpi":
        from omdp.transport.mpi import MpiSender

        return MpiSender(spec, endpoint, connect_timeout)
    raise TransportError(f"transport {spec.transport!r}: no such medium")
