"""``omdp synth`` never damages a capture: it refuses to overwrite one without --force,
writes beside it and moves the new one into place when whole (a full disk leaves the old
capture as it was and nothing half written), and its manifest records each file's size
and CRC-32, which the replay checks before it plays (a changed file is refused, naming it)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from full_disk_support import fill_up, small_disk  # noqa: F401  (fixture)

from ops.capture.checksums import file_check
from ops.cli.main import cli
from ops.replay.capture_set import CaptureInputError, CaptureSet
from ops.synth.manifest import load_manifest

TINY = ("--seconds", "0.2", "--rate", "0.05x", "--num-lines", "2", "--quiet")


def synth(data: Path, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["synth", "--data", str(data), *TINY, *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


def files_of(capture: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in capture.iterdir()}


@pytest.mark.full  # three captures
def test_an_existing_capture_is_replaced_only_with_force(tmp_path: Path) -> None:
    code, out = synth(tmp_path, "--seed", "1")
    assert code == 0, out
    capture = tmp_path / "captures" / "2008-02-04"
    first = files_of(capture)

    code, out = synth(tmp_path, "--seed", "2")
    assert code == 1 and "a capture is already there; give --force to replace it" in out
    assert files_of(capture) == first

    code, out = synth(tmp_path, "--seed", "2", "--force")
    assert code == 0, out
    assert files_of(capture) != first
    assert load_manifest(capture).seed == 2
    assert sorted(p.name for p in capture.parent.iterdir()) == ["2008-02-04"]  # no temporary left


@pytest.mark.full
def test_the_manifest_records_every_file_and_the_replay_checks_them(tmp_path: Path) -> None:
    code, out = synth(tmp_path)
    assert code == 0, out
    capture = tmp_path / "captures" / "2008-02-04"
    m = load_manifest(capture)
    on_disk = sorted(p.name for p in capture.iterdir() if p.name != "manifest.json")
    assert sorted(m.checksums) == on_disk
    assert all(m.checksums[n].model_dump() == file_check(capture / n) for n in on_disk)
    assert CaptureSet.open(capture).read()  # as written: plays

    pcap = capture / m.lines[1].files["a"][0]
    data = bytearray(pcap.read_bytes())
    data[-1] ^= 0xFF  # same size, one byte changed
    pcap.write_bytes(bytes(data))
    cs = CaptureSet.open(capture)
    with pytest.raises(CaptureInputError, match=rf"{pcap.name}: CRC-32 .* but the manifest records"):
        cs.read()

    pcap.write_bytes(bytes(data[: len(data) // 2]))  # cut short, as a full disk leaves it
    with pytest.raises(CaptureInputError, match=rf"{pcap.name}: {len(data) // 2:,} bytes, but the manifest records"):
        CaptureSet.open(capture)


@pytest.mark.full  # two captures
def test_a_full_disk_leaves_the_old_capture_whole(small_disk: Path) -> None:  # noqa: F811
    data = small_disk / "data"
    code, out = synth(data, "--seconds", "0.05", "--num-lines", "1")
    assert code == 0, out
    capture = data / "captures" / "2008-02-04"
    before = files_of(capture)
    fill_up(small_disk)

    code, out = synth(data, "--seed", "3", "--force")
    assert code == 1
    assert "cannot write" in out and "No space left on device" in out and "Traceback" not in out
    assert files_of(capture) == before
    assert sorted(p.name for p in capture.parent.iterdir()) == ["2008-02-04"]
    assert CaptureSet.open(capture).read()
