"""Target ring:NAME: the replay puts every packet, framed, into a Vega ring its consumer made."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from replay_support import make_line, replay_into_ring, write_capture

from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver
from ops.replay.config import ReplayConfig
from ops.replay.rates import RateSpec
from ops.replay.service import ReplaySenderError, ReplayService


def test_every_packet_reaches_the_ring_framed(tmp_path: Path) -> None:
    data = [make_line(ln, 500, seed=8) for ln in (2, 9)]
    write_capture(tmp_path / "cap", data)
    st, drain = replay_into_ring(tmp_path / "cap", tmp_path / "run", rate=RateSpec.parse(pps=100_000), copies="A,B")
    assert drain.error is None
    assert st.state == "finished" and st.packets_sent == 1000, st.error
    heads = np.array([h for h, _ in drain.frames])
    assert len(drain.frames) == 2000
    for d in data:
        for copy in (0, 1):
            got = [p for h, p in drain.frames if h["line"] == d.line and h["copy"] == copy]
            assert got == d.packets, f"line {d.line} copy {'AB'[copy]}"
    assert np.all(heads["sent_ns"] >= heads["intended_ns"])
    assert np.all(heads["flags"] == 0)
    t = pq.read_table(tmp_path / "run" / "intended.parquet")
    a = {(int(r["line"]), int(r["block_seq"])): int(r["intended_ns"]) for r in t.to_pylist() if r["copy"] == "A"}
    for h, p in drain.frames:
        assert a[(int(h["line"]), int(p[2:12]))] == int(h["intended_ns"])


def test_ring_too_small_for_a_packet_is_refused(tmp_path: Path) -> None:
    write_capture(tmp_path / "cap", [make_line(1, 20)])
    name = shm_name(new_run_id(), "small")
    rx = VegaReceiver.create(ChannelSpec(queue_size=16, max_message=64), name)
    try:
        svc = ReplayService(ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(rate="1x"),
                                         target=f"ring:{name}", run_dir=tmp_path / "run"))
        with pytest.raises(ReplaySenderError, match="max_message 64 cannot hold"):
            svc.start()
        assert rx.get(timeout=0) is None, "nothing was put"
    finally:
        rx.close()


def test_a_consumer_that_falls_behind_is_reported(tmp_path: Path) -> None:
    """A 16-slot ring whose consumer holds every slot before it releases any: the sender waits
    for room (back-pressure), counts the waits and their time, warns, and still delivers everything."""
    data = [make_line(4, 3000, seed=3)]
    write_capture(tmp_path / "cap", data)
    st, drain = replay_into_ring(tmp_path / "cap", tmp_path / "run", queue_size=16, timeout=60.0,
                                 hold_until_full=True, rate=RateSpec.parse(pps=1_000_000))
    assert st.state == "finished" and len(drain.frames) == 3000, st.error
    assert [p for _, p in drain.frames] == data[0].packets
    s = st.senders[0]
    assert s.ring_full_waits > 0 and s.ring_full_wait_s > 0
    assert [w for w in st.warnings if "for room in ring:" in w and "consumer fell behind" in w], st.warnings
