"""Market statistics over today's market (an OBI v6 capture of ``omdp synth --market
today``: A and B copies with gaps and bad checksums the arbitration must fill): the windows
the leaders merged in the shared-state run and in the re-partitioning baseline's run, with
one feed-handler partition and with two, equal key for key and window for window the
sequential computation over the same capture (the feed handler's own rules offline, every
line in one pass), every window complete. Today's market is skewed: activity follows a
power law of the underlying's rank, so a few keys take most updates."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from ops.market.window_table import live_tables
from ops.synth.today.generator import TodayConfig, synthesize_today
from market_support import market_run_command, sequential_windows

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
DATE = "2026-03-02"
WINDOW_MS = 100


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("market_obi")
    synthesize_today(TodayConfig(data=root, seconds=0.6, rate=0.005, underlyings=60, series=4_000, b_copy=True,
                                 gaps_per_second=5.0, checksums_per_second=5.0, num_lines=4, progress=False))
    return root


def _windows(data: Path, topology: str, mode: str) -> tuple[pa.Table, pa.Table]:
    before = set(data.glob("runs/*/*"))
    # both copies into the rings, as the offline handler reads both files: a block with a bad
    # checksum on A is filled from B
    r = subprocess.run(market_run_command(topology, data, DATE, "1x", WINDOW_MS, "--set", 'operators.fs.params.copies="A,B"',
                                          "--set", f'operators.ms.params.mode="{mode}"'),
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = set(data.glob("runs/*/*")) - before
    aggs, counts, incomplete = live_tables(pq.read_table(run_dir / "market_windows.parquet"))
    assert incomplete == 0
    return aggs, counts


@pytest.mark.parametrize("topology", ["opra_fused_market", "opra_market_partitions"])
def test_shared_state_equals_the_baseline_and_the_sequential_windows(data: Path, topology: str) -> None:
    want_aggs, want_counts = sequential_windows(data, DATE, WINDOW_MS)
    assert want_counts.num_rows >= 5
    # skewed keys: the busiest underlying has several times the mean underlying's updates
    und = want_aggs.filter(pc.equal(want_aggs.column("dim"), "underlying"))
    per_key: dict[int, int] = {}
    for k, q, t in zip(*(und.column(c).to_pylist() for c in ("key", "quotes", "trades"))):
        per_key[k] = per_key.get(k, 0) + q + t
    assert max(per_key.values()) > 3 * sum(per_key.values()) / len(per_key)
    shared = _windows(data, topology, "shared")
    routed = _windows(data, topology, "route")
    assert shared[0].equals(routed[0]) and shared[1].equals(routed[1])
    assert shared[0].equals(want_aggs) and shared[1].equals(want_counts)
