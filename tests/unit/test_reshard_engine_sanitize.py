"""Re-sharding's marker / hold / install state machine in C (engine_reshard.h) over a real
reshard segment (reshard.h), two engines and two feed handlers simulated in the test: a
moved bucket's books and signals come out as one static engine's would; bad, duplicate,
unexpected and stale markers are counted, never a crash; a state that never comes is
waited for (bounded) at the end of the stream; requests are refused when they cannot be.
Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from decision_engines.engine import DecisionEngine, split_output
from decision_engines.engine_config import EngineConfig
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIG_CROSSED, SIG_LOCKED
from omdp.native import ffi, lib
from omdp.record import RT_RESHARD
from omdp.runtime.reshard import RESHARD_MARKER_DTYPE, ReshardError, ReshardLive, ReshardSegment, bucket_homes

P = 1_000_000_000
CENT = P // 100
BUCKETS = 4
MOVED = 1  # the bucket that moves: underlyings 1 and 5


@pytest.fixture
def seg() -> Iterator[ReshardSegment]:
    s = ReshardSegment.create(f"t{os.getpid()}x{np.random.randint(1 << 30)}", BUCKETS, 2, 2, [0] * BUCKETS, 1 << 20)
    yield s
    s.close()


def quotes(n: int = 4000, seed: int = 3) -> np.ndarray:
    """Quotes over 8 underlyings x 6 strikes x call/put on six exchanges, now and then locked
    or crossed. A series' line (here: feed handler = strike index % 2) is fixed, as in OPRA."""
    rng = np.random.default_rng(seed)
    uid = rng.integers(0, 8, n)
    k = rng.integers(0, 6, n)
    mid = 200 + rng.integers(-20, 20, n)
    half = rng.integers(-2, 6, n)  # <= 0: locked or crossed
    return build_quotes(root=b"RT    ", expiry=20080322, strike_px=(10 + k + uid * 100) * P,
                        put_call=np.where(rng.random(n) < 0.5, ord("C"), ord("P")).astype(np.uint8),
                        participant=np.frombuffer(b"ABCIPX", np.uint8)[rng.integers(0, 6, n)],
                        bid_px=(mid - half) * CENT, bid_size=10, offer_px=(mid + half) * CENT, offer_size=10,
                        underlying_id=uid, msg_seq=np.arange(1, n + 1), line=1 + k % 2)


def marker(move_id: int, fh: int, frm: int = 0, to: int = 1, bucket: int = MOVED, n_fh: int = 2) -> np.ndarray:
    m = np.zeros(1, RESHARD_MARKER_DTYPE)
    m["hdr"]["type"] = RT_RESHARD
    m["hdr"]["length"] = RESHARD_MARKER_DTYPE.itemsize
    m["move_id"], m["bucket"], m["buckets"] = move_id, bucket, BUCKETS
    m["from"], m["to"], m["fh"], m["n_fh"] = frm, to, fh, n_fh
    return m


def raw(*parts: np.ndarray) -> bytes:
    return b"".join(p.tobytes() for p in parts)


class Side:
    """One engine behind its state machine, collecting what it outputs."""

    def __init__(self, seg: ReshardSegment, index: int) -> None:
        self.engine = DecisionEngine(EngineConfig(max_series=512, max_groups=64, sample_every=0, engine_id=index))
        err = ffi.new("char[]", 160)
        self.r = lib.omdp_engine_reshard_new(seg.c_handle, self.engine.handle, index, err, 160)
        assert self.r != ffi.NULL, ffi.string(err)
        self.out = np.zeros(4 << 20, np.uint8)
        self.len = ffi.new("uint32_t *")
        self.signals: list[np.ndarray] = []

    def feed(self, data: bytes) -> None:
        buf = np.frombuffer(data, np.uint8).copy() if data else np.zeros(0, np.uint8)
        self.len[0] = 0
        rc = lib.omdp_engine_reshard_process(self.r, ffi.from_buffer("uint8_t[]", buf), len(buf),
                                             ffi.from_buffer("uint8_t[]", self.out), len(self.out), self.len)
        assert rc == 0
        self._take()

    def finish(self, wait_ns: int) -> None:
        self.len[0] = 0
        assert lib.omdp_engine_reshard_finish_into(self.r, wait_ns, ffi.from_buffer("uint8_t[]", self.out),
                                                   len(self.out), self.len) == 0
        self._take()

    def _take(self) -> None:
        if self.len[0]:
            self.signals.append(split_output(self.out, self.len[0]).signals)

    def counters(self) -> dict[str, int]:
        cs = ffi.new("omdp_counter_t[]", 32)
        n = lib.omdp_engine_reshard_counters(self.r, cs, 32)
        return {ffi.string(cs[i].name).decode(): int(cs[i].value) for i in range(n)}

    def book_signals(self) -> list[tuple[int, int, int]]:
        if not self.signals:
            return []
        s = np.concatenate(self.signals)
        s = s[np.isin(s["kind"], [SIG_CROSSED, SIG_LOCKED])]
        return sorted(zip(s["msg_seq"].tolist(), s["underlying_id"].tolist(), s["kind"].tolist()))

    def close(self) -> None:
        lib.omdp_engine_reshard_free(self.r)
        self.engine.close()


