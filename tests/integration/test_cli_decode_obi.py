"""``omdp decode --format auto`` on captures of OPRA's binary feed (OBI v6): the feed told
from the packets' bytes, one line per message, a bad checksum shown but reported and counted,
other malformed blocks reported, exit status 1 on any; FAST V2 captures still decode."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from feedhandlers.captures import write_pcap, write_siac
from ops.cli.main import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from obi_examples import EXAMPLES  # noqa: E402

BLOCKS = [EXAMPLES[n] for n in sorted(EXAMPLES)]
MESSAGES = 23  # in the spec's 18 examples


def _run(args: list[str]):
    return CliRunner().invoke(cli, args)


def _pcap(path: Path, blocks: list[bytes]) -> Path:
    return write_pcap(path, blocks, np.arange(len(blocks)) * 1000, dst_ip="224.0.204.1", dst_port=45001)


def test_obi_pcap_decodes_every_message(tmp_path: Path) -> None:
    res = _run(["decode", str(_pcap(tmp_path / "line1.pcap", BLOCKS)), "--format", "auto"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 1 + MESSAGES and lines[0].startswith("c ")
    assert lines[2].split()[:4] == ["k", "1", "09:30:00.000", "C"] and "best offer Z 10.25 x 3" in lines[4]
    assert any(line.startswith("R ") and "series on line 17" in line for line in lines)
    assert any(line.startswith("Y ") and "VIX   bid 15.02 offer 15.11" in line for line in lines)
    assert "change -0.27 underlying 44.3125" in res.stdout
    assert f"18 packets, {MESSAGES} messages, 0 malformed" in res.stderr


def test_obi_in_a_siac_file(tmp_path: Path) -> None:
    res = _run(["decode", str(write_siac(tmp_path / "cap.siac", BLOCKS[:3]))])
    assert res.exit_code == 0, res.output
    assert "3 packets, 5 messages, 0 malformed" in res.stderr


def test_bad_checksum_is_shown_reported_and_counted(tmp_path: Path) -> None:
    bad = bytearray(EXAMPLES[2])
    bad[20] ^= 1
    res = _run(["decode", str(_pcap(tmp_path / "bad.pcap", [EXAMPLES[1], bytes(bad), EXAMPLES[2][:30], EXAMPLES[14]]))])
    assert res.exit_code == 1
    assert len(res.stdout.splitlines()) == 1 + 1 + 3 + 1  # the bad-checksum block's 3 quotes are shown
    assert "block 1: CHECKSUM 0x13e7, computed 0x13e6" in res.stderr
    assert "block 2: SIZE_PAST_DATAGRAM at byte 1 (header)" in res.stderr
    assert "4 packets, 5 messages, 2 malformed" in res.stderr


def test_ascii_is_refused_for_obi(tmp_path: Path) -> None:
    res = _run(["decode", str(_pcap(tmp_path / "a.pcap", BLOCKS[:2])), "--ascii"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--ascii is FAST V2's reference rendering" in res.output


def test_unrecognised_feed_is_one_line(tmp_path: Path) -> None:
    res = _run(["decode", str(_pcap(tmp_path / "x.pcap", [b"\x07" + bytes(40)]))])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "cannot tell the feed from its first packet" in res.output and "--feed" in res.output


def test_feed_named_explicitly(tmp_path: Path) -> None:
    path = _pcap(tmp_path / "f.pcap", BLOCKS[:2])
    assert _run(["decode", str(path), "--feed", "obi", "--format", "pcap"]).exit_code == 0
    res = _run(["decode", str(path), "--feed", "fast"])  # read as FAST: every packet malformed
    assert res.exit_code == 1 and "2 packets, 0 messages, 2 malformed" in res.stderr
