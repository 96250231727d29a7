"""``omdp bench decode`` runs end to end on a small in-memory capture and writes its JSON;
the benchmark's random packets are valid and deterministic for a seed."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from feedhandlers.opra_fast import decode_batch
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from ops.bench.decode import measure_c_packets
from ops.bench.random_capture import random_packets
from omdp.native import ffi, lib
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
                                   "--python-packets", "40", "--in-cache-packets", "50", "--in-cache-passes", "3",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    hot = data["c_per_packet_in_cache"]  # the first 50 packets only, 3 passes (and a warm-up)
    assert hot["packets"] == 50 and hot["passes"] == 3 and hot["malformed_packets"] == 0
    assert 0 < hot["messages"] < 3000 and hot["best_msgs_per_s_cpu"] == hot["msgs_per_s_cpu"]["max"]
    assert "first 50 in cache" in res.output and "best of 3 passes" in res.output
    assert data["capture"]["messages"] == 3000 and data["c_batch"]["malformed_packets"] == 0
    assert data["c_per_packet"]["messages"] == 3000 and data["c_per_packet"]["malformed_packets"] == 0
    for path in ("c_per_packet", "c_batch", "c_batch_field_by_field", "python_per_packet"):
        assert data[path]["msgs_per_s_cpu"]["median"] > 0
    assert data["machine"]["cpu_model"]
    assert "C batch" in res.output
    res = CliRunner().invoke(cli, ["bench", "decode", "--random-messages", "1000", "--repeats", "1",
                                   "--python-packets", "10", "--in-cache-packets", "0", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["c_per_packet_in_cache"] is None and "in cache" not in res.output


def test_codec_bench_loop_decodes_what_the_batch_path_does() -> None:
    """The C-driven per-packet loop (opra_bench.h) counts every message and every refused
    packet, as the batch decoder does, and refuses a packet that lies outside its buffer.
    Named "codec": CI runs it against the sanitizer build."""
    buf, off, ln = random_packets(4000, seed=5)
    buf = buf.copy()
    buf[int(off[3]) + 1] ^= 0xFF  # packet 3: a bad version byte
    want = decode_batch(buf, off, ln)
    assert want.counters["packets_bad"] == 1
    r = measure_c_packets(buf, off, ln, repeats=1, group=3)
    assert r["messages"] == want.counters["messages"] and r["malformed_packets"] == 1
    out = np.zeros(int(lib.OMDP_OPRA_MAX_MESSAGES), dtype=OPRA_MSG_DTYPE)
    side = np.zeros(64, dtype=np.uint8)
    offs, lens = np.array([len(buf) - 10], dtype=np.uint64), np.array([20], dtype=np.uint32)
    msgs, bad, wall = ffi.new("uint64_t *"), ffi.new("uint64_t *"), ffi.new("int64_t *")
    rc = lib.omdp_opra_bench_decode_packets(ffi.from_buffer("uint8_t[]", buf), len(buf), ffi.from_buffer("uint64_t[]", offs),
                                            ffi.from_buffer("uint32_t[]", lens), 1, 1, ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out)),
                                            len(out), ffi.from_buffer("uint8_t[]", side), len(side), msgs, bad, wall)
    assert rc == -1
    lens[0] = 10  # the same packet, inside the buffer: decoded (and refused as malformed), not an argument error
    rc = lib.omdp_opra_bench_decode_packets(ffi.from_buffer("uint8_t[]", buf), len(buf), ffi.from_buffer("uint64_t[]", offs),
                                            ffi.from_buffer("uint32_t[]", lens), 1, 1, ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out)),
                                            len(out), ffi.from_buffer("uint8_t[]", side), len(side), msgs, bad, wall)
    assert rc >= 0 and bad[0] == 1
