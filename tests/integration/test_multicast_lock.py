"""Two multicast runs on one host would mix each other's feeds: a run locks its groups and
ports, a second run on any of them is refused before it starts (naming the holder's run id
and pid), a lock its holder released or died with is taken again, and runs on other groups
do not conflict."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_support import CAPTURE_DATE, make_capture

from ops.pipeline.multicast_lock import LOCK_DIR_ENV, MulticastBusy, MulticastLock, lock_dir

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
FEED = [("233.43.202.1", 11101), ("233.43.202.2", 11102)]


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "locks"
    monkeypatch.setenv(LOCK_DIR_ENV, str(d))
    return d


def test_a_second_run_on_the_same_groups_is_refused_naming_the_holder() -> None:
    with MulticastLock.acquire("first", FEED):
        with pytest.raises(MulticastBusy, match=rf"multicast 233.43.202.2:11102 is in use by run first \(pid {os.getpid()}\)"):
            MulticastLock.acquire("second", [("233.43.202.9", 11109), FEED[1]])
        with MulticastLock.acquire("other", [("233.43.202.9", 11109)]) as other:
            assert other.fds  # other groups: no conflict (and the refused run held nothing)
    with MulticastLock.acquire("second", FEED) as again:
        assert again.taken_over == []  # released cleanly: nothing to take over


def test_a_lock_of_a_dead_run_is_taken_over_and_said() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    d = lock_dir()
    d.mkdir(parents=True)
    (d / "233.43.202.1_11101.lock").write_text(f"killed1 {dead.pid}\n")  # as a SIGKILLed run leaves it
    with MulticastLock.acquire("next", FEED) as lock:
        assert lock.taken_over == [f"233.43.202.1:11101 of run killed1, pid {dead.pid}"]
        assert (d / "233.43.202.1_11101.lock").read_text() == f"next {os.getpid()}\n"


@pytest.mark.full  # a capture and a refused run
def test_omdp_run_with_multicast_input_is_refused_while_another_run_holds_the_groups(tmp_path: Path) -> None:
    capture = make_capture(tmp_path / "data", seconds=0.3, lines=2)
    manifest = json.loads((capture / "manifest.json").read_text())
    endpoints = [(ln[c]["group"], ln[c]["port"]) for ln in manifest["lines"] for c in ("a", "b")]
    with MulticastLock.acquire("holder1", endpoints[-1:]):
        r = subprocess.run([*CLI, "run", str(TOPOLOGIES / "opra_fused.toml"), "--data", str(tmp_path / "data"),
                            "--capture-date", CAPTURE_DATE, "--seconds", "1", "--set",
                            'operators.fh.params.input="multicast"'], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"is in use by run holder1 (pid {os.getpid()})" in r.stderr and "Traceback" not in r.stderr
    assert not list((tmp_path / "data").glob("runs/*/*"))
