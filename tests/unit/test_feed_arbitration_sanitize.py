"""A/B arbitration, gaps and sequence resets of one line (feed_handler.h, omdp_fh_arb_*),
and the root routing table, called straight into C (CI runs this file under ASan/UBSan)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omdp.native import ffi, lib

ACCEPT, DUP, RESET = lib.OMDP_FH_ACCEPT, lib.OMDP_FH_DUPLICATE, lib.OMDP_FH_RESET


def new_arb():
    a = ffi.new("omdp_fh_arb_t *")
    lib.omdp_fh_arb_init(a)
    return a


def feed(a, copy: int, seqs, reset: bool = False) -> list[int]:
    return [lib.omdp_fh_arb_message(a, copy, s, int(reset)) for s in seqs]


def test_first_copy_wins_and_the_other_is_counted_duplicate() -> None:
    a = new_arb()
    assert feed(a, 0, range(10, 20)) == [ACCEPT] * 10
    assert feed(a, 1, range(10, 20)) == [DUP] * 10
    assert (a.accepted, a.duplicates, a.missed) == (10, 10, 0)


def test_a_gap_on_both_copies_is_missed_exactly() -> None:
    a = new_arb()
    feed(a, 0, range(1, 6))
    feed(a, 0, range(9, 12))          # 6, 7, 8 lost on A
    feed(a, 1, range(1, 6))
    feed(a, 1, [9, 10, 11])
    assert a.missed == 3 and a.accepted == 8


def test_the_other_copy_fills_a_gap_only_if_it_comes_first() -> None:
    a = new_arb()
    feed(a, 0, [1, 2])
    assert feed(a, 1, [3, 4]) == [ACCEPT, ACCEPT]   # B brings 3, 4 before A
    assert feed(a, 0, [3, 4, 5]) == [DUP, DUP, ACCEPT]
    assert a.missed == 0


def test_reset_restarts_the_sequence_and_its_second_copy_is_a_duplicate() -> None:
    a = new_arb()
    feed(a, 0, range(100, 200))
    feed(a, 1, range(100, 200))
    assert feed(a, 0, [99], reset=True) == [RESET]   # lap 2: reset to 99, next expected 100
    assert feed(a, 0, range(100, 110)) == [ACCEPT] * 10
    # B is behind: its reset, then its own copy of lap 2
    assert feed(a, 1, [99], reset=True) == [DUP]
    assert feed(a, 1, range(100, 110)) == [DUP] * 10
    assert a.missed == 0 and a.resets == 1


def test_a_stale_copy_before_its_reset_is_duplicate() -> None:
    a = new_arb()
    feed(a, 0, range(1, 50))
    feed(a, 1, range(1, 40))
    feed(a, 0, [0], reset=True)
    feed(a, 0, range(1, 5))
    # B's tail of the previous lap arrives after A's reset: stale, not new
    assert feed(a, 1, range(40, 50)) == [DUP] * 10
    assert a.missed == 0


def test_packet_precheck_needs_tracking_blocks_and_two_messages() -> None:
    a = new_arb()
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 0, 1, 5) == 0       # not started
    feed(a, 0, range(1, 11))
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 1, 5) == 0       # blocks unknown
    lib.omdp_fh_arb_observe_block(a, 1, 1)
    assert a.blocks == lib.OMDP_FH_BLOCKS_TRACK
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 1, 5) == 1
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 6, 5) == 1       # 6..10 seen
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 7, 5) == 0       # 11 is new
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 3, 1) == 0       # a lone message: maybe a reset
    lib.omdp_fh_arb_observe_block(a, 500, 11)                          # a packet that breaks the rule
    assert a.blocks == lib.OMDP_FH_BLOCKS_OTHER
    lib.omdp_fh_arb_observe_block(a, 11, 11)
    assert a.blocks == lib.OMDP_FH_BLOCKS_OTHER                        # never trusted again
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 1, 5) == 0


def test_precheck_is_off_for_a_copy_behind_a_reset() -> None:
    a = new_arb()
    feed(a, 0, range(1, 11))
    lib.omdp_fh_arb_observe_block(a, 1, 1)
    feed(a, 0, [0], reset=True)
    assert lib.omdp_fh_arb_packet_is_duplicate(a, 1, 1, 5) == 0       # B has not reset yet: decode it


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 400), p_a=st.floats(0, 0.5), p_b=st.floats(0, 0.5), seed=st.integers(0, 2**32))
def test_interleaved_copies_never_accept_twice_and_count_every_skip(n: int, p_a: float, p_b: float, seed: int) -> None:
    """Copies interleaved at random (each in order): no sequence number is accepted twice,
    the accepted ones rise, and accepted + missed spans the first to the last accepted."""
    rng = random.Random(seed)
    a_keep = [s for s in range(1, n + 1) if rng.random() >= p_a]
    b_keep = [s for s in range(1, n + 1) if rng.random() >= p_b]
    arb = new_arb()
    accepted: list[int] = []
    ia = ib = 0
    while ia < len(a_keep) or ib < len(b_keep):
        if ib >= len(b_keep) or (ia < len(a_keep) and rng.random() < 0.5):
            copy, s = 0, a_keep[ia]
            ia += 1
        else:
            copy, s = 1, b_keep[ib]
            ib += 1
        if lib.omdp_fh_arb_message(arb, copy, s, 0) == ACCEPT:
            accepted.append(s)
    assert accepted == sorted(set(accepted))
    assert arb.accepted == len(accepted)
    assert arb.accepted + arb.duplicates == len(a_keep) + len(b_keep)
    if accepted:
        assert arb.accepted + arb.missed == accepted[-1] - accepted[0] + 1


def test_in_order_merge_accounts_exactly() -> None:
    """Copies delivered in sequence order (the loopback multicast case): accepted + missed
    spans first..last exactly."""
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 300)
        lost_both = {s for s in range(1, n + 1) if rng.random() < 0.05}
        a_keep = [s for s in range(1, n + 1) if s not in lost_both and rng.random() > 0.2]
        b_keep = [s for s in range(1, n + 1) if s not in lost_both and s not in a_keep]
        b_keep += [s for s in a_keep if rng.random() < 0.5]
        events = sorted([(s, 0) for s in a_keep] + [(s, 1) for s in b_keep])
        arb = new_arb()
        for s, c in events:
            lib.omdp_fh_arb_message(arb, c, s, 0)
        got = set(a_keep) | set(b_keep)
        if got:
            assert arb.accepted == len(got)
            assert arb.missed == len([s for s in lost_both if min(got) < s < max(got)])


# ---- routes ------------------------------------------------------------------------------


def routes(entries, engines: int = 4):
    arr = ffi.new("omdp_fh_route_t[]", max(len(entries), 1))
    for i, (root, uid, eng) in enumerate(entries):
        ffi.memmove(arr[i].root, root, len(root))
        arr[i].underlying_id = uid
        arr[i].engine = eng
    err = ffi.new("char[]", 200)
    t = lib.omdp_fh_routes_new(arr, len(entries), engines, err, 200)
    return t, ffi.string(err).decode()


def lookup(t, root: bytes) -> tuple[int, int, int]:
    uid, eng = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    buf = ffi.new("char[6]", root[:6])
    r = lib.omdp_fh_routes_lookup(t, buf, len(root), uid, eng)
    return r, uid[0], eng[0]


def test_routes_find_every_root_and_hash_unknown_ones() -> None:
    rng = random.Random(3)
    names = {"".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    entries = [(n.encode(), i, i % 4) for i, n in enumerate(sorted(names))]
    t, err = routes(entries)
    assert t != ffi.NULL, err
    try:
        for root, uid, eng in entries:
            assert lookup(t, root) == (1, uid, eng)
        r, uid, eng = lookup(t, b"ZZZZZZ" if "ZZZZZZ" not in names else b"Q9")
        assert r == 0 and uid == lib.OMDP_NO_UNDERLYING and 0 <= eng < 4
        assert lookup(t, b"")[0] == -1
    finally:
        lib.omdp_fh_routes_free(t)


@pytest.mark.parametrize("entries, why", [
    ([(b"", 1, 0)], "empty root"),
    ([(b"ABCDEFG", 1, 0)], "longer than 6"),
    ([(b"IBM", 1, 9)], "engine out of range"),
    ([(b"IBM", 1, 0), (b"IBM", 2, 1)], "twice"),
])
def test_bad_routes_are_refused_with_the_reason(entries, why: str) -> None:
    t, err = routes(entries)
    assert t == ffi.NULL and why in err


def test_roots_sent_padded_with_spaces_route_like_the_bare_root() -> None:
    t, err = routes([(b"IBM", 7, 2), (b"SPXW", 9, 1)])
    assert t != ffi.NULL, err
    try:
        assert lookup(t, b"IBM  ") == (1, 7, 2)
        assert lookup(t, b"SPXW ") == (1, 9, 1)
        assert lookup(t, b"     ")[0] == -1
    finally:
        lib.omdp_fh_routes_free(t)


def test_a_lap_tail_short_of_the_intended_end_is_missed_at_the_reset() -> None:
    a = new_arb()
    assert feed(a, 0, [0], reset=True) == [RESET]   # lap 0: nothing before it to miss
    feed(a, 0, range(1, 8))                          # 8, 9 (the lap's tail) never came
    a.lap_end = 10                                   # the replayer's intended end of the lap
    assert feed(a, 0, [0], reset=True) == [RESET]
    assert a.missed == 2
    feed(a, 0, range(1, 10))                         # a whole lap: nothing more missed
    assert feed(a, 0, [0], reset=True) == [RESET] and a.missed == 2
    a.lap_end = 0                                    # no intended end known: as before
    feed(a, 0, range(1, 3))
    assert feed(a, 0, [0], reset=True) == [RESET] and a.missed == 2
