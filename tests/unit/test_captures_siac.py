"""SIAC test files: 4-byte big-endian length + packet, written singly or as a batch."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from feedhandlers.captures import SiacFileError, read_capture, read_siac, write_siac, write_siac_batch


def test_layout_and_round_trip(tmp_path: Path) -> None:
    pk = [b"\x01\x02abc\x03", b"", b"x" * 300]
    path = write_siac(tmp_path / "t.siac", pk)
    assert path.read_bytes()[:10] == b"\x00\x00\x00\x06\x01\x02abc\x03"
    cap = read_siac(path)
    assert cap.payloads() == pk
    assert read_capture(path).payloads() == pk


def test_batch_writer_equals_single_writer(tmp_path: Path) -> None:
    pk = [bytes([i]) * (i + 1) for i in range(40)]
    lengths = np.array([len(p) for p in pk])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    a = write_siac(tmp_path / "a", pk).read_bytes()
    b = write_siac_batch(tmp_path / "b", b"".join(pk), offsets, lengths).read_bytes()
    assert a == b


def test_length_past_end_is_an_error_with_offset(tmp_path: Path) -> None:
    p = tmp_path / "bad"
    p.write_bytes(b"\x00\x00\x00\x02ab\x00\x00\x01\x00xyz")
    with pytest.raises(SiacFileError, match="offset 6"):
        read_siac(p)
