"""atheris fuzz target for the OPRA FAST V2 decoder.

Run: python tests/fuzz/fuzz_opra_decode.py [-runs=N] [corpus_dir]. Each input is decoded by
the one-packet and the batch paths; they must agree, and a packet that decodes must
re-encode to something that decodes to the same records. Seeds are the hand-derived
golden packets of tests/unit/test_codec_golden.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import atheris
import numpy as np

with atheris.instrument_imports():
    from feedhandlers.opra_fast import OpraDecodeError, OpraEncodeError, decode_batch, decode_packet, encode_packet


def one_input(data: bytes) -> None:
    try:
        p = decode_packet(data)
    except OpraDecodeError as e:
        b = decode_batch(data, np.array([0]), np.array([len(data)]))
        assert b.pkt_count[0] == 0 and b.errors[0].code == e.code, (b.errors, e)
        return
    b = decode_batch(data, np.array([0]), np.array([len(data)]))
    assert not b.errors and int(b.pkt_count[0]) == len(p)
    try:
        wire = encode_packet(p)
    except OpraEncodeError:
        return  # e.g. a record SIAC's encoder could not have made (an 8-bit-free input is required)
    again = decode_packet(wire)
    cols = [n for n in p.records.dtype.names if n not in ("var_off", "block_seq")]
    assert np.array_equal(again.records[cols], p.records[cols])


def seeds() -> list[bytes]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    import test_codec_golden as g

    return [
        g.packet("0000000100", g.A_SALE),
        g.packet("0000005000", g.K_BEST_BID, g.K_BEST_OFFER, g.K_BOTH),
        g.packet("0000000007", g.D_FIRST, g.D_SECOND),
        g.packet("0000090000", g.F_SUMMARY),
        g.packet("0000000011", g.Y_INDEX),
        g.packet("0000000012", g.Y_BID_OFFER),
        g.packet("0000000013", g.Y_FOREIGN),
        g.packet("0000000003", g.C_TEXT, g.H_NO_TEXT),
        g.packet("0000000042", g.DEF_1, g.DEF_2),
    ]


def main() -> None:
    args = list(sys.argv)
    corpus = [a for a in args[1:] if not a.startswith("-")]
    if corpus:
        d = Path(corpus[0])
        d.mkdir(parents=True, exist_ok=True)
        for i, s in enumerate(seeds()):
            (d / f"golden{i}").write_bytes(s)
    atheris.Setup(args, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
