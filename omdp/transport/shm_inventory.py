"""Every omdp shared-memory segment of this host, its type and its owner's state.

All omdp components share the ``omdp-`` prefix in /dev/shm; each type records its owner:

========================  ====================================  =====================================
type                      name                                  owner record
========================  ====================================  =====================================
``vega-ring``             ``omdp-<run>-<channel>``              pid + start time of each side
``replay-ctl``            ``omdp-replay-<run>-ctl``             creator pid (+ start time, new ones)
``replay-intended``       ``omdp-replay-<run>-intended``        creator pid (+ start time, new ones)
``stats``                 ``omdp-<run>-stats``                  creator pid, closed time
``mpi-shm``               ``sm_segment.*`` (an MPI library's)   the processes that map it (mpi_shm)
========================  ====================================  =====================================

An ``omdp-*`` entry that is not a regular file (a FIFO, a symbolic link: nothing omdp makes)
is listed as ``not-a-segment`` and never opened - opening a FIFO would hang the scan - nor
removed.

A segment is removable (``omdp shm clean``) once its owner is dead: no live side of a Vega
ring; the replay service that created a replay segment is gone (a pid whose start time
differs from the recorded one is a reused pid, not the owner); the stats owner is gone or
closed it. A replay or stats segment whose header never became valid (creation cut short)
is removable once older than ``INVALID_GRACE_S``. Anything else is ``unknown`` and left alone.
"""
from __future__ import annotations

import time
from pathlib import Path

from omdp.metrics.stats_cleanup import INVALID_GRACE_S, list_stats_segments, remove_stats_segment
from omdp.native import ffi, lib
from omdp.transport import shm_names
from omdp.transport.owned_segment import OwnedSegment

SHM_DIR = shm_names.SHM_DIR
REPLAY_PREFIX = "omdp-replay-"
REPLAY_KINDS = {"-ctl": "replay-ctl", "-intended": "replay-intended"}
NOT_A_SEGMENT = "not-a-segment"
"""The type of an ``omdp-*`` entry that is no segment (a FIFO, a link): listed, never opened."""


def _replay_owner(name: str) -> tuple[int | None, int, bool | None]:
    """(creator pid, start time, alive) of replay segment ``name``; alive None: no valid header."""
    err = ffi.new("char[]", 256)
    size = ffi.new("uint64_t *")
    base = lib.omdp_replay_shm_open(f"/{name}".encode(), size, 0, err, 256)
    if base == ffi.NULL:
        return None, 0, None
    try:
        if int(size[0]) < 128:
            return None, 0, None
        magic = int(ffi.cast("uint64_t *", base)[0])
        if magic == lib.OMDP_REPLAY_CTL_MAGIC:
            hdr = ffi.cast("omdp_replay_control_t *", base)
        elif magic == lib.OMDP_REPLAY_INTENDED_MAGIC:
            hdr = ffi.cast("omdp_replay_intended_header_t *", base)
        else:
            return None, 0, None
        pid, start = int(hdr.creator_pid), int(hdr.creator_start_time)
    finally:
        lib.omdp_replay_shm_unmap(base, size[0])
    return pid, start, pid > 0 and bool(lib.omdp_vega_pid_alive(pid, start))


def replay_owner_alive(name: str) -> bool | None:
    """Whether replay segment ``name``'s creator (pid and, when recorded, start time) lives;
    None when the segment has no valid header."""
    return _replay_owner(name)[2]


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _classify(path: Path, size: int, stats_status: dict) -> OwnedSegment:
    name = path.name
    vega = shm_names.read_stats(name)
    if vega is not None:
        seg = shm_names.Segment(name, size, 0.0, vega)
        alive = not seg.stale
        pids = ",".join(str(vega[f"{s}_pid"]) for s in ("tx", "rx") if int(vega[f"{s}_pid"]) > 0)
        return OwnedSegment(name, "vega-ring", seg.run, size, int(vega["tx_pid"]) or int(vega["rx_pid"]) or None,
                            "alive" if alive else "dead", seg.stale,
                            f"sender {vega['tx_state']}, receiver {vega['rx_state']}" + (f" (pid {pids})" if pids else ""),
                            vega)
    if name.startswith(REPLAY_PREFIX):
        for suffix, kind in REPLAY_KINDS.items():
            if name.endswith(suffix) and len(name) > len(REPLAY_PREFIX) + len(suffix):
                run = name[len(REPLAY_PREFIX):-len(suffix)]
                pid, start, alive = _replay_owner(name)
                if alive is None:
                    age = _age(path)
                    return OwnedSegment(name, kind, run, size, None, "unknown", age > INVALID_GRACE_S,
                                        f"no valid header, {age:.0f} s old")
                how = "pid + start time" if start else "pid only (segment predates the start-time record)"
                return OwnedSegment(name, kind, run, size, pid, "alive" if alive else "dead", not alive,
                                    f"creator pid {pid} {'alive' if alive else 'gone'} ({how})")
    st = stats_status.get(name)
    if st is not None:
        owner = "alive" if not st.stale else ("closed" if "closed" in st.reason else
                                              "dead" if st.pid is not None else "unknown")
        return OwnedSegment(name, "stats", st.run_id, size, st.pid, owner, st.stale, st.reason)
    return OwnedSegment(name, "unknown", "", size, None, "unknown", False, "not an omdp segment type (left alone)")


def list_owned_segments(shm_dir: Path = SHM_DIR) -> list[OwnedSegment]:
    """Every ``omdp-*`` segment in ``shm_dir``, sorted by name, with type and owner state."""
    if not shm_dir.is_dir():
        return []
    stats_status = {s.name: s for s in list_stats_segments(shm_dir)} if shm_dir == SHM_DIR else {}
    found = []
    for path in sorted(shm_dir.glob(f"{shm_names.PREFIX}*")):
        odd = shm_names.not_a_segment(path)
        if odd:
            found.append(OwnedSegment(path.name, NOT_A_SEGMENT, "", 0, None, "unknown", False,
                                      f"{odd}, not a shared memory segment (left alone)"))
            continue
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            continue
        found.append(_classify(path, size, stats_status))
    from omdp.transport.mpi_shm import list_mpi_segments

    return found + list_mpi_segments(shm_dir)


def remove(seg: OwnedSegment) -> bool:
    """Unlink ``seg`` by its type's own call; False when it was already gone."""
    if seg.kind == "vega-ring":
        return shm_names.unlink(seg.name)
    if seg.kind == "stats":
        return remove_stats_segment(seg.run)
    if seg.kind in REPLAY_KINDS.values():
        return lib.omdp_replay_shm_unlink(f"/{seg.name}".encode()) == 0
    if seg.kind == "mpi-shm":
        from omdp.transport.mpi_shm import unlink

        return unlink(SHM_DIR / seg.name)
    raise ValueError(f"{seg.name}: unknown segment type, not removed")


def clean_dead(run: str | None = None, dry_run: bool = False) -> list[OwnedSegment]:
    """Remove every segment whose owner is dead (only run ``run``'s when given); returns them.
    Each one's owner is looked at again just before it goes."""
    removed = []
    for seg in list_owned_segments():
        if not seg.removable or (run is not None and seg.run != run):
            continue
        if dry_run:
            removed.append(seg)
            continue
        if seg.kind == "mpi-shm":
            from omdp.transport.mpi_shm import classify

            again = classify(SHM_DIR / seg.name)
        else:
            again = _classify(SHM_DIR / seg.name, seg.size,
                              {s.name: s for s in list_stats_segments()} if seg.kind == "stats" else {})
        if again.removable and remove(again):
            removed.append(again)
    return removed


