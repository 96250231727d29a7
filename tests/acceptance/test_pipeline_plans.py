"""Plans of the pipeline topologies with a capture: the lines of each handler, the routing
table in plan.json and in ``omdp plan``'s text, and the paper's layouts (they plan here;
they run on machines of their size)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_support import CAPTURE_DATE, make_capture

from omdp.topology.load import TopologyError
from ops.cli.main import cli
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline
from ops.topologies import topology_path


def test_plan_shows_lines_and_routing(data_dir: Path) -> None:
    args = ["plan", str(topology_path("opra_fused")), "--data", str(data_dir), "--capture-date", CAPTURE_DATE]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "fh <- lines 1-4 (sent by fs)" in res.output
    assert "routing (by underlying across all exchanges" in res.output and "de[1] (port de1)" in res.output
    plan = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    fh = plan["operators"]["fh"]["params"]
    assert fh["routing"]["engines"] == 2 and len(fh["routing"]["roots"]) > 100
    assert [ln["line"] for ln in fh["lines"]] == [1, 2, 3, 4]
    assert plan["operators"]["fs"]["params"]["target"] == "ring" and plan["run"]["stop_after"] == ["replay"]


@pytest.fixture(scope="module")
def opra_24_lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("lines24")
    make_capture(data, seconds=0.1, lines=24)
    return data


@pytest.mark.parametrize("name, partitions, engines, channels, handlers, senders", [
    ("paper_shm", 32, 8, 168, 20, 2), ("paper_ib", 78, 28, 700, 24, 24)])
def test_paper_layouts_plan(opra_24_lines: Path, name: str, partitions: int, engines: int, channels: int,
                            handlers: int, senders: int) -> None:
    pp = plan_pipeline(topology_path(name), opra_24_lines, CAPTURE_DATE, RunOptions())
    assert len(pp.plan.partitions) == partitions and len(pp.plan.channels) == channels
    assert pp.assembly.routing.engines == engines
    assert {ln.handler for ln in pp.assembly.lines} == set(range(handlers))
    assert {ln.sender for ln in pp.assembly.lines} == set(range(senders))
    assert pp.plan.operators["fs[0]"].params["target"] == "multicast"


def test_a_ring_pipeline_pairs_senders_with_handlers(data_dir: Path) -> None:
    with pytest.raises(TopologyError, match="pair up"):
        plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE, RunOptions(),
                      ("operators.fs.replicas=2", "partitions.replay.replicas=2", "partitions.replay.cpus=[0, 1]"))


def test_an_engine_port_wired_elsewhere_is_refused(data_dir: Path) -> None:
    with pytest.raises(TopologyError, match=r"fh.de0 feeds \['de\[1\].quotes'\], expected \['de\[0\].quotes'\]"):
        plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE, RunOptions(),
                      ('edges.0.to="de[1].quotes"', 'edges.1.to="de[0].quotes"'))
