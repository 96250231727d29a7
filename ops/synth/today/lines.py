"""Today's lines (spec 2.2, 2.6, 2.7): addresses of lines 1..96 and which series go on which.

Line L goes to 224.0.204.L (A) and 224.0.206.L (B), UDP port 45000+L for both (spec Q7),
from the primary site's source subnets: A 162.69.44-47.x, B 162.69.52-55.x, 24 lines per
subnet. Each root is given 1 to 16 lines (the busiest roots the most, ours by activity),
least-loaded lines first; each of its series stays on one of them all day. Roots starting
with a digit, administrative (C) and underlying value (Y) messages go on line 4.
"""
from __future__ import annotations

import numpy as np

from ops.synth.lines import LineAddress

ADMIN_LINE = 4
MAX_LINES_PER_ROOT = 16
SOURCE_PORT = 45000


def obi_line_address(line: int, copy: str) -> LineAddress:
    """Group, port and source of ``copy`` ('a' or 'b') of regular-session line 1..96."""
    if not 1 <= line <= 96:
        raise ValueError(f"line must be 1..96, not {line}")
    third = 204 if copy == "a" else 206
    subnet = (44 if copy == "a" else 52) + (line - 1) // 24
    return LineAddress(group=f"224.0.{third}.{line}", port=45000 + line, source=f"162.69.{subnet}.{line}",
                       source_port=SOURCE_PORT + line)


def assign_series_lines(root_symbol: list[str], ser_root: np.ndarray, ser_activity: np.ndarray,
                        num_lines: int) -> tuple[np.ndarray, list[list[int]]]:
    """Each series' line (1-based) and each root's lines. A root of activity share s gets
    about ``16 * sqrt(s / max share)`` lines (1..16, at most ``num_lines``); its series
    are dealt over them round robin in series order."""
    n_roots = len(root_symbol)
    load = np.bincount(ser_root, weights=ser_activity, minlength=n_roots)
    digit = np.array([s[:1].isdigit() for s in root_symbol], dtype=bool)
    top = max(float(load.max()), 1e-12) if n_roots else 1.0
    n_lines = np.clip(np.round(MAX_LINES_PER_ROOT * np.sqrt(load / top)), 1, min(MAX_LINES_PER_ROOT, num_lines)).astype(np.int64)
    line_load = np.zeros(num_lines)
    root_lines: list[list[int]] = [[] for _ in range(n_roots)]
    admin = min(ADMIN_LINE, num_lines)
    for r in np.argsort(-load, kind="stable").tolist():
        if digit[r]:
            chosen = np.array([admin - 1])
        else:
            k = int(n_lines[r])
            chosen = np.argsort(line_load, kind="stable")[:k]
        line_load[chosen] += load[r] / chosen.size
        root_lines[r] = sorted((chosen + 1).tolist())
    # series of a root, dealt over its lines in series order
    order = np.argsort(ser_root, kind="stable")
    counts = np.bincount(ser_root, minlength=n_roots)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(ser_root.shape[0], dtype=np.int64)
    rank[order] = np.arange(ser_root.shape[0]) - np.repeat(starts, counts)
    table = np.full((n_roots, MAX_LINES_PER_ROOT), 0, dtype=np.int64)
    width = np.array([len(x) for x in root_lines], dtype=np.int64)
    for r, ls in enumerate(root_lines):
        table[r, : len(ls)] = ls
    series_line = table[ser_root, rank % width[ser_root]]
    return series_line, root_lines
