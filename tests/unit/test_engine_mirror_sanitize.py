"""The series mirror (``omdp_engine_snapshot_update``) equals a full snapshot after every
update and lists exactly the series that are new or changed in a field pricing reads (in
the sanitizer tier: the C function writes three caller-owned arrays)."""
from __future__ import annotations

import pytest
import datetime as dt
import threading

import numpy as np

from decision_engines.engine import DecisionEngine, priced_changed
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_mirror import SeriesMirror
from ops.bench.model_market import model_market, quote_stream


def test_the_mirror_equals_a_snapshot_and_lists_what_moved() -> None:
    m = model_market(12, [20080216, 20080322], 5, dt.date(2008, 2, 4), seed=31)
    stream = quote_stream(m, 8_000, seed=32)
    e = DecisionEngine(EngineConfig(max_series=1 << 12, max_groups=64, sample_every=0))
    try:
        mirror = SeriesMirror(capacity=16)  # grows with the engine
        prev = np.zeros(0, dtype=mirror.series.dtype)
        at, moved, quiet = 0, 0, 0
        for n in [7] * 30 + [300] * 20 + [0]:  # 7: a pair's legs often in different updates
            e.process(stream[at:at + n], batch=32)
            at += n
            listed = mirror.update(e)
            snap = e.snapshot()
            assert mirror.series.tobytes() == snap.tobytes()
            want = np.arange(len(prev), len(snap))  # new series ...
            if len(prev):                            # ... and those that changed
                want = np.concatenate([np.nonzero(priced_changed(snap[:len(prev)], prev))[0], want])
            assert np.array_equal(listed, want)
            moved += 0 < len(listed) < len(snap)
            quiet += len(listed) == 0
            prev = snap
        assert moved >= 20 and quiet == 1
        assert np.array_equal(mirror.update(e), np.zeros(0, np.int64))  # nothing since
    finally:
        e.close()


@pytest.mark.full
def test_the_mirror_follows_a_running_hot_path() -> None:
    """Updated over and over while another thread feeds the engine (the refresher's case:
    series appear between the mirror's size check and its scan, which must stop at its
    capacity; without that cap this test crashes), the mirror misses nothing: once the
    feeding stops, one more update equals a full snapshot."""
    m = model_market(20, [20080216, 20080322], 6, dt.date(2008, 2, 4), seed=33)
    stream = quote_stream(m, 150_000, seed=34)
    e = DecisionEngine(EngineConfig(max_series=1 << 12, max_groups=64, sample_every=0))
    try:
        mirror, updates, done = SeriesMirror(capacity=16), 0, threading.Event()

        def feed() -> None:
            e.process(stream, batch=32)
            done.set()

        t = threading.Thread(target=feed)
        t.start()
        while not done.is_set():
            mirror.update(e)
            updates += 1
        t.join()
        mirror.update(e)
        assert mirror.series.tobytes() == e.snapshot().tobytes()
        assert updates > 10
    finally:
        e.close()


def test_the_mirror_sees_series_a_bucket_hand_over_rewrote() -> None:
    """Series handed over by another engine (``omdp_engine_import_series``, re-sharding)
    rewrite the NBBO of series the mirror has already read: the update finds them through
    the engine's dense sequences, as it finds the hot path's own writes."""
    from omdp.native import ffi, lib

    m = model_market(12, [20080216, 20080322], 5, dt.date(2008, 2, 4), seed=35)
    stream = quote_stream(m, 6_000, seed=36)
    cfg = EngineConfig(max_series=1 << 12, max_groups=64, sample_every=0)
    giver, taker = DecisionEngine(cfg), DecisionEngine(cfg)
    try:
        giver.process(stream, batch=64)
        taker.process(stream[:2_000], batch=64)
        mirror = SeriesMirror(capacity=16)
        mirror.update(taker)
        before = taker.snapshot()
        n = ffi.new("uint32_t *")
        cap = ffi.sizeof("omdp_reshard_handover_t") + giver.series_count * ffi.sizeof("omdp_reshard_series_t")
        area = ffi.new("uint8_t[]", cap)
        assert lib.omdp_engine_export_bucket(giver.handle, 1, 0, area, cap, n) > 0
        series = ffi.cast("omdp_reshard_series_t *", area + ffi.sizeof("omdp_reshard_handover_t"))
        assert lib.omdp_engine_import_series(taker.handle, series, n[0], ffi.NULL) == n[0]
        listed = mirror.update(taker)
        snap = taker.snapshot()
        assert mirror.series.tobytes() == snap.tobytes()
        rewritten = np.nonzero(priced_changed(snap[:len(before)], before))[0]
        assert len(rewritten) > 20
        assert np.isin(rewritten, listed).all()
    finally:
        giver.close()
        taker.close()
