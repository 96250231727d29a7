"""SIAC test files: OPRA packets back to back, each preceded by its length as a 4-byte
big-endian integer (how SIAC distributes its FAST V2 sample data). No timestamps, no
addresses."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from feedhandlers.captures.capture import Capture, pack_payloads
from omdp.errors import InputError

LENGTH_PREFIX = 4


class SiacFileError(InputError):
    """A SIAC test file whose length prefixes run past its end."""


def encode_siac(buf: bytes | np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A batch of packets in SIAC test-file layout, as one byte array."""
    arr = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, (bytes, bytearray, memoryview)) else np.asarray(buf, np.uint8)
    payload, _, lens = pack_payloads(arr, offsets, lengths)
    lens = lens.astype(np.int64)
    n = lens.shape[0]
    if n and int(lens.max()) > 0xFFFFFFFF:
        raise ValueError("packet longer than a 4-byte length")
    starts = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(lens[:-1] + LENGTH_PREFIX, out=starts[1:])
    total = int(lens.sum()) + LENGTH_PREFIX * n
    out = np.empty(total, dtype=np.uint8)
    prefix = lens.astype(">u4").view(np.uint8).reshape(n, LENGTH_PREFIX)
    is_payload = np.ones(total, dtype=bool)
    idx = (starts[:, None] + np.arange(LENGTH_PREFIX)).ravel()
    out[idx] = prefix.ravel()
    is_payload[idx] = False
    out[is_payload] = payload
    return out


def write_siac(path: str | Path, packets: list[bytes]) -> Path:
    """Write packets to a SIAC test file."""
    path = Path(path)
    with open(path, "wb") as f:
        for p in packets:
            f.write(struct.pack(">I", len(p)))
            f.write(p)
    return path


def write_siac_batch(path: str | Path, buf: bytes | np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> Path:
    """Write a batch (one buffer + offsets + lengths) to a SIAC test file."""
    path = Path(path)
    with open(path, "wb") as f:
        f.write(memoryview(encode_siac(buf, offsets, lengths)))
    return path


def read_siac(path: str | Path) -> Capture:
    """Memory-map a SIAC test file and locate its packets."""
    path = Path(path)
    size = path.stat().st_size
    buf = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
    mm = memoryview(buf)
    unpack = struct.Struct(">I").unpack_from
    offs: list[int] = []
    lens: list[int] = []
    pos = 0
    while pos < size:
        if pos + LENGTH_PREFIX > size:
            raise SiacFileError(f"{path}: offset {pos}: {size - pos} bytes left, too few for a length prefix")
        (n,) = unpack(mm, pos)
        if pos + LENGTH_PREFIX + n > size:
            raise SiacFileError(f"{path}: offset {pos}: packet of {n} bytes runs past the end of the file ({size} bytes)")
        offs.append(pos + LENGTH_PREFIX)
        lens.append(n)
        pos += LENGTH_PREFIX + n
    count = len(offs)
    return Capture(
        buf=buf,
        offsets=np.array(offs, dtype=np.int64),
        lengths=np.array(lens, dtype=np.uint32),
        ts_ns=np.zeros(count, dtype=np.int64),
        dst_ip=np.zeros(count, dtype=np.uint32),
        dst_port=np.zeros(count, dtype=np.uint16),
        source=str(path),
    )
