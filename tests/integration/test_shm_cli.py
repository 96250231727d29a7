"""``omdp shm list`` / ``omdp shm clean`` on segments of live and killed processes."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

from click.testing import CliRunner

from ops.cli.main import cli
from omdp.transport.shm_names import new_run_id, read_stats, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver

CTX = mp.get_context("fork")


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
        assert dead_name in out and live.name in out and "not a Vega ring" in out
        dry = runner.invoke(cli, ["shm", "clean", "--run", run, "--dry-run"]).output
        assert dry.strip() == f"would remove {dead_name}"
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
