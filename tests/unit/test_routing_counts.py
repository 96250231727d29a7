"""The routing's message counts per root (``feedhandlers.routing.count_roots``): the roots'
8-byte keys compare as numpy compares the roots (trailing NULs do not count, spaces do), and
the counts over a synthetic capture equal counting its decoded messages one by one."""
from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from feedhandlers.captures import read_capture
from feedhandlers.opra_batch import decode_batch
from feedhandlers.routing import count_roots, root_keys
from ops.synth.generator import SynthConfig, synthesize


def test_root_keys_compare_as_numpy_compares_roots() -> None:
    roots = np.array([b"AB", b"AB\0", b"AB ", b"ABCDEF", b"", b"ABCDEF"], "S6")
    keys = root_keys(roots)
    assert keys.dtype == np.uint64 and len(keys) == len(roots)
    for i in range(len(roots)):
        for j in range(len(roots)):
            assert (keys[i] == keys[j]) == (roots[i] == roots[j]), (roots[i], roots[j])
    assert keys.view("S8").tolist() == roots.tolist()
    with pytest.raises(ValueError, match="9 bytes"):
        root_keys(np.array([b"123456789"], "S9"))


@pytest.mark.full
def test_counts_equal_counting_each_message(tmp_path: Path) -> None:
    synthesize(SynthConfig(data=tmp_path, date=dt.date(2008, 2, 4), seconds=0.3, num_lines=2, seed=3, progress=False))
    files = sorted((tmp_path / "captures" / "2008-02-04").glob("*.pcap"))
    want: Counter[str] = Counter()
    total = 0
    for f in files:
        cap = read_capture(f)
        recs = decode_batch(cap.buf, cap.offsets, cap.lengths).records
        total += len(recs)
        want.update(bytes(r["root"]).decode().rstrip(" ") for r in recs if r["root_len"] > 0)
    got = count_roots(files, max_messages=10**9)
    assert got.messages == total > 0
    assert got.counts == dict(want) and list(got.counts) == sorted(want)
