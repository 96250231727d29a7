"""Where a sample's identity sits inside a record, described as data.

The latency collector is generic: it reads the stamp block every record starts with, and
for samples.parquet it copies a few identity fields (line, packet and message sequence,
engine, routing key, category) from wherever the record type keeps them. The room that owns
the record type builds an ``IdentityLayout`` from its numpy dtype, so ``omdp`` never names a
field of a body it does not own.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from omdp.c_layout import c_dtype

IDENTITY_COLUMNS: dict[str, int] = {
    "line": 2,
    "block_seq": 8,
    "msg_seq": 8,
    "engine": 2,
    "key": 4,
    "category": 1,
}
"""Identity column -> the widest field (bytes) its samples.parquet column holds."""

SAMPLE_ID_DTYPE = c_dtype("omdp_sample_id_t")
"""``omdp_sample_id_t`` (collector.h): identities
handed in with pre-extracted rows."""


@dataclass(frozen=True)
class IdentityField:
    """A little-endian unsigned integer at ``offset`` bytes from the record start."""

    offset: int
    size: int

    def __post_init__(self) -> None:
        if self.size not in (1, 2, 4, 8) or not 0 <= self.offset <= 0xFFFF - self.size:
            raise ValueError(f"identity field at offset {self.offset} of size {self.size}: size must be 1, 2, 4 or 8")


@dataclass(frozen=True)
class IdentityLayout:
    """Identity fields of one record type; an absent field reads as 0 (engine: the batch's source)."""

    line: IdentityField | None = None
    block_seq: IdentityField | None = None
    msg_seq: IdentityField | None = None
    engine: IdentityField | None = None
    key: IdentityField | None = None
    category: IdentityField | None = None

    def __post_init__(self) -> None:
        for col, width in IDENTITY_COLUMNS.items():
            f = getattr(self, col)
            if f is not None and f.size > width:
                raise ValueError(f"identity {col}: a {f.size}-byte field does not fit its {width}-byte column")

    @classmethod
    def from_dtype(cls, dtype: np.dtype, **fields: str) -> IdentityLayout:
        """Map identity columns to top-level unsigned integer fields of a record dtype, e.g.
        ``IdentityLayout.from_dtype(MSG_DTYPE, line="line", key="underlying_id")``."""
        unknown = set(fields) - set(IDENTITY_COLUMNS)
        if unknown:
            raise KeyError(f"unknown identity columns {sorted(unknown)}; known: {sorted(IDENTITY_COLUMNS)}")
        out: dict[str, IdentityField] = {}
        for col, name in fields.items():
            if dtype.names is None or name not in dtype.names:
                raise KeyError(f"identity {col}: the record dtype has no field {name!r}")
            ftype, offset = dtype.fields[name][:2]
            if ftype.kind not in "ui" or ftype.shape:
                raise ValueError(f"identity {col}: field {name!r} is {ftype}, not an integer")
            out[col] = IdentityField(offset, ftype.itemsize)
        return cls(**out)

    def to_c(self, c_layout: object) -> None:
        """Fill an ``omdp_sample_id_layout_t`` (absent fields size 0)."""
        for col in IDENTITY_COLUMNS:
            f = getattr(self, col)
            target = getattr(c_layout, col)
            target.offset = f.offset if f else 0
            target.size = f.size if f else 0

