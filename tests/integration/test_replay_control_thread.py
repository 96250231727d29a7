"""The replay service survives anything going wrong in its control (supervisor) thread: the
run ends "failed" with the error in its status, the senders stop and the shared memory is
removed; a rate the pacing cannot represent is refused before anything starts."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from replay_support import make_line, write_capture

from ops.replay.config import ReplayConfig
from ops.replay.rates import RateError, RateSpec
from ops.replay.service import ReplayService


def test_control_thread_failure_ends_the_run_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_capture(tmp_path / "cap", [make_line(1, 2000)])
    svc = ReplayService(ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=1000), copies="A",
                                     run_dir=tmp_path / "run"))

    def boom(run: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(svc, "_drain", boom)
    st = svc.start()
    names = [f"/dev/shm/omdp-replay-{st.run_id}-ctl", f"/dev/shm/omdp-replay-{st.run_id}-intended"]
    assert svc.wait(20.0), "the control thread must end the run"
    final = svc.status()
    assert final.state == "failed"
    assert "control thread failed: ZeroDivisionError" in (final.error or "")
    assert not svc.running
    assert not any(Path(n).exists() for n in names)
    deadline = time.monotonic() + 5
    assert svc.stop().state == "failed" and time.monotonic() < deadline


def test_unrepresentable_rate_refused_at_set_rate(tmp_path: Path) -> None:
    write_capture(tmp_path / "cap", [make_line(1, 200)])
    with ReplayService(ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(speed=1), copies="A",
                                    run_dir=tmp_path / "run")) as svc:
        svc.start()
        with pytest.raises(RateError, match="at most"):
            svc.set_rate(RateSpec(kind="rate", value=1e308))
        assert svc.running or svc.status().state == "finished"