def nbbo(engine: DecisionEngine, uids: set[int]) -> list[tuple]:
    snap = engine.snapshot()
    snap = snap[np.isin(snap["underlying_id"], list(uids))]
    return sorted(zip(snap["underlying_id"].tolist(), snap["strike_px"].tolist(), snap["put_call"].tolist(),
                      snap["bid_px"].tolist(), snap["offer_px"].tolist(), snap["bid_part"].tolist(),
                      snap["offer_part"].tolist()))


def static_run(q: np.ndarray) -> tuple[list[tuple[int, int, int]], DecisionEngine]:
    e = DecisionEngine(EngineConfig(max_series=512, max_groups=64, sample_every=0))
    s = e.process(q).signals
    s = s[np.isin(s["kind"], [SIG_CROSSED, SIG_LOCKED])]
    return sorted(zip(s["msg_seq"].tolist(), s["underlying_id"].tolist(), s["kind"].tolist())), e


def test_a_moved_bucket_continues_exactly_where_it_stopped(seg: ReshardSegment) -> None:
    """Two feed handlers (lines 1 and 2) switch bucket 1 to engine 1 at different points;
    engine 1 sees fh0's marker before engine 0 has fh1's, so it holds bucket 1 back until the
    state comes. Every message once, in order per underlying: the signals and the moved
    bucket's NBBOs are the static engine's."""
    q = quotes()
    want, static = static_run(q)
    a, b = Side(seg, 0), Side(seg, 1)
    try:
        assert seg.request(MOVED, 1) == 1
        fh = q["line"] - 1
        bucket = q["underlying_id"] % BUCKETS
        sw = {0: 1000, 1: 2500}  # each handler's switch point (message index)
        moved = (bucket == MOVED) & (np.arange(len(q)) >= np.where(fh == 0, sw[0], sw[1]))
        # engine 0: everything not moved, with fh0's marker at its switch, fh1's at its own
        a.feed(raw(q[:1000][~moved[:1000]], marker(1, 0)))
        b.feed(raw(marker(1, 0), q[1000:1800][moved[1000:1800]]))        # held: fh1 has not switched
        assert lib.omdp_engine_reshard_holding(b.r) == MOVED
        b.feed(b"")                                                        # nothing new: still held
        assert lib.omdp_engine_reshard_holding(b.r) == MOVED
        a.feed(raw(q[1000:2500][~moved[1000:2500]]))
        a.feed(raw(marker(1, 1)))                                         # every marker: export
        b.feed(raw(marker(1, 1), q[1800:][moved[1800:]]))                  # installs, runs held, then the rest
        a.feed(raw(q[2500:][~moved[2500:]]))
        assert lib.omdp_engine_reshard_holding(b.r) == -1
        assert sorted(a.book_signals() + b.book_signals()) == want and want
        mv = {1, 5}
        assert nbbo(b.engine, mv) == nbbo(static, mv)
        ca, cb = a.counters(), b.counters()
        assert ca["reshard_exports"] == 1 and ca["reshard_markers_seen"] == 2 and ca["reshard_state_bytes_out"] > 0
        assert cb["reshard_installs"] == 1 and cb["reshard_held"] == int(moved[1000:1800].sum()) > 0
        assert cb["reshard_series_in"] > 0 and cb["reshard_state_bytes_in"] == ca["reshard_state_bytes_out"]
        m = seg.move(1)
        assert m is not None and m["installed"] == 1 and m["from"] == 0 and m["held"] == cb["reshard_held"]
        live: list[dict[str, int]] = []
        ReshardLive(seg, live.append).publish_now()  # the stats-segment entry's figures
        assert live[-1]["completed"] == live[-1]["requested"] == 1 and live[-1]["held"] == m["held"]
        assert live[-1]["state_bytes"] == m["state_bytes"] and live[-1]["max_us"] >= live[-1]["last_us"] >= 0
        assert seg.owner(MOVED) == 1 and seg.totals()["installed"] == 1
    finally:
        a.close()
        b.close()
        static.close()


