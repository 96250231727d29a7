"""``omdp shm list`` / ``omdp shm clean`` on segments of live and killed processes."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import time
from pathlib import Path

from click.testing import CliRunner
from shm_holders_support import CTX, dead_and_live_holders, held_names, hold_segments

from ops.cli.main import cli
from omdp.transport.shm_names import new_run_id, read_stats, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver


def hold_receiver(name: str) -> None:
    VegaReceiver.create(ChannelSpec(queue_size=4, max_message=64), name)
    time.sleep(60)


def test_list_and_clean_only_touch_dead_vega_segments() -> None:
    runner = CliRunner()
    run = new_run_id()
    live = VegaReceiver.create(ChannelSpec(queue_size=4, max_message=64), shm_name(run, "live"))
    dead_name = shm_name(run, "dead")
    child = CTX.Process(target=hold_receiver, args=(dead_name,))
    child.start()
    deadline = time.monotonic() + 30
    while read_stats(dead_name) is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    foreign = Path("/dev/shm", shm_name(run, "foreign"))
    foreign.write_bytes(b"not a ring")  # another component's segment under the same prefix
    try:
        out = runner.invoke(cli, ["shm", "list"]).output
        assert dead_name in out and live.name in out and "left alone" in out
        dry = runner.invoke(cli, ["shm", "clean", "--run", run, "--dry-run"]).output
        assert dry.strip().startswith(f"would remove {dead_name} (vega-ring") and len(dry.strip().splitlines()) == 1
        result = runner.invoke(cli, ["shm", "clean", "--run", run])
        assert result.exit_code == 0 and f"removed {dead_name}" in result.output
        assert not Path("/dev/shm", dead_name).exists()
        assert Path("/dev/shm", live.name).exists() and foreign.exists()
        listed = runner.invoke(cli, ["shm", "list", "--json"]).output
        assert f'"name": "{live.name}"' in listed and '"rx_state": "attached"' in listed
    finally:
        foreign.unlink()
        live.close()
    assert not Path("/dev/shm", live.name).exists()


def test_replay_and_stats_segments_listed_with_owner_and_cleaned_once_dead() -> None:
    runner = CliRunner()
    (dead_run, live_run), procs = dead_and_live_holders()
    names = held_names
    try:
        rows = [json.loads(line) for line in runner.invoke(cli, ["shm", "list", "--json"]).output.splitlines()]
        by_name = {row["name"]: row for row in rows}
        for r, owner, child in ((dead_run, "dead", procs[0]), (live_run, "alive", procs[1])):
            for name, kind in zip(names(r), ("replay-ctl", "replay-intended", "stats")):
                row = by_name[name]
                assert (row["type"], row["run"], row["owner_pid"], row["owner"]) == (kind, r, child.pid, owner), row
                assert row["removable"] is (owner == "dead")
        table = runner.invoke(cli, ["shm", "list"]).output
        assert "not a Vega ring" not in table and "replay-intended" in table
        as_csv = {r["name"]: r for r in csv.DictReader(io.StringIO(runner.invoke(cli, ["shm", "list", "-o", "csv"]).output))}
        assert {n: (r["type"], r["owner"]) for n, r in as_csv.items() if n in by_name} == \
            {n: (r["type"], r["owner"]) for n, r in by_name.items()}
        for r in (dead_run, live_run):
            runner.invoke(cli, ["shm", "clean", "--run", r])
        assert not any(Path("/dev/shm", n).exists() for n in names(dead_run))
        assert all(Path("/dev/shm", n).exists() for n in names(live_run))
    finally:
        os.kill(procs[1].pid, signal.SIGKILL)
        procs[1].join()
    out = runner.invoke(cli, ["shm", "clean", "--run", live_run]).output
    assert out.strip().endswith("3 stale segment(s) removed")
    assert not any(Path("/dev/shm", n).exists() for n in names(live_run))


def test_replay_segment_of_a_reused_pid_is_dead() -> None:
    """The creator's start time is recorded: a live pid that started at another time is not
    the owner (a pid reused after the service died)."""
    from omdp.native import ffi
    from omdp.transport.shm_inventory import list_owned_segments
    from ops.replay.ctl_segment import CtlSegment
    from ops.replay.shm_segments import ctl_name

    run = new_run_id()
    name = ctl_name(run)[1:]
    ready = CTX.Event()
    child = CTX.Process(target=hold_segments, args=(run, ready))
    child.start()
    try:
        assert ready.wait(30)
        row = next(s for s in list_owned_segments() if s.name == name)
        assert (row.kind, row.owner_pid, row.owner, row.removable) == ("replay-ctl", child.pid, "alive", False)
        ctl = CtlSegment.open(ctl_name(run))
        hdr = ffi.cast("omdp_replay_control_t *", ctl.segment.base)
        assert hdr.creator_start_time > 0
        hdr.creator_start_time += 1  # as if the live child were another, later process
        ctl.segment.close()
        row = next(s for s in list_owned_segments() if s.name == name)
        assert (row.owner_pid, row.owner, row.removable) == (child.pid, "dead", True)
        result = CliRunner().invoke(cli, ["shm", "clean", "--run", run])
        assert f"removed {name}" in result.output and not Path("/dev/shm", name).exists()
        assert Path("/dev/shm", f"omdp-replay-{run}-intended").exists(), "its true owner lives"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.join()
    CliRunner().invoke(cli, ["shm", "clean", "--run", run])
    assert not list(Path("/dev/shm").glob(f"omdp*{run}*"))
