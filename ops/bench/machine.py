"""What a benchmark ran on, for its JSON and for docs/benchmarks.md."""
from __future__ import annotations

import os
import platform


def machine_info() -> dict[str, object]:
    """CPU model, cores (online and usable by this process), kernel, Python."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu_model": model or platform.processor(),
        "cpus_online": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()),
    }
