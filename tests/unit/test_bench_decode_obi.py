"""``omdp bench decode`` on OPRA's binary feed: random OBI blocks are valid and carry the
same messages as the FAST V2 packets they are timed beside; the timed loops write into a
line-aligned buffer as the feed handler does; the command runs end to end on a random
capture and on an OBI pcap (feed told from the bytes) and writes both targets."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from feedhandlers.captures import write_pcap
from feedhandlers.opra_obi import WIRE_SHORT, decode_blocks
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from ops.bench.decode import fast_twin_of_obi, line_aligned_records, measure_obi_c_blocks
from ops.bench.random_capture import random_obi_blocks
from ops.cli.main import cli


def test_random_obi_blocks_are_valid_and_their_fast_twin_holds_the_same_messages() -> None:
    buf, off, ln = random_obi_blocks(5000, seed=3)
    d = decode_blocks(buf, off, ln)
    assert not d.errors and d.counters["messages"] == 5000 and int(ln.max()) <= 1000
    assert (d.records["wire"] & WIRE_SHORT).astype(bool).mean() > 0.9  # OPRA's short form where it fits
    assert d.records["msg_seq"].tolist() == list(range(1, 5001))
    fbuf, foff, flen = fast_twin_of_obi(buf, off, ln)
    assert len(foff) == len(off)  # one FAST packet per block
    r = measure_obi_c_blocks(buf, off, ln, 1)
    assert r["messages"] == 5000 and r["malformed_packets"] == 0


def test_the_timed_loops_write_records_into_line_aligned_memory_as_the_feed_handler_does() -> None:
    for n in (1, 4 * 255, 4 * 999):
        out = line_aligned_records(n)
        assert out.ctypes.data % 64 == 0 and out.shape == (n,) and out.dtype == OPRA_MSG_DTYPE
        assert not out.view(np.uint8).any() and out.flags.writeable


def test_bench_decode_obi_random_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "decode.json"
    res = CliRunner().invoke(cli, ["bench", "decode", "--random-messages", "3000", "--feed", "obi", "--repeats", "1",
                                   "--in-cache-packets", "50", "--in-cache-passes", "2", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["obi_c_per_packet"]["messages"] == data["fast_c_per_packet"]["messages"] == 3000
    assert data["obi_over_fast"] > 0 and [t["target"] for t in data["targets"]] == [
        "OBI decode per block from C, as a feed handler", "OBI decode over FAST V2 decode, same messages, same run"]
    assert "OBI per block, from C" in res.output and "FAST V2 per packet, same messages" in res.output


def test_bench_decode_tells_an_obi_pcap_by_its_bytes(tmp_path: Path) -> None:
    buf, off, ln = random_obi_blocks(2000, seed=5)
    blocks = [bytes(buf[o : o + n]) for o, n in zip(off.tolist(), ln.tolist())]
    path = write_pcap(tmp_path / "line01.pcap", blocks, np.arange(len(blocks)) * 1000, dst_ip="224.0.204.1",
                      dst_port=45001)
    res = CliRunner().invoke(cli, ["bench", "decode", str(path), "--repeats", "1", "--in-cache-packets", "0"])
    assert res.exit_code == 0, res.output
    assert f"OBI capture {path}: {len(blocks)} blocks, 2000 messages" in res.output
