"""``--rate-schedule``: parsing, the rate in force at a time, and errors that name the stage."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ops.cli.main import cli
from ops.replay.rate_schedule import parse_rate_schedule
from ops.replay.rates import RateError

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
"""The shipped topologies, wherever the tests run from."""


def test_stages_and_the_rate_in_force() -> None:
    s = parse_rate_schedule("2x:20s, 10x:20s,0.5X:5.5s")
    assert [(st.rate_x, st.seconds) for st in s.stages] == [(2.0, 20.0), (10.0, 20.0), (0.5, 5.5)]
    assert s.seconds == 45.5
    assert s.boundaries() == [20.0, 40.0]
    assert [s.rate_x_at(t) for t in (0, 19.99, 20, 39.9, 40, 99)] == [2, 2, 10, 10, 0.5, 0.5]
    assert s.describe() == "2x:20s,10x:20s,0.5x:5.5s"


@pytest.mark.parametrize("text,says", [("2x", "not RATE:SECONDS"), ("2x:20s,,", "not RATE:SECONDS"),
                                       ("0x:5s", "above 0x"), ("2x:0s", "positive"), ("fast:5s", "'fast:5s'")])
def test_bad_schedules_name_the_stage(text: str, says: str) -> None:
    with pytest.raises(RateError, match=says):
        parse_rate_schedule(text)


def test_bench_elastic_refuses_a_bad_schedule_without_a_traceback() -> None:
    r = CliRunner().invoke(cli, ["bench", "elastic", "--rate-schedule", "2x:20s,10x"])
    assert r.exit_code == 2
    assert "--rate-schedule stage '10x'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["bench", "elastic", "--period", "0"])
    assert r.exit_code == 2 and "--period must be positive" in r.output


@pytest.mark.slow
def test_bench_elastic_short_run_checks_itself_against_a_static_engine(tmp_path) -> None:
    import json

    out = tmp_path / "e.json"
    r = CliRunner().invoke(cli, ["bench", "elastic", "--rate-schedule", "1x:1s,4x:1s", "--period", "0.25",
                                 "--overhead-runs", "1", "--messages", "20000", "--stream-messages", "30000",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    step = res["rate_step"]
    assert step["lost"] == 0 and step["processed"] == step["messages_fed"] > 0
    assert step["signals_equal"] and step["books_equal"] and step["signals"] > 0
    assert len(step["periods"]) >= 6
    assert res["overhead"]["signals_equal"]


@pytest.mark.parametrize("args,says", [
    ([str(TOPOLOGIES / "seq_fused.toml"), "--rate-schedule", "2x:1s"], "has no feed handler"),
    ([str(TOPOLOGIES / "opra_fused.toml"), "--rate-schedule", "2x:1s,3x"], "stage '3x'"),
    ([str(TOPOLOGIES / "opra_fused.toml"), "--rate-schedule", "2x:1s", "--seconds", "5"], "without --seconds"),
])
def test_run_refuses_bad_rate_schedules(args: list[str], says: str, tmp_path) -> None:
    r = CliRunner().invoke(cli, ["run", *args, "--data", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("setting,says", [("operators.de.params.buckets=12", "buckets"),
                                          ("operators.de.params.level=3", "level (3) must be at most workers (2)")])
def test_elastic_topology_settings_are_checked_before_anything_runs(setting: str, says: str) -> None:
    r = CliRunner().invoke(cli, ["plan", str(TOPOLOGIES / "opra_fused_elastic.toml"), "--set", setting])
    assert r.exit_code != 0 and says in r.output and "Traceback" not in r.output, r.output
