"""One ``omdp-*`` entry of /dev/shm as ``omdp shm list`` shows it: its own module, so that the
scanners of omdp's segments (shm_inventory) and of MPI libraries' files (mpi_shm) both build
it without importing each other."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OwnedSegment:
    """One ``omdp-*`` segment: type, run, size, owner pid and state, and whether it may go."""

    name: str
    kind: str             # vega-ring | replay-ctl | replay-intended | stats | not-a-segment | unknown
    run: str
    size: int
    owner_pid: int | None
    owner: str            # alive | dead | closed | unknown
    removable: bool
    detail: str
    stats: dict[str, int | str] | None = None   # a Vega ring's counters

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "type": self.kind, "run": self.run, "size": self.size,
                "owner_pid": self.owner_pid, "owner": self.owner, "removable": self.removable,
                "stale": self.removable, "detail": self.detail, "stats": self.stats}
