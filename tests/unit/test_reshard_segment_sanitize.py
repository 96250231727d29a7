"""The run's reshard segment as shared memory: private to the user, gone with its creator,
and a stranger's or a half-made segment under its name refused as such (it goes through
the same create/map code as the other segments, native/src/runtime/shm_region.c)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from omdp.native import lib
from omdp.runtime.reshard import ReshardError, ReshardSegment, reshard_name


def _run_id(tag: str) -> str:
    return f"shm{tag}{os.getpid()}"


def test_private_whatever_the_umask_and_removed_by_its_creator() -> None:
    run_id = _run_id("a")
    old = os.umask(0)
    try:
        seg = ReshardSegment.create(run_id, 4, 2, 1, [0, 1, 0, 1], 1 << 16)
    finally:
        os.umask(old)
    path = Path("/dev/shm") / reshard_name(run_id).lstrip("/")
    try:
        assert path.stat().st_mode & 0o777 == 0o600
        other = ReshardSegment.open(run_id)
        assert other.totals()["buckets"] == 4
        other.close()
        assert path.exists()  # an opener does not remove it
    finally:
        seg.close()
    assert not path.exists()


@pytest.mark.parametrize("size,code", [(0, "EFORMAT"), (64, "EFORMAT"), (1 << 23, "EFORMAT")])
def test_a_segment_that_is_not_one_is_refused(size: int, code: str) -> None:
    run_id = _run_id(f"b{size}")
    path = Path("/dev/shm") / reshard_name(run_id).lstrip("/")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)  # too small for the header, or the right size and no magic
        with pytest.raises(ReshardError) as e:
            ReshardSegment.open(run_id)
        assert e.value.code == int(getattr(lib, f"OMDP_RESHARD_{code}"))
    finally:
        os.close(fd)
        path.unlink()


def test_no_segment_is_a_system_error_naming_the_run() -> None:
    with pytest.raises(ReshardError, match="has no reshard segment") as e:
        ReshardSegment.open(_run_id("c"))
    assert e.value.code == int(lib.OMDP_RESHARD_ESYS)