def test_bad_duplicate_unexpected_and_stale_markers_are_counted(seg: ReshardSegment) -> None:
    a = Side(seg, 0)
    try:
        short = marker(1, 0).tobytes()[:88]
        bad = np.frombuffer(short, np.uint8).copy()
        bad[2:4] = np.frombuffer(np.uint16(88).tobytes(), np.uint8)  # a marker 8 bytes short
        a.feed(bad.tobytes())
        for m in (marker(1, 0, bucket=BUCKETS), marker(1, 5), marker(1, 0, frm=1, to=1), marker(1, 0, frm=2),
                  marker(1, 0, frm=1, to=2), marker(0, 0), marker(1, 0, n_fh=3)):
            a.feed(raw(m))
        assert a.counters()["reshard_markers_bad"] == 8
        a.feed(raw(marker(1, 0), marker(1, 0)))                    # the same handler twice
        a.feed(raw(marker(2, 1)))                                  # another move while 1 is in progress
        a.feed(raw(marker(1, 1, bucket=2)))                        # move 1 told differently
        c = a.counters()
        assert (c["reshard_markers_duplicate"], c["reshard_markers_unexpected"], c["reshard_markers_bad"]) == (1, 1, 9)
        a.feed(raw(marker(1, 1)))                                  # completes: exported
        a.feed(raw(marker(1, 0), marker(1, 1)))                    # stale now
        c = a.counters()
        assert c["reshard_exports"] == 1 and c["reshard_markers_duplicate"] == 3 and c["reshard_markers_late"] == 0
        a.feed(raw(quotes(50)))                                    # and the engine goes on
    finally:
        a.close()


def test_the_old_engine_exports_at_the_end_of_its_stream_without_every_marker(seg: ReshardSegment) -> None:
    """A handler that ended before a move never marks it; when the old engine's inputs have
    all ended no message of the bucket can come, so it hands the state over then."""
    a, b = Side(seg, 0), Side(seg, 1)
    try:
        q = quotes(300)
        a.feed(raw(q, marker(1, 0)))
        b.feed(raw(marker(1, 0)))
        assert lib.omdp_engine_reshard_holding(b.r) == MOVED
        a.finish(0)
        b.feed(b"")
        c = a.counters()
        assert c["reshard_exports"] == 1 and c["reshard_exports_at_end"] == 1
        assert b.counters()["reshard_installs"] == 1 and b.counters()["reshard_install_timeouts"] == 0
        b.feed(raw(marker(1, 1)))              # the other handler's marker after the install: late, not bad
        b.feed(raw(marker(1, 1)))              # and once more: a duplicate
        cb = b.counters()
        assert (cb["reshard_markers_late"], cb["reshard_markers_duplicate"], cb["reshard_markers_seen"]) == (1, 1, 2)
    finally:
        a.close()
        b.close()


def test_a_state_that_never_comes_is_waited_for_then_the_held_messages_run(seg: ReshardSegment) -> None:
    b = Side(seg, 1)
    try:
        q = quotes(200)
        held = q[q["underlying_id"] % BUCKETS == MOVED]
        b.feed(raw(marker(1, 0), held))
        assert lib.omdp_engine_reshard_holding(b.r) == MOVED
        b.finish(1_000_000)  # 1 ms
        c = b.counters()
        assert c["reshard_install_timeouts"] == 1 and c["reshard_held"] == len(held) and c["reshard_installs"] == 1
        assert b.engine.counters()["processed"] == len(held)
        assert seg.totals()["installed"] == 1  # the next move is not blocked
    finally:
        b.close()


def test_a_state_too_big_for_the_hand_over_area_is_counted_lost() -> None:
    s = ReshardSegment.create(f"t{os.getpid()}small", BUCKETS, 2, 1, [0] * BUCKETS, 64)
    a, b = Side(s, 0), Side(s, 1)
    try:
        a.feed(raw(quotes(500)))
        a.feed(raw(marker(1, 0, n_fh=1)))
        b.feed(raw(marker(1, 0, n_fh=1)))
        assert a.counters()["reshard_state_lost"] == 1 and b.counters()["reshard_state_lost"] == 1
        assert b.counters()["reshard_installs"] == 1
    finally:
        a.close()
        b.close()
        s.close()


