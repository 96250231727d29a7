"""``omdp shm clean`` and MPI's files in /dev/shm: one nobody maps goes, one a live process
maps stays (real files, a real mapping)."""
from __future__ import annotations

import mmap
import os
import time
import uuid

from omdp.transport.mpi_shm import classify
from omdp.transport.shm_inventory import clean_dead, list_owned_segments
from omdp.transport.shm_names import SHM_DIR


def _leftover(tag: str, age_s: float) -> os.PathLike:
    path = SHM_DIR / f"sm_segment.testhost.0.{tag}.0"
    path.write_bytes(b"\0" * 4096)
    old = time.time() - age_s
    os.utime(path, (old, old))
    return path


def test_unmapped_mpi_file_is_cleaned_and_a_mapped_one_stays() -> None:
    dead = _leftover(uuid.uuid4().hex[:8], 60)
    live = _leftover(uuid.uuid4().hex[:8], 60)
    fresh = _leftover(uuid.uuid4().hex[:8], 0)
    with open(live, "r+b") as f, mmap.mmap(f.fileno(), 4096) as held:
        try:
            kinds = {s.name: s for s in list_owned_segments()}
            assert kinds[dead.name].kind == "mpi-shm" and kinds[dead.name].removable
            assert kinds[live.name].owner == "alive" and not kinds[live.name].removable
            assert kinds[live.name].owner_pid == os.getpid()
            assert not classify(fresh).removable  # may be being made
            gone = {s.name for s in clean_dead()}
            assert dead.name in gone and live.name not in gone and fresh.name not in gone
            assert not dead.exists() and live.exists()
            assert held[0] == 0
        finally:
            for p in (dead, live, fresh):
                p.unlink(missing_ok=True)
