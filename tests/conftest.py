"""Shared pytest configuration: tiers (unit, integration, acceptance) live in folders and are
marked here from the folder; cost is marked in the tests (``full``, ``slow``, ``bench``);
hardware tests skip with their reason. Plain ``pytest`` runs what is not full, slow or bench
(pyproject.toml); every acceptance test runs the whole pipeline, so it is ``full`` too.

Subprocesses the tests start (``python -P -c ...``, partitions of a run) import the same omdp
as this process: its package root goes first on PYTHONPATH, and ``-P`` keeps the working
directory (a source checkout without the compiled module) off their path.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import omdp

_PACKAGE_ROOT = str(Path(omdp.__file__).resolve().parent.parent)
os.environ["PYTHONPATH"] = os.pathsep.join(
    dict.fromkeys([_PACKAGE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
)

_TESTS = Path(__file__).resolve().parent
# folder -> the markers every test in it gets
_FOLDER_MARKS = {
    "unit": ("unit",),
    "integration": ("integration",),
    "acceptance": ("acceptance", "full"),
    "performance": ("bench",),
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            folder = item.path.resolve().relative_to(_TESTS).parts[0]
        except ValueError:
            continue  # not under tests/
        if folder not in _FOLDER_MARKS:
            raise pytest.UsageError(f"{item.nodeid}: a test belongs in one of tests/{{{','.join(_FOLDER_MARKS)}}}")
        for mark in _FOLDER_MARKS[folder]:
            item.add_marker(mark)
