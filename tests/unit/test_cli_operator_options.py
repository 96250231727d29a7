"""The options an operator expects on every command (docs/cli.md "Option spellings"): the
data directory from ``OMDP_DATA``, ``--quiet`` where a command shows progress, Spark's
log level and settings on the analytics commands, each refused clearly when wrong."""
from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ops.cli.main import cli
from ops.cli.options import DATA_ENVVAR

TOPOLOGY = str(Path(__file__).resolve().parents[2] / "ops" / "topologies" / "opra_fused.toml")


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    out = {}
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out.update(commands(cmd, (*path, name)))
        else:
            out[(*path, name)] = cmd
    return out


def option(cmd: click.Command, flag: str) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and flag in p.opts), None)


def test_every_data_option_reads_omdp_data() -> None:
    with_data = {path: option(cmd, "--data") for path, cmd in commands().items() if option(cmd, "--data")}
    assert {("run",), ("demo",), ("synth",), ("plan",), ("capacity",), ("replay",), ("analytics", "nightly")} <= set(with_data)
    for path, opt in with_data.items():
        assert opt.envvar == DATA_ENVVAR, path
    assert "env var: OMDP_DATA" in CliRunner().invoke(cli, ["run", "--help"]).output


def test_omdp_data_is_the_directory_used(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["capacity", TOPOLOGY, "--for-rate", "2x"], env={DATA_ENVVAR: str(tmp_path / "d")})
    assert res.exit_code == 2 and f"no capture under {tmp_path / 'd' / 'captures'}" in res.output
    given = CliRunner().invoke(cli, ["capacity", TOPOLOGY, "--for-rate", "2x", "--data", str(tmp_path / "e")],
                               env={DATA_ENVVAR: str(tmp_path / "d")})
    assert f"no capture under {tmp_path / 'e' / 'captures'}" in given.output  # the option wins over the variable


def test_quiet_where_a_command_shows_progress() -> None:
    for path in (("run",), ("demo",), ("synth",), ("replay",), ("analytics", "feeds"), ("analytics", "latency"),
                 ("analytics", "nightly"), ("analytics", "replay")):
        assert option(commands()[path], "--quiet") is not None, path


def test_spark_settings_are_checked_before_spark_starts() -> None:
    runner = CliRunner()
    bad_conf = runner.invoke(cli, ["analytics", "latency", "--date", "2008-02-04", "--conf", "spark.driver.memory"])
    assert bad_conf.exit_code == 2 and "'spark.driver.memory': give KEY=VALUE" in bad_conf.output
    assert "Traceback" not in bad_conf.output
    bad_level = runner.invoke(cli, ["analytics", "nightly", "--date", "2008-02-04", "--spark-log-level", "loud"])
    assert bad_level.exit_code == 2 and "--spark-log-level" in bad_level.output
    helptext = runner.invoke(cli, ["analytics", "replay", "--help"]).output
    assert "--conf KEY=VALUE" in helptext and "default: ERROR" in helptext


def test_one_spelling_of_where_a_server_listens(tmp_path: Path) -> None:
    runner = CliRunner()
    for path in (("run",), ("demo",), ("replay",), ("dashboard",)):
        cmd = commands()[path]
        assert option(cmd, "--address") is not None, path
        shown = runner.invoke(cli, [*path, "--help"]).output
        assert "--address" in shown and "--dashboard" not in shown and "--http-port" not in shown, path
    both = runner.invoke(cli, ["run", TOPOLOGY, "--data", str(tmp_path), "--address", ":0", "--dashboard", ":0"])
    assert both.exit_code == 2 and "--dashboard is the old spelling of --address: give only --address" in both.output
    capture = tmp_path / "captures" / "2008-02-04"
    capture.mkdir(parents=True)
    old = runner.invoke(cli, ["replay", str(capture), "--http-port", "70000"])
    new = runner.invoke(cli, ["replay", str(capture), "--address", "127.0.0.1:70000"])
    for res in (old, new):
        assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--address" in new.output and "port 70000 is not 0..65535" in new.output


def test_the_old_spelling_alone_is_the_address() -> None:
    from ops.cli.options import one_address

    assert one_address(None, "127.0.0.1:8123", "--dashboard") == "127.0.0.1:8123"
    assert one_address("0.0.0.0:9", None, "--dashboard") == "0.0.0.0:9" and one_address(None, None, "--http-port") is None
    with pytest.raises(click.UsageError, match="--http-port is the old spelling of --address"):
        one_address(":1", "2", "--http-port")
