"""The sequence-reset control packet that starts every lap of a looping replay.

OPRA's control message 'H' type 'K' ("reset block sequence") tells a feed handler that the
line's sequence numbers start again, so A/B arbitration and gap detection keep working when
the capture restarts. Its message sequence number is one less than the line's first, so a
handler that expects "previous + 1" after the reset finds exactly the next lap's first
message.
"""
from __future__ import annotations

from feedhandlers.captures import Capture
from feedhandlers.opra_fast import OpraDecodeError, decode_packet, encode_records, new_records

CATEGORY_CONTROL = ord("H")
TYPE_RESET_BLOCK_SEQUENCE = ord("K")
PARTICIPANT_OPRA = ord("O")
_HEADER_SLOTS = (1 << 6) - 1
"""Slots 0..5: category, type, participant, retransmission requester, sequence, time."""


def reset_packet(msg_seq: int, time_hhmmssmmm: int) -> bytes:
    """One packet holding one 'H'/'K' message with this sequence number and time, no text."""
    rec = new_records(1)
    rec["category"] = CATEGORY_CONTROL
    rec["msg_type"] = TYPE_RESET_BLOCK_SEQUENCE
    rec["participant"] = PARTICIPANT_OPRA
    rec["retrans"] = ord(" ")
    rec["msg_seq"] = msg_seq
    rec["time"] = time_hhmmssmmm
    rec["fields"] = _HEADER_SLOTS
    return encode_records(rec)


def first_sequence_and_time(capture: Capture) -> tuple[int, int]:
    """Sequence number and time of a capture's first message (0, 0 when it has none that
    decodes: the reset then restarts the line from 1)."""
    if len(capture) == 0:
        return 0, 0
    try:
        pkt = decode_packet(capture.payload(0))
    except OpraDecodeError:
        return 0, 0
    for rec in pkt.records:
        if rec["category"] != ord("?"):
            return int(rec["msg_seq"]), int(rec["time"])
    return 0, 0


def reset_packets(captures: dict[int, list[Capture]]) -> dict[int, bytes]:
    """Per line, the reset packet that precedes each lap of its capture."""
    out: dict[int, bytes] = {}
    for line, caps in captures.items():
        first = next((c for c in caps if len(c)), None)
        seq, t = first_sequence_and_time(first) if first is not None else (0, 0)
        out[line] = reset_packet(max(seq - 1, 0), t)
    return out
