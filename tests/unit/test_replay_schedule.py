"""The merged schedule: order across lines and rotated files, offsets, scales, line split."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from replay_support import make_line, write_capture

from ops.replay.capture_set import CaptureSet
from ops.replay.native_layout import PKT_CONTROL
from ops.replay.rates import PAPER_1X_PPS, RateSpec
from ops.replay.schedule import PPS_UNIT, assign_lines, build_schedule


def _schedule(tmp_path: Path, lines: list, rotate: int | None = None, recorded: bool = True, control: dict | None = None):
    write_capture(tmp_path, lines, rotate_bytes=rotate)
    cs = CaptureSet.open(tmp_path)
    caps = cs.read()
    return cs, build_schedule(caps, cs.files, recorded_timing=recorded, control_packets=control)


def test_merge_order_over_lines_and_rotated_files(tmp_path: Path) -> None:
    data = [make_line(ln, 300, seed=3) for ln in (1, 2, 5)]
    cs, sched = _schedule(tmp_path, data, rotate=4096)
    assert all(len(cs.files[ln]) > 3 for ln in (1, 2, 5)), "the capture must rotate"
    ts = np.concatenate([d.ts_ns for d in data])
    line = np.concatenate([[d.line] * len(d.packets) for d in data])
    idx = np.concatenate([np.arange(len(d.packets)) for d in data])
    order = np.lexsort((idx, line, ts))
    assert np.array_equal(sched.pkts["line"], line[order])
    assert np.array_equal(sched.pkts["line_index"], idx[order])
    assert np.array_equal(sched.pkts["off"], ts[order] - ts.min())
    # every packet points at its own bytes in the file it came from
    for k in range(0, sched.pkts.shape[0], 37):
        p = sched.pkts[k]
        raw = Path(sched.sources[p["src"]]).read_bytes()[p["src_off"] : p["src_off"] + p["len"]]
        d = next(x for x in data if x.line == p["line"])
        assert raw == d.packets[p["line_index"]]
    assert sched.line_packets == {1: 300, 2: 300, 5: 300}


def test_rates_scale_the_recorded_lap(tmp_path: Path) -> None:
    data = [make_line(ln, 200, seed=1) for ln in (1, 2)]
    _, sched = _schedule(tmp_path, data)
    ts = np.sort(np.concatenate([d.ts_ns for d in data]))
    n = ts.size
    span = ts[-1] - ts[0]
    lap = span + span / (n - 1)
    assert sched.lap_span == round(lap)
    assert sched.recorded_pps == pytest.approx(n * 1e9 / sched.lap_span)
    for x in (0.5, 1.0, 10.0):
        scale = sched.scale_for(RateSpec.parse(rate=f"{x}x"))
        assert n / (sched.lap_span * scale / 1e9) == pytest.approx(x * PAPER_1X_PPS)
    assert sched.scale_for(RateSpec.parse(speed=4)) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="recorded timing"):
        sched.scale_for(RateSpec.parse(pps=1000))


def test_pps_schedule_is_evenly_spaced(tmp_path: Path) -> None:
    _, sched = _schedule(tmp_path, [make_line(1, 50), make_line(2, 50)], recorded=False)
    assert np.array_equal(sched.pkts["off"], np.arange(100) * PPS_UNIT)
    assert sched.scale_for(RateSpec.parse(pps=1000)) == pytest.approx(1e6 / PPS_UNIT)


def test_control_packets_lead_each_lap_and_due_counts_laps(tmp_path: Path) -> None:
    data = [make_line(1, 10), make_line(3, 10)]
    _, sched = _schedule(tmp_path, data, control={1: b"\x01\x02ctl1\x03", 3: b"\x01\x02ctl3\x03"})
    head = sched.pkts[:2]
    assert list(head["line"]) == [1, 3] and np.all(head["flags"] == PKT_CONTROL) and np.all(head["off"] == 0)
    assert np.all(head["src"] == sched.control_src)
    assert sched.control_buf[head[1]["src_off"] : head[1]["src_off"] + head[1]["len"]] == b"\x01\x02ctl3\x03"
    assert sched.n_data == 20
    assert sched.due(-1, loop=True) == 0
    assert sched.due(0, loop=True) == 1
    assert sched.due(sched.lap_span, loop=True) == 21
    assert sched.due(10 * sched.lap_span, loop=False) == 20
    assert sched.lines_subset([3])["line"].tolist() == [3] * 11


def test_assign_lines_balances_packets() -> None:
    counts = {1: 100, 2: 90, 3: 50, 4: 45, 5: 5}
    out = assign_lines(counts, 2)
    assert sorted(sum(out, [])) == [1, 2, 3, 4, 5]
    loads = [sum(counts[ln] for ln in part) for part in out]
    assert max(loads) - min(loads) <= 10
    assert assign_lines({7: 1}, 4) == [[7]]
