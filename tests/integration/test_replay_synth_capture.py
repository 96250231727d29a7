"""omdp synth -> omdp replay -> a multicast receiver: a real synthetic capture (rotated files
named by its manifest, A and B copies) arrives whole, decodes, and its sequence numbers run
without a gap."""
from __future__ import annotations

from pathlib import Path

import pytest
from replay_support import MulticastReceiver, multicast_works

from feedhandlers.captures import read_pcap
from feedhandlers.opra_fast import decode_packet
from ops.replay.capture_set import load_manifest
from ops.replay.config import ReplayConfig
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService
from ops.synth.generator import SynthConfig, synthesize

_why = multicast_works()
pytestmark = [pytest.mark.full, pytest.mark.skipif(_why is not None, reason=_why or "")]  # synth, then a whole replay


def test_synth_capture_replays_whole(tmp_path: Path) -> None:
    res = synthesize(SynthConfig(data=tmp_path / "data", seconds=0.25, num_lines=2, seed=5, b_copy=True,
                                 underlyings=40, rotate_bytes=16_384, progress=False))
    cap = res.directory
    manifest, endpoints = load_manifest(cap)
    assert any(len(e.files) > 1 for e in endpoints.values()), "the capture must rotate"
    eps = {ln: e.groups for ln, e in endpoints.items()}
    with MulticastReceiver(eps) as rx:
        svc = ReplayService(ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="2x")))
        svc.start()
        assert svc.wait(30.0)
        rx.drain()
    st = svc.status()
    assert st.state == "finished"
    assert Path(st.run_dir).parent.parent == tmp_path / "data" / "runs", "runs/<date>/<run_id> beside captures/"
    for entry in manifest["lines"]:
        ln = entry["line"]
        want = [p for f in entry["files"]["a"] for p in read_pcap(cap / f).payloads()]
        want_b = [p for f in entry["files"]["b"] for p in read_pcap(cap / f).payloads()]
        assert len(want) == entry["packets"]
        assert rx.of(ln, "A") == want and rx.of(ln, "B") == want_b == want
        seqs = [int(r["msg_seq"]) for p in rx.of(ln, "A") for r in decode_packet(p).records if r["category"] != ord("?")]
        assert seqs[0] == entry["first_seq"] and seqs[-1] == entry["last_seq"]
        assert seqs == list(range(seqs[0], seqs[-1] + 1)), f"line {ln}: no gap"
    assert st.messages_sent == manifest["rate"]["messages"]
