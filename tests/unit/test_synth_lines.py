"""Lines: alphabetical root ranges of about equal load, never empty, and their addresses."""
from __future__ import annotations

import numpy as np
import pytest

from ops.synth.lines import assign_lines, line_address


def test_roots_are_cut_alphabetically_into_contiguous_ranges() -> None:
    rng = np.random.default_rng(5)
    syms = sorted({"".join(chr(65 + c) for c in rng.integers(0, 26, 3)) for _ in range(800)})
    shuffled = list(rng.permutation(syms))
    load = rng.lognormal(0, 1.5, len(shuffled))
    line = assign_lines(shuffled, load, 24)
    by_sym = dict(zip(shuffled, line.tolist()))
    in_order = [by_sym[s] for s in syms]
    assert in_order == sorted(in_order)
    assert set(in_order) == set(range(1, 25))
    per_line = np.bincount(line, weights=load)[1:]
    assert per_line.max() < 3 * per_line.mean()


def test_a_heavy_root_does_not_empty_a_line() -> None:
    line = assign_lines(list("ABCDEFG"), np.array([1, 1, 100, 1, 1, 1, 1.0]), 4)
    assert sorted(set(line.tolist())) == [1, 2, 3, 4]
    assert line.tolist() == sorted(line.tolist())


def test_addresses() -> None:
    a, b = line_address(7, "a"), line_address(7, "b")
    assert (a.group, a.port, b.group, b.port) == ("233.43.202.7", 11007, "233.43.203.7", 12007)
    with pytest.raises(ValueError):
        line_address(1, "c")
    with pytest.raises(ValueError):
        assign_lines(["A"], np.ones(1), 0)
