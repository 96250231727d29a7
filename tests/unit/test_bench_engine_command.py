"""``omdp bench engine`` runs end to end on a small market and writes its JSON; the engine's
counters account for every message it was given (the ns figures are benchmark output, not
test assertions)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from ops.cli.main import cli


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
    assert c["processed"] == c["quotes"] == m["warm_messages"] + runs * m["timed_messages"]
    assert c["bad_series"] == c["unrouted"] == c["table_full"] == 0
    assert all(e["ns_per_message_median"] > 0 for e in d["engine"].values())


def test_bench_engine_names_a_bad_clock() -> None:
    res = CliRunner().invoke(cli, ["bench", "engine", "--clock", "sundial"])
    assert res.exit_code == 2 and "--clock" in res.output and "Traceback" not in res.output
