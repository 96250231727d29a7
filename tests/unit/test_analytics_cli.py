"""``omdp analytics``: the commands and options exist, and a bad date is refused before any
Spark session starts."""
from __future__ import annotations

from click.testing import CliRunner

from ops.cli.main import cli


def test_analytics_commands_and_options() -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["analytics", "--help"])
    assert out.exit_code == 0
    for command in ("feeds", "latency", "nightly"):
        assert command in out.output
    nightly = runner.invoke(cli, ["analytics", "nightly", "--help"]).output
    for option in ("--date", "--data", "--master", "--regression-threshold", "--lookback-nights", "--copies"):
        assert option in nightly
    assert "local[*]" in nightly and "./omdp-data" in nightly


def test_bad_date_is_refused_before_spark_starts() -> None:
    out = CliRunner().invoke(cli, ["analytics", "latency", "--date", "2008-02-30"])
    assert out.exit_code == 2 and "Invalid value for '--date'" in out.output
