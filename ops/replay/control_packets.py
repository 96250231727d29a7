"""The sequence-reset control packet that starts every lap of a looping replay.

OPRA's control message 'H' type 'K' ("reset block sequence") tells a feed handler that the
line's sequence numbers start again, so A/B arbitration and gap detection keep working when
the capture restarts. Its message sequence number is one less than the line's first, so a
handler that expects "previous + 1" after the reset finds exactly the next lap's first
message.

An OBI v6 capture gets the same reset as an OBI block (spec 7.8: H K carries the new number
in its block sequence, the next block is numbered one above it), with the first block's
time; the feed handler tells a lap's reset from the other stream's copy of the last lap's
(identical bytes) because a stream never repeats a block.
"""
from __future__ import annotations

from feedhandlers import opra_obi
from feedhandlers.captures import Capture
from feedhandlers.opra_fast import OpraDecodeError, decode_packet, encode_records, new_records
from feedhandlers.opra_obi_errors import ObiDecodeError

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


def obi_reset_block(msg_seq: int, ts_sec: int, ts_nsec: int) -> bytes:
    """One OBI block holding one 'H'/'K' with block sequence ``msg_seq`` at this block time."""
    rec = new_records(1)
    rec["category"] = CATEGORY_CONTROL
    rec["msg_type"] = TYPE_RESET_BLOCK_SEQUENCE
    rec["participant"] = PARTICIPANT_OPRA
    rec["bbo_ind"] = ord(" ")
    rec["wire"] = opra_obi.WIRE_OBI
    return opra_obi.encode_records(opra_obi.new_header(msg_seq, ts_sec, ts_nsec), rec)


def obi_first_sequence_and_time(capture: Capture) -> tuple[int, int, int]:
    """First message's sequence and its block's time (seconds, ns) of an OBI capture (zeros
    when its first block does not decode)."""
    if len(capture) == 0:
        return 0, 0, 0
    try:
        blk = opra_obi.decode_block(capture.payload(0))
    except ObiDecodeError:
        return 0, 0, 0
    return int(blk.header["block_seq"]), int(blk.header["ts_sec"]), int(blk.header["ts_nsec"])


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
    """Per line, the reset packet that precedes each lap of its capture (in the capture's
    format, told from its first packet's bytes)."""
    out: dict[int, bytes] = {}
    for line, caps in captures.items():
        first = next((c for c in caps if len(c)), None)
        if first is not None and opra_obi.is_obi(first.payload(0)):
            seq, sec, nsec = obi_first_sequence_and_time(first)
            out[line] = obi_reset_block(max(seq - 1, 0), sec, nsec)
            continue
        seq, t = first_sequence_and_time(first) if first is not None else (0, 0)
        out[line] = reset_packet(max(seq - 1, 0), t)
    return out