def test_requests_are_refused_when_they_cannot_be(seg: ReshardSegment) -> None:
    with pytest.raises(ReshardError, match="already on that engine"):
        seg.request(0, 0)
    with pytest.raises(ReshardError, match="out of range"):
        seg.request(BUCKETS, 1)
    with pytest.raises(ReshardError, match="out of range"):
        seg.request(0, 2)
    assert seg.request(0, 1) == 1
    with pytest.raises(ReshardError, match="in flight"):
        seg.request(2, 1)
    assert seg.totals()["requested"] == 1 and seg.move(1)["to"] == 1 and seg.move(2) is None
    lib.omdp_reshard_publish_install(seg.c_handle, 1, 0, 1, 0, 0, 0)   # as the new engine would
    lib.omdp_reshard_fh_ended(seg.c_handle)                            # a feed handler's stream ended
    with pytest.raises(ReshardError, match="feed has ended"):
        seg.request(2, 1)
    assert seg.totals()["requested"] == 1 and seg.totals()["ended"] == 1 and seg.owner(0) == 1
    with pytest.raises(ReshardError, match="has no reshard segment"):
        ReshardSegment.open("nosuchrun")
    with pytest.raises(ValueError, match="power of two"):
        ReshardSegment.create("x", 3, 2, 1, [0, 0, 0], 1024)
    assert lib.omdp_reshard_create(b"bad/name", 4, 2, 1, ffi.new("uint16_t[]", 4), 1024, ffi.NULL) == ffi.NULL
    assert lib.omdp_reshard_create(b"omdp-x", 4, 2, 1, ffi.new("uint16_t[]", [0, 0, 0, 5]), 1024, ffi.NULL) == ffi.NULL


def test_bucket_homes_wants_routing_by_bucket() -> None:
    assert bucket_homes([1, 5, 2], [1, 1, 0], 4, 2) == [0, 1, 0, 1]
    with pytest.raises(ValueError, match="bucket 1 is on engines 1 and 0"):
        bucket_homes([1, 5], [1, 0], 4, 2)


def test_pricing_limits_move_with_the_bucket(seg: ReshardSegment) -> None:
    """The new engine checks the moved series against the limits the old one had from its
    pricing, until its own pricing refreshes: a quote off the band is flagged at once."""
    from decision_engines.signal_record import SIG_OFF_SMILE

    one = build_quotes(root=b"RT    ", expiry=20080322, strike_px=110 * P, put_call=b"C", participant=b"A",
                       bid_px=200 * CENT, bid_size=10, offer_px=210 * CENT, offer_size=10, underlying_id=1,
                       msg_seq=1)
    off = one.copy()
    off["bid_px"], off["offer_px"], off["msg_seq"] = 400 * CENT, 410 * CENT, 3
    a, b = Side(seg, 0), Side(seg, 1)
    try:
        a.feed(raw(one))
        slot = a.engine.find_series(b"RT    ", 20080322, 110 * P, b"C")
        refs = a.engine.begin_refs()
        assert refs is not None and slot is not None
        refs["band_lo"], refs["band_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        refs["parity_lo"], refs["parity_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        refs[slot]["band_lo"], refs[slot]["band_hi"] = 150 * CENT, 250 * CENT
        a.engine.publish_refs()
        again = one.copy()
        again["msg_seq"] = 2
        a.feed(raw(again, marker(1, 0)))        # the old engine takes the publish with this batch ...
        a.feed(raw(marker(1, 1)))               # ... and exports with the last marker
        b.feed(raw(marker(1, 0), marker(1, 1), off))
        kinds = np.concatenate(b.signals)["kind"].tolist() if b.signals else []
        assert kinds == [SIG_OFF_SMILE]
        # the new engine's pricing publishes limits from a snapshot taken before the install
        # (every slot disabled): the carried limits stay in force through that publish ...
        stale = b.engine.begin_refs()
        assert stale is not None
        stale["band_lo"], stale["band_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        stale["parity_lo"], stale["parity_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        b.engine.publish_refs()
        off2 = off.copy()
        off2["bid_px"], off2["offer_px"], off2["msg_seq"] = 500 * CENT, 510 * CENT, 4
        b.feed(raw(off2))
        assert np.concatenate(b.signals)["kind"].tolist() == [SIG_OFF_SMILE, SIG_OFF_SMILE]
        assert b.counters()["reshard_refs_carried"] == 1
        # ... and the publish after it, computed with the series in its snapshot, rules
        fresh = b.engine.begin_refs()
        assert fresh is not None
        fresh["band_lo"], fresh["band_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        fresh["parity_lo"], fresh["parity_hi"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        b.engine.publish_refs()
        off3 = off.copy()
        off3["bid_px"], off3["offer_px"], off3["msg_seq"] = 600 * CENT, 610 * CENT, 5
        b.feed(raw(off3))
        assert len(np.concatenate(b.signals)) == 2
    finally:
        a.close()
        b.close()
