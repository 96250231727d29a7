"""--loop: every lap starts with a sequence-reset control packet ('H' type 'K') per line, so
a receiver that follows sequence numbers sees no gap when the capture restarts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from replay_support import LineData, MulticastReceiver, multicast_works, write_capture

from feedhandlers.opra_fast import build_packet, decode_packet, encode_packet, new_records
from ops.replay.config import ReplayConfig
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService

_why = multicast_works()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


def admin_line(line: int, n: int, first_seq: int, t0: int) -> LineData:
    """``n`` real OPRA packets of 1..3 administrative 'C' messages with consecutive
    sequence numbers from ``first_seq``."""
    rng = np.random.default_rng(line)
    packets, ts, seqs, counts = [], [], [], []
    seq = first_seq
    for k in range(n):
        m = int(rng.integers(1, 4))
        rec = new_records(m)
        rec["category"] = ord("C")
        rec["msg_type"] = ord(" ")
        rec["participant"] = ord("O")
        rec["retrans"] = ord(" ")
        rec["msg_seq"] = np.arange(seq, seq + m)
        rec["time"] = 93000000 + k
        rec["fields"] = (1 << 6) - 1 | (1 << 48)
        texts = {i: f"LINE {line} NOTE {k}.{i}".encode() for i in range(m)}
        packets.append(encode_packet(build_packet(rec, texts=texts)))
        ts.append(t0 + k * 100_000)
        seqs.append(seq)
        counts.append(m)
        seq += m
    return LineData(line, packets, ts, seqs, counts)


def test_laps_start_with_sequence_resets(tmp_path: Path) -> None:
    data = [admin_line(1, 40, 1, 1_202_135_400_000_000_000), admin_line(2, 40, 5001, 1_202_135_400_000_050_000)]
    eps = write_capture(tmp_path / "cap", data)
    cfg = ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=4000), copies="A", loop=True,
                       seconds=0.07, run_dir=tmp_path / "run")
    with MulticastReceiver(eps, copies=("A",)) as rx:
        svc = ReplayService(cfg)
        svc.start()
        assert svc.wait(10.0)
        rx.drain()
    st = svc.status()
    assert st.state == "finished" and st.laps >= 3 and st.packets_total is None
    for d in data:
        got = rx.of(d.line, "A")
        resets = [i for i, p in enumerate(got) if decode_packet(p).records[0]["category"] == ord("H")]
        assert resets[:3] == [0, 41, 82], "a reset leads every lap"
        for i in resets:
            r = decode_packet(got[i]).records[0]
            assert chr(r["msg_type"]) == "K" and chr(r["participant"]) == "O"
            assert int(r["msg_seq"]) == d.block_seqs[0] - 1
        for lap_start in resets[:2]:
            assert got[lap_start + 1 : lap_start + 41] == d.packets, "each lap replays the capture as recorded"
        expected = None
        for p in got:
            msgs = decode_packet(p).records
            if msgs[0]["category"] == ord("H") and msgs[0]["msg_type"] == ord("K"):
                expected = int(msgs[0]["msg_seq"]) + 1
                continue
            assert int(msgs[0]["msg_seq"]) == expected, "no gap and no repeat across laps"
            expected += len(msgs)
        line_st = next(ln for ln in st.lines if ln.line == d.line)
        assert line_st.control_packets == len(resets)

    # The schedule is absolute across laps: data packet j (counting every lap) is due at
    # start + j / 4000 s exactly, however late any send was.
    t = pq.read_table(tmp_path / "run" / "intended.parquet").to_pydict()
    resets_seq = {(d.line, d.block_seqs[0] - 1) for d in data}
    data_rows = sorted(i for ln, s, i in zip(t["line"], t["block_seq"], t["intended_ns"]) if (ln, s) not in resets_seq)
    expect = st.started_ns + np.arange(len(data_rows)) * 250_000
    assert len(data_rows) > 200 and np.array_equal(np.array(data_rows), expect)
    ctrl = sorted(i for ln, s, i in zip(t["line"], t["block_seq"], t["intended_ns"]) if (ln, s) in resets_seq)
    assert ctrl[:6] == [st.started_ns + lap * 20_000_000 for lap in range(3) for _ in range(2)]


@pytest.mark.slow
def test_no_drift_over_many_laps(tmp_path: Path) -> None:
    """20 s at 10x over a 0.5 s lap (about 40 laps, up to 4.8 M packets): every intended time
    is still start + (lap * span + offset) * scale, to the nanosecond, however the sends went."""
    from replay_support import make_line

    data = [make_line(ln, 300, seed=1, mean_gap_ns=20_000) for ln in (1, 2)]
    write_capture(tmp_path / "cap", data)
    cfg = ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(rate="10x"), copies="A", loop=True,
                       seconds=20, run_dir=tmp_path / "run")
    svc = ReplayService(cfg)
    svc.start()
    assert svc.wait(60.0)
    st = svc.status()
    t = pq.read_table(tmp_path / "run" / "intended.parquet", columns=["line", "block_seq", "intended_ns"])
    ts = np.sort(np.concatenate([d.ts_ns for d in data]))
    n = ts.size
    span = round((ts[-1] - ts[0]) * n / (n - 1))
    scale = (n * 1e9 / 240_000) / span
    off = {(d.line, s): t_ - ts[0] for d in data for s, t_ in zip(d.block_seqs, d.ts_ns)}
    lines = t["line"].to_numpy()
    seqs = t["block_seq"].to_numpy()
    got = t["intended_ns"].to_numpy()
    is_data = np.array([(int(a), int(b)) in off for a, b in zip(lines, seqs)])
    offs = np.array([off[(int(a), int(b))] for a, b in zip(lines[is_data], seqs[is_data])])
    lap = np.floor((got[is_data] - st.started_ns) / (span * scale) + 1e-9).astype(np.int64)
    expect = st.started_ns + np.round((lap * span + offs) * scale).astype(np.int64)
    assert st.laps >= 30 and is_data.sum() > 1_000_000
    assert np.abs(got[is_data] - expect).max() <= 1
