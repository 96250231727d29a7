"""The machine a benchmark ran on, as benchmarks report it (CPU model from lscpu, cores,
kernel, Python, numpy)."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess

import numpy as np


def cpu_model() -> str:
    """The CPU model name as ``lscpu`` prints it (``/proc/cpuinfo`` where lscpu is missing)."""
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, object]:
    """What to print beside every benchmark figure."""
    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average": list(os.getloadavg()),
    }
