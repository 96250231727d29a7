"""``omdp bench scaling`` on this machine's 2 cores: the fused layout over loopback multicast
at two rates, the layout written where a user can rerun it, every point in the JSON with the
latency from intended and the tiers' work, and the markdown table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_support import CAPTURE_DATE
from replay_support import multicast_works, packet_socket_refused

from omdp.topology.load import load_topology
from ops.cli.main import cli


@pytest.mark.slow
def test_scaling_two_cores_over_multicast(data_dir: Path, tmp_path: Path) -> None:
    why = multicast_works() or packet_socket_refused()
    if why:
        pytest.skip(why)
    out, md, layouts = tmp_path / "scaling.json", tmp_path / "scaling.md", tmp_path / "layouts"
    res = CliRunner().invoke(cli, ["bench", "scaling", "--cores", "2", "--rates", "1x,0.5x", "--seconds", "2",
                                   "--stop-after-failures", "5", "--data", str(data_dir), "--capture-date",
                                   CAPTURE_DATE, "--topologies-out", str(layouts), "--json", str(out),
                                   "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    result = json.loads(out.read_text())
    assert [p["rate"] for p in result["points"]] == ["0.5x", "1x"]
    topo = load_topology(layouts / "paper_shm_2c.toml")
    assert topo.operators["fh"].params["input"] == "multicast"
    for p in result["points"]:
        assert p["cores"] == 2 and p["error"] is None, p
        assert p["missed_ratio"] == 0 and p["achieved_fraction"] > 0.99, p
        assert p["fh_in_p50_us"] > 0 and p["intended_p50_us"] >= p["fh_in_p50_us"], p
        assert p["handler_ns_per_packet"] > 0 and p["engine_ns_per_packet"] is None, p  # fused: one tier
        # kept up: every rule of a sustainable rate held but, at most, the bound on p99 from intended
        assert p["kept_up"] == all(r.startswith("p99 latency from intended") for r in p["reasons"]), p
        assert p["sustainable"] == (p["reasons"] == []), p
    kept = [p["rate"] for p in result["points"] if p["kept_up"]]
    assert result["summary"]["2"]["kept_up"] == (kept[-1] if kept else None)
    text = md.read_text()
    assert "| 2 | 0.5x | 12,000 |" in text and "| 2 | 1x | 24,000 |" in text and "- 2 cores (fused" in text
