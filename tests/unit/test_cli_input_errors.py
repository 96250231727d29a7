"""Inputs that once ended in a traceback or a silent wrong result: each now ends with one line
naming the input and the reason, a non-zero exit status, and nothing created or lost
(docs/cli.md "Errors")."""
from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from cpu_fit_support import on_cpus_here
from full_disk_support import fill_up, leftovers, small_disk  # noqa: F401  (fixture)

from ops.cli.main import cli

TOPOLOGY = Path(__file__).resolve().parents[2] / "ops" / "topologies" / "opra_fused.toml"
HERE = on_cpus_here(TOPOLOGY)
"""The topology's partitions on this process's CPUs (a one-CPU machine would refuse CPU 1 first)."""
DATE = "2008-02-04"


def invoke(argv: list[str]) -> tuple[int, str]:
    """Exit status and everything printed; an exception that escaped the command shows as a
    traceback in the text (which every test below rules out)."""
    result = CliRunner().invoke(cli, [str(a) for a in argv], catch_exceptions=True)
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        out += "Traceback\n" + "".join(traceback.format_exception(result.exception))
    return result.exit_code, out


def fails_cleanly(argv: list[str], *fragments: str, code: int | None = None) -> str:
    status, out = invoke(argv)
    assert status != 0, (argv, out)
    assert code is None or status == code, (argv, status, out)
    assert "Traceback" not in out, (argv, out)
    for fragment in fragments:
        assert fragment in out, (argv, fragment, out)
    return out


