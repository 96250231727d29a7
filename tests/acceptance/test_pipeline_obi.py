"""The OPRA pipeline end to end on an OBI v6 capture (today's market): one lap replayed into
the feed handler's ring, and over loopback multicast, A and B copies each losing packets at
random (``--drop``), every message accounted for.

Per line, the MSNs up to the capture's last are either received once or missed; missed are
exactly the capture's own losses (blocks missing from its A file, blocks with a bad
checksum: the replayer sends the A file on both copies) and the blocks the replayer dropped
on both copies; the other copies are counted duplicate. The records carry the same stamps
and reach the same collectors as FAST V2's.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pipeline_support import leftovers, make_obi_capture
from replay_support import multicast_works

from feedhandlers.captures import read_capture
from feedhandlers.opra_obi import decode_blocks
from omdp.metrics.run_files import read_run_file
from omdp.native import lib
from omdp.record import HOPS
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.synth.manifest import load_manifest
from ops.topologies import topology_path

pytestmark = pytest.mark.slow

P = 0.03
SEED = 7
SAMPLE_EVERY = 64


@pytest.fixture(scope="module")
def obi_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("obi-pipeline")
    make_obi_capture(data, seconds=0.4, lines=6, faults_per_second=6.0)
    return data


def _expected_missed(capture: Path) -> dict[int, int]:
    """Per line: MSNs below the A file's end that no copy delivers - absent from the file,
    in a bad-checksum block, or in a block the replayer dropped on both copies (lap 0)."""
    threshold = int(P * 2.0**64)
    out = {}
    for ln in load_manifest(capture).lines:
        cap = read_capture(capture / f"line{ln.line:02d}.pcap")
        buf, offsets, lengths = cap.contiguous()
        good = decode_blocks(buf, offsets, lengths).blocks["count"] > 0
        seqs = [int.from_bytes(p[6:10], "big") for p in cap.payloads()]
        counts = [p[10] for p in cap.payloads()]
        end = max(s + n for s, n in zip(seqs, counts))
        kept = sum(n for i, (n, g) in enumerate(zip(counts, good))
                   if g and not all(lib.omdp_replay_drop_hash(SEED, ln.line, c, 0, i) < threshold for c in (0, 1)))
        out[ln.line] = end - kept
    return out


@pytest.mark.parametrize("input_", ["ring", "multicast"])
def test_every_obi_message_is_accounted_for(obi_data: Path, input_: str) -> None:
    if input_ == "multicast" and (why := multicast_works()) is not None:
        pytest.skip(why)
    date = load_manifest(next((obi_data / "captures").iterdir())).date
    capture = obi_data / "captures" / str(date)
    overrides = ('operators.fs.params.copies="A,B"',) + (
        ('operators.fh.params.input="multicast"',) if input_ == "multicast" else ())
    pp = plan_pipeline(topology_path("opra_fused"), obi_data, str(date),
                       RunOptions(rate="1x", seconds=None, loop=False, sample_every=SAMPLE_EVERY,
                                  drops=f"A:{P},B:{P}", seed=SEED), overrides)
    run = run_pipeline(pp, obi_data)
    assert run.result.ok, run.result.failure
    a = run.accounting
    expected = _expected_missed(capture)
    assert a.messages_missed == sum(expected.values()) > 0
    assert a.messages_received == a.routed == a.processed > 0
    assert a.messages_duplicate > a.messages_received // 2          # B's copies, but for the drops
    assert a.decode_errors > 0 and a.unknown_root == 0

    ingest = read_run_file(run.run_dir, "ingest.parquet").to_pandas()
    final = ingest.sort_values("ts_ns").groupby("line").last()
    assert {int(k): int(v) for k, v in final["messages_missed"].items()} == expected
    for ln, row in final.iterrows():                                 # every MSN of the span once
        cap = read_capture(capture / f"line{int(ln):02d}.pcap")
        end = max(int.from_bytes(p[6:10], "big") + p[10] for p in cap.payloads())
        assert int(row["messages_received"]) + int(row["messages_missed"]) == end, ln

    for name, e in a.engines.items():
        assert e["sampled"] == e["processed"] // SAMPLE_EVERY, name
    assert a.collected == a.sampled > 0
    samples = read_run_file(run.run_dir, "samples.parquet")
    st = np.stack([samples.column(h).to_numpy() for h in HOPS])
    assert (st > 0).all(), "a sample lacks a stamp"
    assert (np.diff(st, axis=0) >= 0).all(), "stamps out of order"
    assert not leftovers(run.result.run_id)
