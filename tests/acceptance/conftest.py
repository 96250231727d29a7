"""The acceptance tier's shared capture: a short synthetic feed of four lines, made once."""
from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import make_capture


@pytest.fixture(scope="session")
def capture_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding captures/2008-02-04 (0.5 s of feed, 4 lines); runs go next to it."""
    data = tmp_path_factory.mktemp("pipeline-data")
    make_capture(data, seconds=0.5, lines=4)
    return data


@pytest.fixture
def data_dir(capture_data: Path, tmp_path: Path) -> Path:
    """A fresh data directory per test with the shared capture linked in."""
    (tmp_path / "captures").mkdir()
    src = capture_data / "captures" / "2008-02-04"
    dst = tmp_path / "captures" / "2008-02-04"
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).symlink_to(f)
    return tmp_path
