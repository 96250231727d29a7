"""Where every ``omdp bench ...`` command writes its ``--json``: the document with the command
line that produced it, the machine it ran on and when, the three things ``omdp bench report``
prints beside each figure (docs/benchmarks.md, "How we measure")."""
from __future__ import annotations

import json
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any

from omdp.atomic_files import write_text_atomic


def command_line() -> str:
    """The command as typed: ``omdp`` and this process's arguments."""
    return "omdp " + shlex.join(sys.argv[1:])


def write_bench_json(path: str | Path, doc: dict[str, Any], indent: int = 2,
                     default: Callable[[Any], Any] = str) -> None:
    """Write ``doc`` as JSON at ``path``, adding ``command``, ``machine`` and ``written`` (UTC)
    where the benchmark did not set them; ``default`` converts what JSON has no type for."""
    from omdp.runtime.machine import machine_info

    doc.setdefault("command", command_line())
    doc.setdefault("machine", machine_info())
    doc.setdefault("written", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(doc, indent=indent, default=default) + "\n")
