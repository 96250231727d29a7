"""Transports: one contract (Vega's five calls) over many media.

``spec.ChannelSpec`` describes a channel (medium and knobs, defaults in one place);
``api.Sender`` / ``api.Receiver`` are the contract every medium implements; the runtime
inserts a sender/receiver pair wherever an edge crosses partitions.
"""
