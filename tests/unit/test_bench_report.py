"""``omdp bench report``: the bench JSON files as one Markdown table per machine, each figure
with the command that produced it and its date; the JSON every bench command writes carries
that command, its machine and its date (``ops.cli.bench.output``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from ops.bench.targets import DECODE, ENGINE
from ops.cli.bench.output import write_bench_json
from ops.cli.main import cli

INTEL = {"cpu_model": "Intel(R) Xeon(R) Processor", "logical_cpus": 2, "memory_bytes": 24 * 2**30,
         "load_average": [0.5, 0.5, 0.5]}
AMD = {"cpu_model": "AMD EPYC", "logical_cpus": 2, "memory_bytes": 16 * 2**30, "load_average": [1.0, 1.0, 1.0]}


def _write(folder: Path, name: str, doc: dict) -> None:
    (folder / name).write_text(json.dumps(doc))


def _fixtures(folder: Path) -> None:
    _write(folder, "decode-intel.json", {"machine": INTEL, "command": "omdp bench decode D/line01.pcap",
                                         "written": "2026-11-29T07:00:00+00:00",
                                         "targets": [DECODE.verdict(36.36e6)]})
    _write(folder, "engine-amd.json", {"benchmark": "engine", "machine": AMD, "command": "omdp bench engine --runs 5",
                                       "written": "2026-11-27T23:30:00+00:00", "targets": [ENGINE.verdict(68.9)]})
    _write(folder, "transport-intel.json", {
        "machine": {"cpu": "Intel(R) Xeon(R) Processor", "cpus": 2, "memory_bytes": 24 * 2**30},
        "command": "omdp bench transport --json T", "written": "2026-11-22T10:00:00+00:00",
        "targets": [{"target": "vega-shm C one-way p50, 8..64 B", "value": 104.0, "goal": "<= 200 ns", "met": True}]})
    _write(folder, "collector-amd.json", {
        "benchmark": "collector", "machine": AMD, "command": "omdp bench collector",
        "written": "2026-11-28T01:00:00+00:00", "collector_1_in_1600": {"ns_per_record": {"median": 4.9}}})


def _tables(text: str) -> dict[str, list[list[str]]]:
    """Machine heading -> its table's rows, each a list of cells."""
    out: dict[str, list[list[str]]] = {}
    head = None
    for line in text.splitlines():
        if line.startswith("### "):
            head = line[4:]
            out[head] = []
        elif line.startswith("| ") and head and not line.startswith("| benchmark"):
            out[head].append([c.strip() for c in line.strip("|").split(" | ")])
    return out


def test_one_table_per_machine_each_figure_with_command_and_date(tmp_path: Path) -> None:
    _fixtures(tmp_path)
    res = CliRunner().invoke(cli, ["bench", "report", str(tmp_path), "--markdown", str(tmp_path / "out.md")])
    assert res.exit_code == 0, res.output
    tables = _tables(res.output)
    assert set(tables) == {"Intel(R) Xeon(R) Processor, 2 CPUs, 24.0 GiB", "AMD EPYC, 2 CPUs, 16.0 GiB"}
    intel = tables["Intel(R) Xeon(R) Processor, 2 CPUs, 24.0 GiB"]
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in intel] == [
        ("decode", "36.36 M (>= 30.00 M)", "met", "`omdp bench decode D/line01.pcap`", "2026-11-29"),
        ("transport", "104.0 (<= 200 ns)", "met", "`omdp bench transport --json T`", "2026-11-22")]
    amd = tables["AMD EPYC, 2 CPUs, 16.0 GiB"]
    assert [(r[0], r[2], r[3], r[5]) for r in amd] == [("collector", "4.9", "-", "2026-11-28"),
                                                       ("engine", "68.9 (<= 60.0)", "not met", "2026-11-27")]
    assert (tmp_path / "out.md").read_text() == res.output


def test_a_file_that_is_not_a_bench_json_is_named_and_the_rest_reported(tmp_path: Path) -> None:
    _fixtures(tmp_path)
    (tmp_path / "broken.json").write_text("{not json")
    _write(tmp_path, "plan.json", {"partitions": []})
    res = CliRunner().invoke(cli, ["bench", "report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert f"skipped {tmp_path / 'broken.json'}: not readable as JSON" in res.output
    assert f"skipped {tmp_path / 'plan.json'}: not a benchmark's JSON (no machine block)" in res.output
    assert len(_tables(res.output)) == 2


def test_missing_or_empty_input_is_one_line_and_non_zero(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["bench", "report", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and res.output.strip() == f"bench report: {tmp_path / 'nowhere'}: no such file or folder"
    res = CliRunner().invoke(cli, ["bench", "report", str(tmp_path)])
    assert res.exit_code == 1 and res.output.strip() == f"bench report: no benchmark figures in {tmp_path}"


def test_bench_json_carries_command_machine_and_date_for_the_report(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["omdp", "bench", "clock", "--runs", "3", "--json", "clock.json"])
    out = tmp_path / "results" / "clock.json"
    write_bench_json(out, {"benchmark": "clock", "targets": []})
    doc = json.loads(out.read_text())
    assert doc["command"] == "omdp bench clock --runs 3 --json clock.json"
    assert doc["machine"]["cpu_model"] and doc["machine"]["memory_bytes"] > 0
    assert doc["written"][:4].isdigit() and doc["written"].endswith("+00:00")
    # What the benchmark set itself is kept.
    write_bench_json(out, {"command": "omdp bench transport --quick", "machine": "text", "targets": []})
    assert json.loads(out.read_text())["command"] == "omdp bench transport --quick"
