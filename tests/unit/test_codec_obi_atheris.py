"""A short run of the atheris fuzz target for the OBI decoder (tests/fuzz/fuzz_obi_decode.py):
slow tier; skipped where atheris is not installed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "tests" / "fuzz" / "fuzz_obi_decode.py"


@pytest.mark.slow
def test_atheris_short_run(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    # An installed package (or the sanitizer build CI puts first on PYTHONPATH) wins over the checkout.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p))
    res = subprocess.run(
        [sys.executable, str(TARGET), "-runs=100000", "-max_len=1100", str(corpus)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Done 100000 runs" in res.stderr
