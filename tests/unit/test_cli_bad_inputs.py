"""Operator-grade errors: every command's bad inputs end with a clean message naming the
option or file, a non-zero exit status and no traceback (and create nothing)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ops.cli.main import cli

TOPOLOGY = str(Path(__file__).resolve().parents[2] / "ops" / "topologies" / "opra_fused.toml")


def invoke(argv: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, argv, catch_exceptions=True)
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        out += "Traceback\n" + "".join(traceback.format_exception(result.exception))
    return result.exit_code, out


@pytest.mark.parametrize("rate", ["0x", "-2x", "abc", "1e400x"])
def test_run_rejects_a_bad_rate_before_creating_anything(tmp_path: Path, rate: str) -> None:
    data = tmp_path / "data"
    code, out = invoke(["run", TOPOLOGY, "--data", str(data), "--rate", rate])
    assert code != 0
    assert "--rate" in out and "Traceback" not in out
    assert not data.exists()


def test_run_rejects_non_positive_seconds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out = invoke(["run", TOPOLOGY, "--data", str(data), "--seconds", "0"])
    assert code != 0 and "--seconds must be positive" in out
    assert not data.exists()


def test_dashboard_live_needs_a_live_run() -> None:
    code, out = invoke(["dashboard", "--live", "NO_SUCH_RUN_i16a", "--address", "127.0.0.1:0"])
    assert code == 2 and "--live" in out and "no live run 'NO_SUCH_RUN_i16a'" in out and "Traceback" not in out
