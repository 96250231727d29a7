"""The paper's layout scaled to a core count (``omdp bench scaling``): the roles, the files
plan on CPUs 0..N-1, the ingest collector alone in its partition; a sleeping collector
sharing a partition is refused; several senders' shares of the rate; what counts as kept up."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedhandlers.feed_handler import FeedLine
from omdp.plan import build_plan
from omdp.topology.load import TopologyError, load_topology
from ops.bench.scaling import kept_up
from ops.cli.main import cli
from ops.pipeline.assemble import sender_shares
from ops.pipeline.capture_info import CaptureInfo
from ops.pipeline.registry import build_registry
from ops.pipeline.scaled_layout import scaled_layout, scaled_topology_toml
from ops.pipeline.sweep_points import SweepPoint


@pytest.mark.parametrize(("cores", "per_sender", "roles"), [
    (4, 4, (1, 1, 1)), (8, 4, (2, 4, 1)), (16, 4, (4, 8, 3)), (16, 16, (1, 10, 4)), (32, 16, (2, 21, 8))])
def test_roles_keep_the_papers_handler_engine_ratio(cores: int, per_sender: int, roles: tuple[int, int, int]) -> None:
    layout = scaled_layout(cores, per_sender)
    assert (layout.senders, layout.handlers, layout.engines) == roles and not layout.fused
    assert layout.senders + layout.handlers + layout.engines + 1 == cores


def test_two_cores_is_the_fused_layout_and_fewer_is_refused() -> None:
    assert scaled_layout(2).fused and scaled_layout(3).fused
    with pytest.raises(ValueError, match="at least 2 cores"):
        scaled_layout(1)
    with pytest.raises(ValueError, match="cores per sender"):
        scaled_layout(8, 0)


@pytest.mark.parametrize("cores", [2, 4, 8, 16])
def test_written_layouts_plan_on_their_cores(cores: int, tmp_path: Path) -> None:
    path = tmp_path / f"p{cores}.toml"
    path.write_text(scaled_topology_toml(cores))
    topo = load_topology(path)
    plan = build_plan(topo, build_registry(), str(path))
    assert {cpu for part in plan.partitions for cpu in part.cpus} == set(range(cores))
    ingest = [p for p in plan.partitions if "ingest" in p.operators]
    assert len(ingest) == 1 and ingest[0].operators == ["ingest"]
    layout = scaled_layout(cores)
    assert topo.operators["fh"].replicas == layout.handlers and topo.operators["de"].replicas == layout.engines
    assert topo.operators["fh"].params["input"] == "multicast"
    assert topo.operators["fs"].params["realtime"] is True  # the stand-in exchange sends on time


def test_a_partition_sharing_the_ingest_collector_is_refused(tmp_path: Path) -> None:
    text = scaled_topology_toml(4).replace('operators = ["lc", "sig"]', 'operators = ["lc", "sig", "ingest"]')
    text = text.replace('[partitions.ingest]\noperators = ["ingest"]\ncpus = [3]\nwait = "spin-block"\n', "")
    path = tmp_path / "t.toml"
    path.write_text(text)
    with pytest.raises(TopologyError, match=r"partitions\.collect\.operators.*sleeps up to 50 ms.*lc, sig"):
        build_plan(load_topology(path), build_registry(), str(path))


def _capture(line_packets: dict[int, int]) -> CaptureInfo:
    lines = [1, 2, 3, 4]
    return CaptureInfo(directory=Path("."), date=dt.date(2008, 2, 4), lines=lines, files={}, endpoints={},
                       root_underlying={}, underlying_symbols={}, recorded_pps=0.0, messages_per_packet=0.0,
                       line_packets=line_packets)


def test_sender_shares_follow_the_packets_of_their_lines() -> None:
    lines = [FeedLine(line=n, sender=0 if n <= 2 else 1) for n in (1, 2, 3, 4)]
    shares = sender_shares(_capture({1: 100, 2: 100, 3: 300, 4: 500}), lines, 2)
    assert shares == pytest.approx([0.2, 0.8])
    # a line the manifest does not count weighs the mean of the others
    assert sender_shares(_capture({1: 100, 2: 100, 3: 100}), lines, 2) == pytest.approx([0.5, 0.5])
    assert sender_shares(_capture({}), lines, 2) == pytest.approx([0.5, 0.5])
    assert sender_shares(_capture({1: 1}), lines, 1) == []


def _point(reasons: list[str] | None) -> SweepPoint:
    p = SweepPoint("4 cores", "10x", 240_000.0)
    if reasons is not None:
        p.run = {"reasons": reasons}
    return p


def test_kept_up_ignores_only_the_p99_bound() -> None:
    assert kept_up(_point([]))
    assert kept_up(_point(["p99 latency from intended 4,000.0 us is above the bound 1,000.0 us"]))
    assert not kept_up(_point(["replayer kept 97.5000% of its schedule (needs >= 99.99%)"]))
    assert not kept_up(_point(None))


def test_scaling_command_refuses_more_cores_than_the_machine_has(tmp_path: Path) -> None:
    (tmp_path / "captures" / "2008-02-04").mkdir(parents=True)
    (tmp_path / "captures" / "2008-02-04" / "manifest.json").write_text("{}")
    r = CliRunner().invoke(cli, ["bench", "scaling", "--cores", "4096", "--data", str(tmp_path)])
    assert r.exit_code == 2 and "--cores 4096" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["bench", "scaling", "--cores", "1,2"])
    assert r.exit_code == 2 and "2 or more" in r.output
