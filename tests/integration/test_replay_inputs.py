"""Bad input to the replay: a clear message naming the file or line, and nothing sent."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from replay_support import MulticastReceiver, make_line, multicast_works, write_capture

from ops.cli.main import cli
from ops.replay.capture_set import CaptureInputError
from ops.replay.config import ReplayConfig
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService


def _capture(tmp_path: Path) -> tuple[Path, dict]:
    cap = tmp_path / "captures" / "2008-02-04"
    eps = write_capture(cap, [make_line(1, 50), make_line(2, 50)])
    return cap, eps


def _corrupt_magic(cap: Path) -> str:
    (cap / "line02.pcap").write_bytes(b"this is not a pcap file at all" * 4)
    return "corrupt pcap: .*line02.pcap: offset 0: magic"


def _truncate(cap: Path) -> str:
    p = cap / "line01.pcap"
    p.write_bytes(p.read_bytes()[:-7])
    return "corrupt pcap: .*line01.pcap: ends inside a packet record"


def _remove_pcap(cap: Path) -> str:
    (cap / "line02.pcap").unlink()
    return "line02.pcap: missing"


def _remove_manifest(cap: Path) -> str:
    (cap / "manifest.json").unlink()
    return "manifest.json: missing"


def _bad_manifest(cap: Path) -> str:
    (cap / "manifest.json").write_text("{ not json")
    return "manifest.json: not readable JSON"


BREAKERS = [_corrupt_magic, _truncate, _remove_pcap, _remove_manifest, _bad_manifest]


@pytest.mark.parametrize("breaker", BREAKERS, ids=[b.__name__.strip("_") for b in BREAKERS])
def test_broken_capture_sends_nothing(tmp_path: Path, breaker) -> None:
    why = multicast_works()
    if why:
        pytest.skip(why)
    cap, eps = _capture(tmp_path)
    pattern = breaker(cap)
    with MulticastReceiver(eps) as rx:
        svc = ReplayService()
        with pytest.raises(CaptureInputError, match=pattern):
            svc.configure(ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="1x")))
            svc.start()
        rx.drain(0.1)
    assert rx.received == []
    assert svc.status().state == "idle"
    assert not (tmp_path / "runs").exists(), "no run directory for a replay that never started"


def test_missing_directory_and_absent_line(tmp_path: Path) -> None:
    with pytest.raises(CaptureInputError, match="no such capture directory"):
        ReplayService(ReplayConfig(capture_dir=tmp_path / "nope", rate=RateSpec.parse(rate="1x")))
    cap, _ = _capture(tmp_path)
    with pytest.raises(CaptureInputError, match=r"line 5, 7 not in the manifest \(it lists 1-2\)"):
        ReplayService(ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="1x"), lines="1,5,7"))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--rate", "fast"], "is not a rate"),
        (["--rate", "10"], "is not a rate"),
        ([], "exactly one of"),
        (["--rate", "1x", "--pps", "100"], "exactly one of"),
        (["--speed", "-1"], "above 0"),
        (["--rate", "1x", "--lines", "1-100"], "within 1-99"),
        (["--rate", "1x", "--lines", "3"], "line 3 not in the manifest"),
        (["--rate", "1x", "--target", "udp"], "ring:NAME"),
        (["--rate", "1x", "--drop", "A:2"], "probability"),
        (["--rate", "1x", "--paused"], "needs the HTTP API"),
        (["--rate", "1x", "--target", "ring:omdp-x-y", "--senders", "2"], "one sender"),
    ],
)
def test_cli_rejects_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    cap, _ = _capture(tmp_path)
    res = CliRunner().invoke(cli, ["replay", str(cap), "--no-http", *args])
    assert res.exit_code != 0
    assert message in res.output
    assert not (tmp_path / "runs").exists()


def test_cli_replays_and_reports(tmp_path: Path) -> None:
    why = multicast_works()
    if why:
        pytest.skip(why)
    cap, eps = _capture(tmp_path)
    out = tmp_path / "status.json"
    with MulticastReceiver(eps) as rx:
        res = CliRunner().invoke(cli, ["replay", str(cap), "--rate", "2x", "--no-http", "--json", str(out)])
        rx.drain(0.1)
    assert res.exit_code == 0, res.output
    assert "finished: 100 packets" in res.output and "pacing error" in res.output
    assert len(rx.received) == 200
    runs = list((tmp_path / "runs").glob("*/*/intended.parquet"))
    assert len(runs) == 1, "the run directory sits under <data>/runs/<date>/<run_id>"
    assert '"state": "finished"' in out.read_text()
    shutil.rmtree(tmp_path / "runs")


def test_cli_refuses_groups_another_run_multicasts_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ops.pipeline.multicast_lock import LOCK_DIR_ENV, MulticastLock

    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    cap, eps = _capture(tmp_path)
    with MulticastLock.acquire("busyrun", [eps[2]["A"]]):
        res = CliRunner().invoke(cli, ["replay", str(cap), "--rate", "2x", "--no-http"])
    assert res.exit_code == 1
    assert "nothing sent: multicast" in res.output and "in use by run busyrun" in res.output
    assert not (tmp_path / "runs").exists()
