"""Multi-host runs on one machine: three namespace hosts (network namespace on a bridge,
plus a private /dev/shm and a PID namespace each), feed handlers on one, engines on a
second, the collector on a third, joined by vega-tcp and tcp, with vega-shm only inside a
host. Every record is accounted for, one host's clock runs 2 s behind and the run's
estimate recovers it within its stated error, and nothing is left behind. Needs root for
namespaces; skips with the reason otherwise."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omdp.plan import build_plan
from omdp.runtime.hosts import HostLaunchers
from omdp.topology.load import load_topology
from ops.netns.lab import NamespaceLab, lab_unavailable
from ops.pipeline.registry import build_registry

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
WHY = lab_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"network namespaces: {WHY}")
COUNT = 20000
SKEW_NS = -2_000_000_000
"""The feed host's clock runs 2 s behind (OMDP_CLOCK_OFFSET_NS on that host only)."""


@pytest.fixture(scope="module")
def lab() -> Iterator[NamespaceLab]:
    with NamespaceLab(3) as made:
        yield made


def topology(lab: NamespaceLab, tmp_path: Path, feed_env: str = "") -> Path:
    text = f'''
name = "three-hosts"

[channel]
transport = "vega-tcp"
queue_size = 32
max_message = 4096
mutex = false
wait = "spin-yield"

[hosts.feed]
netns = "{lab.hosts[0]}"
address = "{lab.addresses[0]}"
{feed_env}
[hosts.engines]
netns = "{lab.hosts[1]}"
address = "{lab.addresses[1]}"

[hosts.collect]
netns = "{lab.hosts[2]}"
address = "{lab.addresses[2]}"

[operators.src]
kind = "seq_source"
replicas = 2
params = {{ count = {COUNT}, batch = 16, record_size = 96, rate = 100000.0 }}

[operators.de]
kind = "relay"

[operators.dx]
kind = "relay"

[operators.sink]
kind = "seq_sink"

[partitions.fh]
operators = ["src"]
host = "feed"

[partitions.de]
operators = ["de"]
host = "engines"

[partitions.dx]
operators = ["dx"]
host = "engines"

[partitions.mc]
operators = ["sink"]
host = "collect"

[[edges]]
from = "src.out"
to = "de.in"

[[edges]]
from = "de.out"
to = "dx.in"
channel = {{ transport = "vega-shm" }}

[[edges]]
from = "dx.out"
to = "sink.in"
channel = {{ transport = "tcp" }}
'''
    path = tmp_path / "three_hosts.toml"
    path.write_text(text)
    return path


@pytest.mark.full  # a whole run over three hosts
def test_three_hosts_account_for_every_record_and_recover_a_clock_offset(lab: NamespaceLab, tmp_path: Path) -> None:
    topo = topology(lab, tmp_path, f'env = {{ OMDP_CLOCK_OFFSET_NS = "{SKEW_NS}" }}\n')
    r = subprocess.run([*CLI, "run", str(topo), "--data", str(tmp_path / "data"), "--json", "-",
                        "--set", "hosts.engines.ptp=true"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "ended"
    ops = {k: v for p in result["partitions"].values() for k, v in p["report"]["operators"].items()}
    sink = ops["sink"]
    assert sink["records"] == 2 * COUNT and sink["sources"] == 2
    assert sink["gaps"] == sink["out_of_order"] == sink["bad_check"] == sink["bad_record"] == 0
    assert ops["de"]["batches_in"] == ops["de"]["batches_out"] and ops["dx"]["batches_in"] == ops["dx"]["batches_out"]
    channels = {name: c for p in result["partitions"].values() for name, c in p["report"]["channels"].items()}
    assert channels["fh->de"]["ended"] and channels["de->dx"]["ended"] and channels["dx->mc"]["ended"]

    clocks = result["clocks"]
    assert clocks["reference"] == "collect"
    feed, engines = clocks["hosts"]["feed"], clocks["hosts"]["engines"]
    assert feed["method"] == engines["method"] == "ping-pong"
    assert abs(feed["offset_ns"] - SKEW_NS) <= feed["error_ns"], feed
    assert abs(engines["offset_ns"]) <= engines["error_ns"], engines
    assert engines["note"] == "marked ptp, but no /dev/ptp* device there: estimated instead" or os.path.exists("/dev/ptp0")
    assert clocks["clock_offset_error_ns"] == max(h["error_ns"] for h in clocks["hosts"].values())
    # the sink measures from the feed's stamps: uncorrected they would be 2 s old
    assert 0 < sink["latency_max_ns"] < 1_000_000_000, sink

    run_dir = Path(next((tmp_path / "data").glob("runs/*/*/run.json"))).parent
    hosts = json.loads((run_dir / "hosts.json").read_text())
    assert set(hosts) == {"feed", "engines", "collect"}
    for p in json.loads((run_dir / "processes.json").read_text()).values():
        with pytest.raises(ProcessLookupError):
            os.kill(p["pid"], 0)
    for h in hosts.values():
        with pytest.raises(ProcessLookupError):
            os.kill(h["keeper_pid"], 0)
    assert not [f for f in os.listdir("/dev/shm") if run_dir.name in f]


def test_hosts_have_private_shared_memory_and_pids(lab: NamespaceLab, tmp_path: Path) -> None:
    plan = build_plan(load_topology(topology(lab, tmp_path)), build_registry(), "three-hosts")
    (tmp_path / "logs").mkdir()
    hosts = HostLaunchers(plan, tmp_path / "logs", dict(os.environ))
    hosts.start()
    try:
        def inside(host: str, script: str) -> str:
            r = subprocess.run(hosts.argv(host, ["sh", "-c", script]), capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stderr
            return r.stdout.strip()

        marker = f"omdp-isolation-{os.getpid()}"
        inside("feed", f"touch /dev/shm/{marker}")
        assert inside("feed", f"ls /dev/shm/{marker}").endswith(marker)
        assert inside("engines", f"ls /dev/shm/{marker} 2>/dev/null || echo absent") == "absent"
        assert not os.path.exists(f"/dev/shm/{marker}")
        pid_ns = {h: inside(h, "readlink /proc/self/ns/pid") for h in ("feed", "engines", "collect")}
        assert len(set(pid_ns.values())) == 3 and os.readlink("/proc/self/ns/pid") not in pid_ns.values()
        assert inside("collect", "ip -o -4 addr show eth0").split()[3] == f"{lab.addresses[2]}/24"
    finally:
        hosts.close()


def test_a_host_that_is_not_isolated_shares_this_machine_s_memory(lab: NamespaceLab, tmp_path: Path) -> None:
    plan = build_plan(load_topology(topology(lab, tmp_path), ["hosts.feed.isolated=false"]), build_registry(), "t")
    hosts = HostLaunchers(plan, tmp_path, dict(os.environ))
    hosts.start()
    try:
        assert "feed" not in hosts.keepers and hosts.argv("feed", ["true"])[:4] == ["ip", "netns", "exec", lab.hosts[0]]
        marker = f"/dev/shm/omdp-shared-{os.getpid()}"
        r = subprocess.run(hosts.argv("feed", ["sh", "-c", f"touch {marker} && ip -o -4 addr show eth0"]),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and f"{lab.addresses[0]}/24" in r.stdout
        assert os.path.exists(marker)
        os.unlink(marker)
    finally:
        hosts.close()
