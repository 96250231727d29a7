"""``omdp bench engine`` runs end to end on a small market, and on a small capture, and writes
its JSON; the engine's counters account for every message it was given (the ns figures are
benchmark output, not test assertions)."""
from __future__ import annotations

import pytest
import datetime as dt
import json

from click.testing import CliRunner

from ops.cli.main import cli
from ops.synth.generator import SynthConfig, synthesize


def test_bench_engine_writes_json_and_accounts_for_every_message(tmp_path) -> None:
    out = tmp_path / "engine.json"
    res = CliRunner().invoke(cli, ["bench", "engine", "--underlyings", "10", "--messages", "20000", "--runs", "2",
                                   "--clock", "realtime", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert d["benchmark"] == "engine" and d["machine"]["cpu_model"] and d["stamp_clock"] == "realtime"
    m, c = d["market"], d["counters"]
    assert c["series"] == m["series"] > 0
    runs = sum(e["runs"] for e in d["engine"].values())
    inc = d["pricing_refresh_incremental"]  # its re-quotes go through the engine before the timed runs
    assert inc["messages"] == inc["refreshes"] * inc["messages_between"] > 0
    assert c["processed"] == c["quotes"] == m["warm_messages"] + inc["messages"] + runs * m["timed_messages"]
    assert c["bad_series"] == c["unrouted"] == c["table_full"] == 0
    assert all(e["ns_per_message_median"] > 0 for e in d["engine"].values())
    assert inc["s_median"] > 0 and inc["cpu_s_median"] > 0 and 0 < inc["repriced_share_median"] < 1


def test_bench_engine_max_series_sizes_the_engine_and_names_what_it_refused(tmp_path) -> None:
    """--max-series is the timed engine's slot count: fewer slots than the market's series
    refuse the rest (table_full), and the command says so."""
    out = tmp_path / "engine.json"
    res = CliRunner().invoke(cli, ["bench", "engine", "--underlyings", "10", "--messages", "5000", "--runs", "1",
                                   "--max-series", "64", "--clock", "realtime", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    m, c = d["market"], d["counters"]
    assert m["max_series"] == 64 == c["series"] and c["table_full"] > 0 and m["state_bytes"] > 0
    assert "quotes refused for lack of a series slot" in res.output and "64 slots" in res.output


def test_bench_engine_names_a_bad_clock() -> None:
    res = CliRunner().invoke(cli, ["bench", "engine", "--clock", "sundial"])
    assert res.exit_code == 2 and "--clock" in res.output and "Traceback" not in res.output


@pytest.mark.full
def test_bench_engine_over_a_capture_checks_the_feeds_bbo(tmp_path) -> None:
    """--capture times the capture's own messages (engine 0's share), whose BBO indicators
    the engine checks on every quote, unlike the model market's empty ones."""
    date = dt.date(2008, 2, 4)
    synthesize(SynthConfig(data=tmp_path, date=date, seconds=0.5, rate=1.0, seed=3, num_lines=2, progress=False))
    out = tmp_path / "engine.json"
    res = CliRunner().invoke(cli, ["bench", "engine", "--capture", str(tmp_path / "captures" / date.isoformat()),
                                   "--messages", "5000", "--runs", "1", "--clock", "realtime", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    m, c = d["market"], d["counters"]
    assert 0 < m["engine_messages"] < m["capture_messages"] and m["engines"] == 2
    assert m["warm_messages"] == m["engine_messages"] and m["timed_messages"] == min(5000, m["engine_messages"])
    runs = sum(e["runs"] for e in d["engine"].values())
    assert c["processed"] == m["warm_messages"] + d["pricing_refresh_incremental"]["messages"] + runs * m["timed_messages"]
    assert c["bbo_checked"] == c["quotes"] > 0 and c["unrouted"] == 0


def test_bench_engine_refuses_a_capture_without_manifest(tmp_path) -> None:
    res = CliRunner().invoke(cli, ["bench", "engine", "--capture", str(tmp_path)])
    assert res.exit_code == 2 and "manifest.json" in res.output and "Traceback" not in res.output


@pytest.mark.full
def test_bench_engine_refuses_more_engines_than_routing_allows(tmp_path) -> None:
    """An engine count a run's routing would refuse is a usage error, not a traceback."""
    date = dt.date(2008, 2, 4)
    synthesize(SynthConfig(data=tmp_path, date=date, seconds=0.2, rate=1.0, seed=3, num_lines=1, progress=False))
    res = CliRunner().invoke(cli, ["bench", "engine", "--capture", str(tmp_path / "captures" / date.isoformat()),
                                   "--engines", "65", "--runs", "1"])
    assert res.exit_code == 2 and "engines must be 1..64" in res.output and "Traceback" not in res.output
