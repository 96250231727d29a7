"""``omdp bench decode`` runs end to end on a small in-memory capture and writes its JSON;
the benchmark's random packets are valid and deterministic for a seed."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from feedhandlers.opra_fast import decode_batch
from ops.bench.random_capture import random_packets
from ops.cli.main import cli


def test_random_packets_are_valid_and_deterministic() -> None:
    buf, off, ln = random_packets(5000, seed=3)
    b = decode_batch(buf, off, ln)
    assert not b.errors and b.counters["messages"] == 5000
    assert int(ln.max()) <= 1456 and 8 < 5000 / len(off) < 20
    cats = set(bytes(b.records["category"]).decode())
    assert "k" in cats
    again = random_packets(5000, seed=3)
    assert np.array_equal(again[0], buf) and np.array_equal(again[2], ln)


def test_bench_decode_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "decode.json"
    res = CliRunner().invoke(cli, ["bench", "decode", "--random-messages", "3000", "--repeats", "1",
                                   "--python-packets", "40", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["capture"]["messages"] == 3000 and data["c_batch"]["malformed_packets"] == 0
    for path in ("c_batch", "c_batch_field_by_field", "python_per_packet"):
        assert data[path]["msgs_per_s_cpu"]["median"] > 0
    assert data["machine"]["cpu_model"]
    assert "C batch" in res.output
