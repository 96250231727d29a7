"""A full disk for a test: a small tmpfs mounted on a temporary folder and filled to its last
byte, so the next write there fails with ENOSPC as a full data disk does. Mounting needs
root (CAP_SYS_ADMIN); elsewhere the tests that need it skip with that reason."""
from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

SIZE = "1m"


def fill_up(folder: Path) -> None:
    """Write into ``folder`` until the file system says it is full."""
    chunk = b"\0" * 65536
    with open(folder / "filler", "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    return
                chunk = chunk[: len(chunk) // 2]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder (with a ``data`` folder in it) on a 1 MiB tmpfs; ``fill_up`` fills it."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a disk to fill) needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        (mnt / "data").mkdir()
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def full_disk(small_disk: Path) -> Path:
    """``small_disk`` with no byte left."""
    fill_up(small_disk)
    return small_disk


def leftovers(folder: Path) -> list[str]:
    """Temporary or empty files under ``folder`` (what a failed write must not leave)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and p.name != "filler" and (p.name.endswith(".tmp") or p.stat().st_size == 0))