@pytest.fixture(scope="module")
def capture_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a small A-only capture (2 lines, 0.3 s)."""
    from ops.synth.generator import SynthConfig, synthesize

    data = tmp_path_factory.mktemp("h36-inputs")
    synthesize(SynthConfig(data=data, seconds=0.3, rate=0.1, seed=1, num_lines=2, underlyings=100, progress=False))
    return data


@pytest.fixture
def data(capture_data: Path, tmp_path: Path) -> Path:
    """A fresh copy of the data directory (a test may damage its capture)."""
    dst = tmp_path / "data"
    shutil.copytree(capture_data, dst)
    return dst


def forget_checksums(capture: Path) -> None:
    """Make ``capture`` one whose manifest records no checksums (written before they were, or
    edited), so that the damage a test does reaches the pcap reader, not the size check."""
    path = capture / "manifest.json"
    doc = json.loads(path.read_text())
    doc.pop("checksums", None)
    path.write_text(json.dumps(doc))


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_capture_stats_copies_b_of_a_capture_without_b(data: Path) -> None:
    cap = data / "captures" / DATE
    fails_cleanly(["capture", "stats", cap, "--copies", "B"], f"{cap}: the manifest lists no B copy", "--b-copy")
    fails_cleanly(["capture", "stats", cap / "line01.pcap", "--copies", "B"], "the A copy of line 1")


@pytest.mark.full
def test_synth_into_a_directory_that_cannot_be_made(tmp_path: Path) -> None:
    fails_cleanly(["synth", "--data", "/proc/omdp-h36/data", "--seconds", "1"],
                  "cannot write /proc/omdp-h36/data/", "No such file or directory", code=1)


def test_synth_with_a_bad_universe_file(tmp_path: Path) -> None:
    bad = tmp_path / "universe.txt"
    bad.write_text("not a listed-options file\n")
    fails_cleanly(["synth", "--data", tmp_path / "data", "--universe", bad], f"{bad}:1:", "a record has")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("command", ["run", "plan"])
def test_capture_date_with_no_such_capture(data: Path, command: str) -> None:
    fails_cleanly([command, TOPOLOGY, "--data", data, "--capture-date", "2001-01-01"],
                  f"{data}/captures/2001-01-01: no such capture directory")
    assert not (data / "runs").exists()


def test_analytics_with_a_bogus_master(tmp_path: Path) -> None:
    fails_cleanly(["analytics", "feeds", "--date", DATE, "--data", tmp_path, "--master", "bogus://x"],
                  "--master", "'bogus://x' is not a Spark master URL", code=2)


def test_run_dashboard_on_a_port_in_use_is_refused_before_the_run(data: Path, busy_port: int) -> None:
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--seconds", "1", "--address", f"127.0.0.1:{busy_port}", *HERE],
                  "--address", f"127.0.0.1:{busy_port}", "in use", code=2)
    assert not (data / "runs").exists()


def test_demo_dashboard_on_a_port_in_use_is_refused_before_the_run(tmp_path: Path, busy_port: int) -> None:
    fails_cleanly(["demo", "--data", tmp_path / "data", "--seconds", "1", "--address", f"127.0.0.1:{busy_port}"],
                  "--address", "in use", code=2)
    assert not (tmp_path / "data").exists(), "the demo made its capture before refusing"


def test_run_id_of_an_earlier_run_is_refused(data: Path) -> None:
    earlier = data / "runs" / "2026-01-02" / "night_1"
    (earlier / "logs").mkdir(parents=True)
    (earlier / "run.json").write_text("{}")
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--run-id", "night_1", *HERE],
                  "--run-id", f"already used by the run in {earlier}", code=2)
    assert (earlier / "run.json").read_text() == "{}"
    assert sorted(p.name for p in (data / "runs").iterdir()) == ["2026-01-02"]


@pytest.mark.parametrize("run_id", ["a-b", "x" * 64, ".hidden"])
def test_run_id_that_cannot_name_shared_memory(data: Path, run_id: str) -> None:
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--run-id", run_id, *HERE], "--run-id", "1 to 63 characters", code=2)
    assert not (data / "runs").exists()


def test_bad_manifest_names_the_field(data: Path) -> None:
    path = data / "captures" / DATE / "manifest.json"
    doc = json.loads(path.read_text())
    doc["lines"][0]["a"]["port"] = 0
    path.write_text(json.dumps(doc))
    out = fails_cleanly(["capture", "stats", path.parent], f"{path}: lines[0].a.port:", "(got 0)", code=1)
    assert "pydantic" not in out and "type=" not in out
    fails_cleanly(["replay", path.parent, "--rate", "1x", "--no-http"], "port of copy A of line 1: 0 is not 1..65535")


@pytest.mark.parametrize("command", ["run", "plan"])
def test_empty_line_pcap(data: Path, command: str) -> None:
    pcap = data / "captures" / DATE / "line02.pcap"
    forget_checksums(pcap.parent)
    pcap.write_bytes(b"")
    fails_cleanly([command, TOPOLOGY, "--data", data, "--capture-date", DATE], f"{pcap}: empty file (0 bytes)")
    assert not (data / "runs").exists()


def test_runs_show_a_corrupt_parquet(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.parquet").write_bytes(b"PAR1 cut short")
    fails_cleanly(["runs", "show", run], f"{run / 'meta.parquet'}: not a readable Parquet file", code=1)


def test_topology_that_is_not_utf8(tmp_path: Path) -> None:
    topo = tmp_path / "latin1.toml"
    topo.write_bytes(TOPOLOGY.read_bytes().replace(b'name = "opra-fused"', b'name = "opra-f\xfcsed"'))
    for command in (["plan", topo], ["run", topo, "--data", tmp_path / "data"]):
        fails_cleanly(command, f"{topo}: invalid topology", "not UTF-8 text", "byte 0xfc")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(("old", "new", "field"), [
    ('name = "opra-fused"', 'name = "' + "t" * 64 + '"', "name: String should have at most 63 characters"),
    ("[operators.lc]", "[operators." + "c" * 41 + "]", "an operator's name (the run's stats segment holds it) has at most 40"),
    ("[partitions.app]", "[partitions." + "p" * 64 + "]", "a partition's or host's name (it names the partition's files) has at most 63"),
])
def test_names_too_long_for_the_stats_segment(tmp_path: Path, old: str, new: str, field: str) -> None:
    topo = tmp_path / "long.toml"
    topo.write_text(TOPOLOGY.read_text().replace(old, new))
    fails_cleanly(["plan", topo], field)


def test_replay_http_port_out_of_range(data: Path) -> None:
    fails_cleanly(["replay", data / "captures" / DATE, "--rate", "1x", "--http-port", "70000"],
                  "--http-port", "70000", code=2)


@pytest.mark.parametrize("where", ["missing-dir/run.json", "."])
def test_run_json_to_an_unwritable_path_is_refused_before_the_run(data: Path, tmp_path: Path, where: str) -> None:
    out = tmp_path / where
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--seconds", "1", "--json", out, *HERE], "--json", str(out), code=2)
    assert not (data / "runs").exists()


# ---- failures that once exited 0 --------------------------------------------------------------


def test_capture_stats_with_malformed_packets_exits_1(tmp_path: Path) -> None:
    from feedhandlers.captures import write_pcap
    from feedhandlers.opra_fast import encode_records, new_records
    from ops.synth.records import FIELDS_K

    r = new_records(1)
    r["category"], r["msg_type"], r["participant"], r["retrans"], r["msg_seq"] = ord("k"), 32, ord("C"), 32, 1
    r["root"], r["root_len"], r["fields"] = b"ABC  ", 5, FIELDS_K
    ok = encode_records(r, b"")
    pcap = tmp_path / "line01.pcap"
    write_pcap(pcap, [ok, b"\x00\x01 not opra", ok], [1, 2, 3], dst_ip="233.43.202.1", dst_port=11001)
    out = fails_cleanly(["capture", "stats", pcap], f"{pcap}: 1 malformed packet(s)", code=1)
    assert "malformed packets: 1" in out  # the statistics are printed first


def test_pricing_cpus_not_on_this_machine_are_refused_before_the_run(data: Path) -> None:
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--seconds", "1",
                   "--set", "operators.de.params.pricing_cpus=[4096]", *HERE],
                  "operators.de.params.pricing_cpus: CPU 4096 is not available here", code=2)
    assert not (data / "runs").exists()


def test_bench_sweep_with_failed_runs_exits_1(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    fails_cleanly(["bench", "sweep", TOPOLOGY, "--rates", "1x,2x", "--seconds", "1", "--data", data, "--knobs", "tuned",
                   "--set", "operators.de.params.pricing_cpus=[4096]", "--json", out],
                  "bench sweep: 2 of 2 runs failed; the first, opra-fused ring at 1x:", "CPU 4096", code=1)
    assert [p["error"] is not None for p in json.loads(out.read_text())["points"]] == [True, True]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="bench scaling's smallest layout needs 2 CPUs")
def test_bench_scaling_with_failed_runs_exits_1(data: Path, tmp_path: Path) -> None:
    fails_cleanly(["bench", "scaling", "--cores", "2", "--rates", "1x", "--seconds", "1", "--data", data,
                   "--topologies-out", tmp_path / "layouts", "--set", "operators.de.params.pricing_cpus=[4096]"],
                  "bench scaling: 1 of 1 runs failed; the first, 2 cores at 1x:", code=1)


@pytest.mark.parametrize("job", ["feeds", "latency", "nightly", "replay"])
def test_analytics_of_a_date_with_no_data_fails_before_spark(data: Path, job: str) -> None:
    """A night with nothing to read once wrote an empty report and exited 0."""
    fails_cleanly(["analytics", job, "--date", "2001-01-01", "--data", data],
                  "--date 2001-01-01: no ", "2001-01-01", "nothing to analyse", code=1)
    assert not (data / "reports").exists()


def test_replay_and_run_refuse_a_capture_with_frames_cut_by_the_snaplen(data: Path) -> None:
    import struct

    pcap = data / "captures" / DATE / "line01.pcap"
    forget_checksums(pcap.parent)
    buf = pcap.read_bytes()
    frame = buf[40:40 + struct.unpack_from("<I", buf, 32)[0]]
    pcap.write_bytes(buf + struct.pack("<IIII", 1_202_135_400, 0, len(frame) - 10, len(frame)) + frame[:-10])
    why = f"corrupt pcap: {pcap}: 1 frame(s) cut short or with a bad IPv4/UDP header (the first at offset {len(buf)})"
    # into a ring of its own: multicast groups may be in use by another run on this host
    fails_cleanly(["replay", pcap.parent, "--rate", "1x", "--no-http", "--target", f"ring:h36-cut-{os.getpid()}"], why)
    fails_cleanly(["run", TOPOLOGY, "--data", data, "--seconds", "1", *HERE], why)
    assert not (data / "runs").exists()


def test_a_commands_json_report_on_a_full_disk_keeps_the_old_report(capture_data: Path, small_disk: Path) -> None:  # noqa: F811
    """``--json OUT`` goes through the atomic writer too: a report that cannot be written is
    one line naming it, and the report of the previous run stays whole."""
    report = small_disk / "data" / "stats.json"
    report.write_text('{"old": true}')
    fill_up(small_disk)
    capture = capture_data / "captures" / DATE
    res = CliRunner().invoke(cli, ["capture", "stats", str(capture / "line01.pcap"), "--json", str(report)])
    assert res.exit_code == 1 and f"cannot write {report}: No space left on device" in res.output
    assert "Traceback" not in res.output and isinstance(res.exception, (SystemExit, type(None)))
    assert report.read_text() == '{"old": true}' and leftovers(small_disk) == []
