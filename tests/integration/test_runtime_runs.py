"""``omdp run`` of a small multi-process graph: fused partitions, a multiplexed vega-shm
pair, a tcp pair, fan-in; exact message accounting; clean stops on Ctrl-C, on a duration
and after a killed partition (no process, no shared memory left); machine checks."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from shm_holders_support import dead_and_live_holders, held_names

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "small_mixed.toml"
CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
UNBOUNDED = ("operators.a.params.count=0", "operators.b.params.count=0", "operators.c.params.count=0")
SOURCES = ("a", "b", "c")


def omdp_run(data: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "run", str(TOPOLOGY), "--data", str(data), "--json", "-", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_dir_of(data: Path, timeout: float = 30.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(data.glob("runs/*/*/processes.json"))
        if found:
            return found[0].parent
        time.sleep(0.05)
    raise AssertionError("the run never started its partitions")


def wait_running(proc: subprocess.Popen, run_dir: Path, timeout: float = 30.0) -> None:
    """Wait until every partition has sent a heartbeat (logs say 'running')."""
    deadline = time.monotonic() + timeout
    logs = list((run_dir / "logs").glob("*.log"))
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        if len(logs) == 4 and all(" running" in p.read_text() for p in logs):
            return
        logs = list((run_dir / "logs").glob("*.log"))
        time.sleep(0.05)
    raise AssertionError("partitions did not start running")


def assert_nothing_left(run_dir: Path) -> None:
    run_id = run_dir.name
    for name, p in json.loads((run_dir / "processes.json").read_text()).items():
        with pytest.raises(ProcessLookupError):
            os.kill(p["pid"], 0)
    assert not [f for f in os.listdir("/dev/shm") if run_id in f]


def operators(result: dict[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in result["partitions"].values():
        out.update((p["report"] or {}).get("operators", {}))
    return out


def assert_exact_accounting(result: dict[str, Any]) -> None:
    ops = operators(result)
    sent = sum(ops[s]["records"] for s in SOURCES)
    sink = ops["sink"]
    assert sent > 0
    assert sink["records"] == sent, (sink, {s: ops[s]["records"] for s in SOURCES})
    assert sink["expected"] == sent  # every source's numbers contiguous from 0
    assert sink["sources"] == 3
    for k in ("gaps", "out_of_order", "bad_check", "bad_record", "bad_source", "foreign"):
        assert sink[k] == 0, k
    assert ops["r1"]["records"] == ops["r2"]["records"] == ops["a"]["records"]
    assert ops["pr"]["records"] == ops["b"]["records"]
    # every frame a sender put is one its receiver took, on every inserted pair
    chans: dict[str, list[dict[str, int]]] = {}
    for p in result["partitions"].values():
        for name, c in p["report"]["channels"].items():
            chans.setdefault(name, []).append(c)
    assert sorted(chans) == ["mid->snk", "src->mid", "src2->snk"]
    for name, (a, b) in chans.items():
        assert a["frames"] == b["frames"] and a["bytes"] == b["bytes"], name
        assert a["ended"] == b["ended"] == 1, name
        assert a["bad_frames"] == b["bad_frames"] == a["drops"] == 0, name


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_small_graph_runs_to_the_end_with_every_record_accounted(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "ended"
    ops = operators(result)
    assert {s: ops[s]["records"] for s in SOURCES} == {"a": 20000, "b": 3000, "c": 10000}
    assert_exact_accounting(result)
    # batches of 16 x 96 bytes do not fit max_message 1024: r1's batches went as two frames
    src = result["partitions"]["src"]["report"]
    assert src["channels"]["src->mid"]["frames"] > ops["r1"]["batches"] + ops["b"]["batches"]
    run_dir = Path(result["partitions"]["snk"]["log"]).parents[1]
    assert json.loads((run_dir / "plan.json").read_text())["topology"] == "small-mixed"
    assert (run_dir / "run.json").exists() and run_dir.parent.parent.name == "runs"
    assert_nothing_left(run_dir)


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_a_run_first_removes_what_killed_runs_left(tmp_path: Path) -> None:
    """A SIGKILLed `omdp run` cannot unlink the stats segment it owns (nor a killed replay
    service its own); the next run on the host removes them (and only segments whose owner is
    dead) and says so."""
    (dead, live), holders = dead_and_live_holders()
    try:
        assert all(Path("/dev/shm", n).exists() for n in held_names(dead))
        proc = omdp_run(tmp_path)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert not any(Path("/dev/shm", n).exists() for n in held_names(dead))
        assert "left by runs that died" in err and all(n in err for n in held_names(dead))
        assert all(Path("/dev/shm", n).exists() for n in held_names(live)), "a live owner's segments are left alone"
    finally:
        os.kill(holders[1].pid, signal.SIGKILL)
        holders[1].join()
        for n in held_names(dead) + held_names(live):
            Path("/dev/shm", n).unlink(missing_ok=True)


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_ctrl_c_stops_sources_drains_queues_and_cleans_up(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, *[a for s in UNBOUNDED for a in ("--set", s)])
    run_dir = run_dir_of(tmp_path)
    wait_running(proc, run_dir)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "stopped"
    assert "stopping (signal): sources stop, queues drain" in err
    assert_exact_accounting(result)
    assert_nothing_left(run_dir)


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_duration_stop_drains(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, "--duration", "1.5", *[a for s in UNBOUNDED for a in ("--set", s)])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "stopped"
    assert_exact_accounting(result)
    assert_nothing_left(Path(result["partitions"]["snk"]["log"]).parents[1])


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_killed_partition_fails_the_run_and_leaves_nothing(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, *[a for s in UNBOUNDED for a in ("--set", s)])
    run_dir = run_dir_of(tmp_path)
    wait_running(proc, run_dir)
    pids = json.loads((run_dir / "processes.json").read_text())
    os.kill(pids["mid"]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "partition mid died: killed by SIGKILL" in err
    assert "last lines of" in err and "mid INFO running" in err
    result = json.loads(out)
    assert result["status"] == "failed" and result["partitions"]["mid"]["exit"] == -signal.SIGKILL
    assert_nothing_left(run_dir)


@pytest.mark.full  # a whole `omdp run` of four partitions, about 5 s of sources
def test_with_on_death_continue_the_others_run_to_their_end(tmp_path: Path) -> None:
    """run.on_death = "continue": mid killed while the sources run; src and snk go on to the
    sources' end. What src sends mid over vega-shm is dropped and counted, snk's tcp input
    from mid (its socket closed before the supervisor's word came) ends after what mid had
    sent, c's path to snk stays exact, and the run fails naming mid."""
    slow = ("operators.a.params.rate=4000.0", "operators.b.params.rate=600.0", "operators.c.params.rate=2000.0")
    proc = omdp_run(tmp_path, *[a for s in (*slow, 'run.on_death="continue"') for a in ("--set", s)])
    run_dir = run_dir_of(tmp_path)
    wait_running(proc, run_dir)
    pids = json.loads((run_dir / "processes.json").read_text())
    os.kill(pids["mid"]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "partition mid died: killed by SIGKILL" in err
    assert "the others go on without it (run.on_death = continue)" in err
    result = json.loads(out)
    parts = result["partitions"]
    assert result["status"] == "failed" and {n: parts[n]["state"] for n in ("src", "src2", "snk")} == \
           {"src": "ended", "src2": "ended", "snk": "ended"}
    ops = operators(result)
    assert {s: ops[s]["records"] for s in SOURCES} == {"a": 20000, "b": 3000, "c": 10000}
    to_mid = parts["src"]["report"]["channels"]["src->mid"]
    assert to_mid["peer_gone"] == 1 and to_mid["drops"] > 0 and to_mid["ended"] == 0
    from_mid = parts["snk"]["report"]["channels"]["mid->snk"]
    assert from_mid["peer_gone"] == 1 and from_mid["ended"] == 0
    from_src2 = parts["snk"]["report"]["channels"]["src2->snk"]
    assert from_src2["ended"] == 1 and from_src2["frames"] == parts["src2"]["report"]["channels"]["src2->snk"]["frames"]
    sink = ops["sink"]
    assert sink["sources"] == 3 and sink["bad_check"] == sink["bad_record"] == sink["out_of_order"] == 0
    assert 10000 < sink["records"] < 33000  # all of c, and of a and b what mid passed on before it died
    assert_nothing_left(run_dir)


@pytest.mark.full  # `omdp plan` and `omdp run` in fresh interpreters
def test_cpu_out_of_range_is_refused_at_run_time_only(tmp_path: Path) -> None:
    setting = ("--set", "partitions.snk.cpus=[4096]")
    plan = subprocess.run([*CLI, "plan", str(TOPOLOGY), *setting], capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0 and "snk        local  4096" in plan.stdout
    r = subprocess.run([*CLI, "run", str(TOPOLOGY), "--data", str(tmp_path), *setting],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "partitions.snk.cpus: CPU 4096 of snk is not available here (this machine offers" in r.stderr
    assert not list(tmp_path.glob("runs/*/*"))


@pytest.mark.full  # `omdp plan` and `omdp run` in fresh interpreters
def test_transport_missing_from_this_build_is_refused_at_run_time(tmp_path: Path) -> None:
    setting = ("--set", 'edges.5.channel={transport = "vega-ib"}')
    assert subprocess.run([*CLI, "plan", str(TOPOLOGY), *setting], capture_output=True, timeout=60).returncode == 0
    r = subprocess.run([*CLI, "run", str(TOPOLOGY), "--data", str(tmp_path), *setting],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "edges[5].channel.transport: transport 'vega-ib' is not available" in r.stderr


def test_host_that_is_not_this_machine_is_refused(tmp_path: Path) -> None:
    args = ("--set", 'hosts.far={address = "192.0.2.7"}', "--set", 'partitions.snk.host="far"',
            "--set", 'channel.transport="tcp"')
    r = subprocess.run([*CLI, "run", str(TOPOLOGY), "--data", str(tmp_path), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "partitions.snk.host: host far (192.0.2.7) is not this machine" in r.stderr


@pytest.mark.full  # a whole `omdp run` of four partitions
def test_silent_partition_is_declared_dead(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, "--set", "run.heartbeat_timeout_s=1.5", *[a for s in UNBOUNDED for a in ("--set", s)])
    run_dir = run_dir_of(tmp_path)
    wait_running(proc, run_dir)
    pids = json.loads((run_dir / "processes.json").read_text())
    os.kill(pids["snk"]["pid"], signal.SIGSTOP)  # alive but silent: no heartbeats
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "partition snk died: killed by SIGKILL (no heartbeat for" in err
    assert_nothing_left(run_dir)
