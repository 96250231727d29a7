"""``omdp decode`` over pcap and SIAC files: one line per message, malformed packets on
stderr with their index, the rest still decoded, exit status 1."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from feedhandlers.captures import write_pcap, write_siac
from feedhandlers.opra_fast import TABLE_HEADER, decode_packet, render_ascii
from ops.cli.main import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
import test_codec_golden as golden  # noqa: E402


GOOD = [
    golden.packet("0000005000", golden.K_BEST_BID, golden.K_BEST_OFFER, golden.K_BOTH),
    golden.packet("0000000100", golden.A_SALE),
    golden.packet("0000000011", golden.Y_INDEX),
]
BAD = b"\x01\x02" + GOOD[1][2:-1] + b"\x04"  # ETX replaced


def _run(args: list[str]):
    return CliRunner().invoke(cli, args)


@pytest.mark.parametrize("fmt", ["pcap", "siac"])
def test_decode_ascii_every_message(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"cap.{fmt}"
    if fmt == "pcap":
        write_pcap(path, GOOD, np.arange(3) * 1000, dst_ip="233.43.202.1", dst_port=51001)
    else:
        write_siac(path, GOOD)
    res = _run(["decode", str(path), "--ascii", "--format", fmt])
    assert res.exit_code == 0, res.output
    want = [line for p in GOOD for line in render_ascii(decode_packet(p))]
    assert res.stdout.splitlines() == want
    assert "5 messages, 0 malformed" in res.stderr


def test_decode_table_and_malformed_packet(tmp_path: Path) -> None:
    path = write_siac(tmp_path / "cap.siac", [GOOD[0], BAD, GOOD[1]])
    res = _run(["decode", str(path)])
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert lines[0] == TABLE_HEADER and len(lines) == 1 + 3 + 1
    assert lines[1].startswith("k       5000 09:30:00.000 I QQQ    2008-03-22       45.0 C")
    assert lines[4].startswith("a        100 09:30:00.000 C IBM    2008-01-19      105.0 C")
    assert "packet 1: BAD_ETX" in res.stderr
    assert "1 malformed" in res.stderr
