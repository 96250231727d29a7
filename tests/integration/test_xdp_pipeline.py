"""The pipeline over a veth pair across two namespaces (``omdp bench sweep --inputs
multicast_veth,xdp``): the feed sender in the pair's namespace sends through the kernel's
UDP socket, or through AF_XDP with the handler receiving through AF_XDP on the other end;
every message arrives either way, and the pair and its namespace are gone afterwards.
Skipped with the reason where AF_XDP or namespaces are not allowed."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_support import make_capture
from xdp_support import xdp_refused

from ops.cli.main import cli
from ops.topologies import topology_path

_why = xdp_refused()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


@pytest.mark.full  # two pipeline runs: seconds
def test_the_pipeline_over_af_xdp_and_over_the_kernel_on_one_veth_pair(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_capture(data, seconds=0.5, lines=2)
    out = tmp_path / "sweep.json"
    res = CliRunner().invoke(cli, ["bench", "sweep", str(topology_path("opra_fused")), "--rates", "1x", "--seconds",
                                   "1", "--inputs", "multicast_veth,xdp", "--data", str(data), "--json", str(out)])
    assert res.exit_code == 0, res.output
    points = {p["config"]: p for p in json.loads(out.read_text())["points"]}
    assert set(points) == {"opra-fused multicast_veth", "opra-fused xdp"}
    for label, p in points.items():
        assert p["error"] is None, (label, p["error"])
        acc = p["run"]["accounting"]
        assert acc["messages_received"] > 0 and acc["missed_ratio"] == 0.0, (label, acc)
    tag = f"omdpx{os.getpid() % 10000:04d}"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    assert tag not in namespaces, "the sweep left its veth namespace behind"
