"""OPRA lines: which roots each line carries, and where its A and B copies are sent.

Roots are sorted alphabetically and cut into ``num_lines`` consecutive ranges of about
equal expected traffic (a root's share of its underlying's quote messages), the way OPRA
balanced its 24 lines by root symbol. A line whose single root is heavier than a line's
share simply carries more.

Multicast groups and ports are our plan, not OPRA's: line n is sent to 233.43.202.n
(A) and 233.43.203.n (B), UDP ports 11000 + n and 12000 + n, from 10.8.0.n / 10.8.1.n.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_LINES = 24
GROUP_A = "233.43.202.{n}"
GROUP_B = "233.43.203.{n}"
SOURCE_A = "10.8.0.{n}"
SOURCE_B = "10.8.1.{n}"
PORT_A = 11000
PORT_B = 12000
SOURCE_PORT = 30000


@dataclass
class LineAddress:
    """Where one copy of a line is sent."""

    group: str
    port: int
    source: str
    source_port: int


def line_address(line: int, copy: str) -> LineAddress:
    """The A or B address of line ``line`` (1-based)."""
    if copy == "a":
        return LineAddress(GROUP_A.format(n=line), PORT_A + line, SOURCE_A.format(n=line), SOURCE_PORT)
    if copy == "b":
        return LineAddress(GROUP_B.format(n=line), PORT_B + line, SOURCE_B.format(n=line), SOURCE_PORT)
    raise ValueError(f"copy must be 'a' or 'b', not {copy!r}")


def assign_lines(root_symbols: list[str], root_load: np.ndarray, num_lines: int) -> np.ndarray:
    """Line (1-based) of every root: alphabetical ranges of about equal load.

    Each line gets at least one root when there are enough roots; a root goes to the line
    in whose share of the cumulative load its middle falls.
    """
    if num_lines < 1 or num_lines > 99:
        raise ValueError(f"num_lines must be 1..99, not {num_lines}")
    n = len(root_symbols)
    order = sorted(range(n), key=lambda i: root_symbols[i])
    load = np.maximum(np.asarray(root_load, dtype=np.float64)[order], 1e-12)
    mid = np.cumsum(load) - load / 2
    line = np.minimum((mid / load.sum() * num_lines).astype(np.int64), num_lines - 1)
    if n >= num_lines:
        # No empty line: lines advance by at most one per root (a running minimum of
        # line - position), starting at the first and reaching the last.
        pos = np.arange(n)
        line[0] = 0
        line = np.minimum.accumulate(line - pos) + pos
        line = np.maximum(line, pos - (n - num_lines))
    out = np.empty(n, dtype=np.int64)
    out[order] = line + 1
    return out
