"""An MPI run across two namespace hosts: the job starts in the first host, reaches the
second through the launch agent (``omdp.runtime.mpi_agent``), and the ranks' messages cross
the veth link over Open MPI's TCP path. Every record is accounted for and nothing is left
behind. Needs root (namespaces) and MPI; skips with the reason otherwise."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omdp.transport.mpi_job import mpi_job_unavailable
from ops.netns.lab import NamespaceLab, lab_unavailable

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
WHY = lab_unavailable() or mpi_job_unavailable()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"MPI across namespace hosts: {WHY}"),
              pytest.mark.full]  # a whole `omdp run` as an MPI job over two hosts
COUNT = 100000
HANG_GUARD_S = 180


@pytest.fixture(scope="module")
def lab() -> Iterator[NamespaceLab]:
    with NamespaceLab(2) as made:
        yield made


def topology(lab: NamespaceLab, tmp_path: Path) -> Path:
    hosts = "\n".join(f'[hosts.{name}]\nnetns = "{ns}"\naddress = "{addr}"\nisolated = false\n'
                      for name, ns, addr in zip(("a", "b"), lab.hosts, lab.addresses))
    path = tmp_path / "mpi_two_hosts.toml"
    path.write_text(f'''
name = "mpi-two-hosts"

[channel]
transport = "mpi"
queue_size = 32
max_message = 4096
mutex = false
wait = "spin-yield"

{hosts}
[operators.src]
kind = "seq_source"
params = {{ count = {COUNT}, batch = 16, record_size = 96 }}

[operators.relay]
kind = "relay"

[operators.sink]
kind = "seq_sink"

[partitions.up]
operators = ["src"]
host = "a"

[partitions.mid]
operators = ["relay"]
host = "b"

[partitions.down]
operators = ["sink"]
host = "b"

[[edges]]
from = "src.out"
to = "relay.in"

[[edges]]
from = "relay.out"
to = "sink.in"
''')
    return path


def test_mpi_run_across_two_namespace_hosts_accounts_for_every_record(lab: NamespaceLab, tmp_path: Path) -> None:
    r = subprocess.run([*CLI, "run", str(topology(lab, tmp_path)), "--data", str(tmp_path / "data"), "--json", "-"],
                       capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "ended"
    ops = {k: v for p in result["partitions"].values() for k, v in p["report"]["operators"].items()}
    assert ops["sink"]["records"] == ops["sink"]["expected"] == COUNT
    assert ops["sink"]["gaps"] == ops["sink"]["out_of_order"] == 0
    channels = {name: c for p in result["partitions"].values() for name, c in p["report"]["channels"].items()}
    assert channels["up->mid"]["ended"] and channels["mid->down"]["ended"]
    run_dir = Path(result["partitions"]["down"]["log"]).parents[1]
    procs = json.loads((run_dir / "processes.json").read_text())
    assert [procs[n]["host"] for n in ("up", "mid", "down")] == ["a", "b", "b"]
    assert [procs[n]["rank"] for n in ("up", "mid", "down")] == [0, 1, 2]
    for name in ("up", "mid", "down"):
        stat = Path(f"/proc/{procs[name]['pid']}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX", f"{name} is still there"
    assert not (run_dir / "control").exists()
    # the two ranks on host b shared memory under b's own host name (the agent's UTS namespace): Open MPI
    # names its segments by host, and counted them as one node apart from a, which they reach over TCP
    made = json.loads((run_dir / "mpi_files.json").read_text())
    assert made and all(f".{lab.hosts[1]}." in f for f in made), made
    assert [f for f in made if Path(f).exists()] == []
