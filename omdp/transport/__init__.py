"""Transports: one contract (Vega's five calls) over many media.

``spec.ChannelSpec`` describes a channel (medium and knobs, defaults in one place);
``api.Sender`` / ``api.Receiver`` are the contract every medium implements; the runtime
inserts a sender/receiver pair wherever an edge crosses partitions. ``open_receiver`` /
``open_sender`` (``channels``) make the two ends from a spec and an endpoint.
"""
from omdp.transport.channels import ChannelSpecError, load_spec, open_receiver, open_sender

__all__ = ["ChannelSpecError", "load_spec", "open_receiver", "open_sender"]
