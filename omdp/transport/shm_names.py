"""Names of Vega shared-memory segments, and finding the stale ones.

Every segment is ``omdp-<run>-<channel>`` (POSIX shm, mode 0600): ``run`` is one run's id
(no dashes), ``channel`` names the edge. A Vega segment is stale when no live process holds
either side of it (both sides closed, dead or never there); ``omdp shm clean`` removes
those, never a segment with a live side, and never an ``omdp-*`` segment that is not a
Vega ring (other components share the prefix).
"""
from __future__ import annotations

import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from omdp.native import ffi, lib
from omdp.transport.vega_status import PEER_STATES

PREFIX = "omdp-"
SHM_DIR = Path("/dev/shm")
_RUN = re.compile(r"[A-Za-z0-9_.]{1,64}")
_CHANNEL = re.compile(r"[A-Za-z0-9_.-]{1,120}")
_NAME = re.compile(r"omdp-([A-Za-z0-9_.]{1,64})-([A-Za-z0-9_.-]{1,120})")


_ODD_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
              (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def not_a_segment(path: Path) -> str | None:
    """What ``path`` is when it is no shared memory segment - a FIFO, a link, a folder someone
    left under an omdp name - else None (a regular file, or gone). Looks without opening it:
    opening a FIFO would block the scan."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _ODD_KINDS if test(mode)), "not a regular file")


def new_run_id() -> str:
    """A fresh run id for segment names: time and pid, unique on this host."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}p{os.getpid()}{secrets.token_hex(2)}"


def shm_name(run: str, channel: str) -> str:
    """The segment name of ``channel`` in ``run``; raises ValueError naming the bad part."""
    if not _RUN.fullmatch(run):
        raise ValueError(f"run id {run!r}: 1-64 characters of [A-Za-z0-9_.] (no dashes)")
    if not _CHANNEL.fullmatch(channel):
        raise ValueError(f"channel {channel!r}: 1-120 characters of [A-Za-z0-9_.-]")
    return f"{PREFIX}{run}-{channel}"


def check_endpoint(name: str) -> str:
    """Validate a vega-shm endpoint (``omdp-<run>-<channel>``) and return it."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"vega-shm endpoint {name!r}: expected omdp-<run>-<channel> (run without dashes)")
    return name


@dataclass(frozen=True)
class Segment:
    """One ``omdp-*`` segment as found in /dev/shm, with its channel's state."""

    name: str
    size: int
    age_s: float
    stats: dict[str, int | str] | None  # None: no published layout (half made or foreign)

    @property
    def run(self) -> str:
        m = _NAME.fullmatch(self.name)
        return m.group(1) if m else ""

    @property
    def channel(self) -> str:
        m = _NAME.fullmatch(self.name)
        return m.group(2) if m else ""

    @property
    def stale(self) -> bool:
        """A Vega ring with no live process on either side. A segment without a published
        Vega layout is never called stale: it may be another component's, or one being
        made."""
        if self.stats is None:
            return False
        return self.stats["tx_state"] != "attached" and self.stats["rx_state"] != "attached"


def stats_dict(st: object) -> dict[str, int | str]:
    """A ``omdp_vega_stats_t`` as a plain dict, peer states spelled out."""
    out: dict[str, int | str] = {}
    for field, _ in ffi.typeof("omdp_vega_stats_t").fields:
        value = getattr(st, field)
        out[field] = PEER_STATES.get(value, str(value)) if field in ("tx_state", "rx_state") else int(value)
    return out


def read_stats(name: str) -> dict[str, int | str] | None:
    """Counters and peer states of segment ``name``, read through a read-only mapping
    (the data path is not touched); None when it has no published Vega layout."""
    st = ffi.new("omdp_vega_stats_t *")
    rc = lib.omdp_vega_stats_shm(name.encode(), st)
    if rc != lib.OMDP_VEGA_OK:
        return None
    return stats_dict(st)


def list_segments(shm_dir: Path = SHM_DIR) -> list[Segment]:
    """Every ``omdp-*`` segment on this host, sorted by name."""
    found = []
    now = time.time()
    for path in sorted(shm_dir.glob(f"{PREFIX}*")):
        if not_a_segment(path):
            continue
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        found.append(Segment(path.name, st.st_size, now - st.st_mtime, read_stats(path.name)))
    return found


def unlink(name: str) -> bool:
    """Remove segment ``name``; False when it was already gone."""
    rc = lib.omdp_vega_unlink_shm(name.encode())
    if rc == lib.OMDP_VEGA_E_NOT_FOUND:
        return False
    if rc != lib.OMDP_VEGA_OK:
        raise OSError(f"cannot unlink shm segment {name!r}: status {rc}, errno {ffi.errno}")
    return True


def clean_stale(run: str | None = None, shm_dir: Path = SHM_DIR) -> list[str]:
    """Remove stale segments (of one run when ``run`` is given); returns their names."""
    removed = []
    for seg in list_segments(shm_dir):
        if (run is None or seg.run == run) and seg.stale and unlink(seg.name):
            removed.append(seg.name)
    return removed
