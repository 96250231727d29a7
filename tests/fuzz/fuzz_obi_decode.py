"""atheris fuzz target for the OPRA binary (OBI v6) decoder.

Run: python tests/fuzz/fuzz_obi_decode.py [-runs=N] [corpus_dir]. Each input is decoded by
the one-block and the batch paths, which must agree (both the live reading, where a checksum
mismatch drops the block, and the viewer's, where it is kept); a block that decodes must
re-encode to one that decodes to the same records. Inputs are also tried with their size and
checksum made right, so mutations reach the message decoder. Seeds are the spec's 18 worked
examples (tests/unit/obi_examples.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import atheris
import numpy as np

with atheris.instrument_imports():
    from feedhandlers.opra_obi import ObiDecodeError, checksum, decode_block, decode_blocks, encode_block


def framed(data: bytes) -> bytes:
    """``data`` with its block size and checksum fields made right for its length."""
    b = bytearray(data)
    if len(b) >= 21:
        b[1:3] = min(len(b), 0xFFFF).to_bytes(2, "big")
        b[19:21] = checksum(b).to_bytes(2, "big")
    return bytes(b)


def check(data: bytes, keep: bool) -> None:
    batch = decode_blocks(data, np.array([0]), np.array([len(data)]), keep_bad_checksum=keep)
    try:
        one = decode_block(data, keep_bad_checksum=keep)
    except ObiDecodeError as e:
        assert batch.blocks[0]["count"] == 0 and batch.errors[0].code == e.code, (batch.errors, e)
        assert batch.counters["packets_bad"] == 1
        return
    assert not batch.errors and int(batch.blocks[0]["count"]) == len(one)
    cols = [n for n in one.records.dtype.names if n != "var_off"]
    assert np.array_equal(batch.records[cols], one.records[cols])
    again = decode_block(encode_block(one))
    assert np.array_equal(again.records[cols], one.records[cols])


def one_input(data: bytes) -> None:
    for d in (data, framed(data)):
        check(d, keep=False)
        check(d, keep=True)


def seeds() -> list[bytes]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    import obi_examples

    return list(obi_examples.EXAMPLES.values())


def main() -> None:
    args = list(sys.argv)
    corpus = [a for a in args[1:] if not a.startswith("-")]
    if corpus:
        d = Path(corpus[0])
        d.mkdir(parents=True, exist_ok=True)
        for i, s in enumerate(seeds()):
            (d / f"example{i + 1}").write_bytes(s)
    atheris.Setup(args, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
