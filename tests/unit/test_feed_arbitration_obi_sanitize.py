"""OBI v6 A/B arbitration and gap detection of one line (feed_handler.h, omdp_fh_obi_arb_*):
the spec's recommended receiver (opra-binary.md 9.2) case by case, and a random A/B
interleaving against a reference count, called straight into C (CI runs this file under
ASan/UBSan)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omdp.native import ffi, lib

ACCEPT, DUP, RESET, INTEGRITY = lib.OMDP_FH_ACCEPT, lib.OMDP_FH_DUPLICATE, lib.OMDP_FH_RESET, lib.OMDP_FH_INTEGRITY
A, B = 0, 1


def new_arb():
    a = ffi.new("omdp_fh_obi_arb_t *")
    lib.omdp_fh_obi_arb_init(a)
    return a


def data(a, copy: int, s: int, n: int) -> list[int]:
    """The MSNs a data block delivers, in the order delivered."""
    r = ffi.new("uint32_t[]", 2 * lib.OMDP_FH_OBI_RANGES)
    k = lib.omdp_fh_obi_arb_data(a, copy, s, n, r)
    return [s + i for j in range(k) for i in range(r[2 * j], r[2 * j + 1])]


def control(a, copy: int, kind: str, s: int, ts: int = 1) -> int:
    return lib.omdp_fh_obi_arb_control(a, copy, ord(kind), s, ts, 0)


def test_first_stream_wins_and_the_other_copy_is_dropped_whole() -> None:
    a = new_arb()
    assert control(a, A, "C", 0) == RESET and a.next == 1
    assert data(a, A, 1, 5) == [1, 2, 3, 4, 5]
    assert data(a, B, 1, 5) == []
    assert (a.accepted, a.duplicates, a.missed) == (6, 5, 0)


def test_a_block_overlapping_next_delivers_only_what_is_new() -> None:
    a = new_arb()
    data(a, A, 10, 3)                    # joins mid-day: next = 10, then 13
    assert data(a, B, 11, 4) == [13, 14]
    assert a.next == 15 and a.duplicates == 2


def test_a_gap_on_one_stream_is_filled_by_the_other_even_after_later_messages() -> None:
    a = new_arb()
    control(a, A, "C", 0)
    data(a, A, 1, 4)                     # 1..4
    assert data(a, A, 9, 2) == [9, 10]   # A lost 5..8: pending, not yet lost
    assert a.missed == 0
    data(a, B, 1, 4)
    assert data(a, B, 5, 4) == [5, 6, 7, 8]  # B brings them, after 9 and 10
    assert data(a, B, 9, 2) == []
    assert (a.missed, a.filled, a.accepted) == (0, 4, 11)


def test_several_gaps_stay_pending_while_the_other_stream_lags() -> None:
    a = new_arb()
    data(a, A, 1, 2)
    data(a, A, 4, 2)                     # 3 lost on A
    data(a, A, 8, 2)                     # 6, 7 lost on A
    assert data(a, B, 1, 2) == []
    assert data(a, B, 3, 1) == [3]
    assert data(a, B, 4, 2) == []
    assert data(a, B, 6, 4) == [6, 7]
    assert (a.missed, a.filled, a.n_gaps) == (0, 3, 0)


def test_the_oldest_pending_gap_is_lost_when_too_many_are_pending() -> None:
    a = new_arb()
    data(a, A, 1, 1)
    for k in range(lib.OMDP_FH_OBI_GAPS + 1):
        data(a, A, 3 + 2 * k, 1)         # each skips one MSN
    assert a.missed == 1 and a.n_gaps == lib.OMDP_FH_OBI_GAPS


def test_a_gap_both_streams_passed_is_lost_exactly() -> None:
    a = new_arb()
    control(a, A, "C", 0)
    data(a, A, 1, 4)
    data(a, B, 1, 4)
    data(a, A, 9, 2)                     # 5..8 lost on A
    assert data(a, B, 7, 2) == [7, 8]    # B lost 5, 6 (lost on both), brings 7, 8
    assert a.missed == 2
    data(a, B, 9, 2)
    assert (a.missed, a.accepted) == (2, 9)


def test_a_gap_the_other_stream_jumps_over_is_lost_at_once() -> None:
    a = new_arb()
    data(a, A, 1, 4)
    data(a, A, 9, 2)
    assert data(a, B, 9, 2) == []        # B passed 5..8 without them
    assert a.missed == 4


def test_a_pending_gap_is_lost_at_the_end_of_the_stream() -> None:
    a = new_arb()
    data(a, A, 1, 4)
    data(a, A, 9, 2)
    assert a.missed == 0
    lib.omdp_fh_obi_arb_finish(a)
    assert a.missed == 4


def test_control_blocks_are_deduplicated_on_content_not_on_sequence() -> None:
    a = new_arb()
    control(a, A, "C", 0)
    data(a, A, 1, 99)                    # next = 100
    assert control(a, A, "K", 1, ts=5) == RESET and a.next == 2
    assert data(a, A, 2, 3) == [2, 3, 4]
    assert control(a, B, "K", 1, ts=5) == DUP      # B's copy: same content
    assert a.next == 5 and a.resets == 2
    assert control(a, A, "K", 1, ts=5) == RESET    # both copies were in: the same bytes again are a new block
    assert control(a, B, "C", 0) == DUP            # B's start of day, long after A's


def test_line_integrity_reports_the_loss_up_to_its_number_and_uses_none() -> None:
    a = new_arb()
    control(a, A, "C", 0)
    data(a, A, 1, 3)                     # next = 4
    assert control(a, A, "N", 6) == INTEGRITY      # 4, 5, 6 never came
    assert a.next == 7 and a.accepted == 4
    assert control(a, B, "N", 6) == DUP
    assert a.duplicates == 0             # an H N is not a message delivered
    lib.omdp_fh_obi_arb_finish(a)
    assert a.missed == 3
    assert control(a, A, "N", 6, ts=2) == INTEGRITY and a.next == 7  # a heartbeat with no loss


@pytest.mark.parametrize("kind", list("EFJLMP"))
def test_other_control_types_are_delivered_and_report_a_loss_only_above_next(kind: str) -> None:
    a = new_arb()
    control(a, A, "C", 0)
    data(a, A, 1, 3)                     # next = 4
    assert control(a, A, kind, 4) == ACCEPT and a.next == 5
    assert control(a, A, kind, 3, ts=2) == ACCEPT and a.next == 5   # behind (Q3): no loss, next kept
    assert control(a, A, kind, 8, ts=3) == ACCEPT and a.next == 9   # 5..7 skipped
    lib.omdp_fh_obi_arb_finish(a)
    assert a.missed == 3


def test_an_empty_block_uses_no_numbers() -> None:
    a = new_arb()
    data(a, A, 1, 2)
    assert data(a, A, 3, 0) == [] and a.next == 3


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(st.integers(1, 20), min_size=1, max_size=60), seed=st.integers(0, 2**32 - 1),
       loss=st.floats(0, 0.4))
def test_every_msn_delivered_once_unless_lost_on_both_streams(blocks: list[int], seed: int, loss: float) -> None:
    """A and B carry the same blocks, each losing some at random, interleaved with B up to
    five blocks behind: every MSN one stream brought is delivered exactly once, the others
    counted missed (a tail lost on both streams is no gap: nothing after it shows it)."""
    import random
    rng = random.Random(seed)
    starts, s = [], 1
    for n in blocks:
        starts.append((s, n))
        s += n
    kept = {c: [b for b in starts if rng.random() >= loss] for c in (A, B)}
    events = []
    for c, lag in ((A, 0), (B, rng.choice([0, 1, 2, 5]))):
        events += [(i + lag + 0.5 * c, c, b) for i, b in enumerate(starts) if b in kept[c]]
    a = new_arb()
    control(a, A, "C", 0)
    control(a, B, "C", 0)
    got: list[int] = []
    for _, c, (s0, n) in sorted(events):
        got += data(a, c, s0, n)
    lib.omdp_fh_obi_arb_finish(a)
    brought = {s0 + i for c in (A, B) for s0, n in kept[c] for i in range(n)}
    assert sorted(got) == sorted(brought) and len(got) == len(set(got))
    last = max(brought, default=0)
    assert a.missed == last - len(brought)
    assert a.accepted == len(brought) + 1


MS = 1_000_000


def test_a_gap_the_other_stream_does_not_fill_in_time_is_declared_lost_by_the_timeout() -> None:
    """Spec 9.2's short timeout, on an injected clock: pending until gap_timeout_ns after it
    opened, then lost; the other stream's late copy is then a duplicate, not delivered."""
    a = new_arb()
    assert a.gap_timeout_ns == lib.OMDP_FH_OBI_GAP_TIMEOUT_NS
    lib.omdp_fh_obi_arb_expire(a, 100 * MS)
    control(a, A, "C", 0)
    data(a, A, 1, 4)
    assert data(a, A, 9, 2) == [9, 10]   # A lost 5..8 at t = 100 ms
    lib.omdp_fh_obi_arb_expire(a, 100 * MS + a.gap_timeout_ns - 1)
    assert (a.n_gaps, a.missed, a.timed_out) == (1, 0, 0)
    lib.omdp_fh_obi_arb_expire(a, 50 * MS)  # the clock never goes back
    lib.omdp_fh_obi_arb_expire(a, 100 * MS + a.gap_timeout_ns)
    assert (a.n_gaps, a.missed, a.timed_out) == (0, 4, 4)
    assert data(a, B, 5, 4) == []        # too late: counted duplicate
    assert (a.filled, a.duplicates, a.accepted) == (0, 4, 7)


def test_a_gap_filled_within_the_timeout_is_not_lost() -> None:
    a = new_arb()
    a.gap_timeout_ns = 2 * MS
    control(a, A, "C", 0)
    lib.omdp_fh_obi_arb_expire(a, 10 * MS)
    data(a, A, 1, 2)
    data(a, A, 5, 1)                     # A lost 3..4 at 10 ms
    lib.omdp_fh_obi_arb_expire(a, 11 * MS)
    data(a, A, 6, 1)                     # A lost nothing more; a second gap opens on B at 11 ms:
    data(a, B, 1, 2)
    assert data(a, B, 3, 2) == [3, 4]    # filled within 2 ms
    assert data(a, B, 7, 1) == [7]       # B jumped 6 (A had it: no gap), next = 8
    lib.omdp_fh_obi_arb_expire(a, 100 * MS)
    assert (a.missed, a.timed_out, a.filled, a.n_gaps) == (0, 0, 2, 0)


def test_gaps_time_out_oldest_first_each_from_its_own_opening() -> None:
    a = new_arb()
    a.gap_timeout_ns = 5 * MS
    control(a, A, "C", 0)
    lib.omdp_fh_obi_arb_expire(a, 0)
    data(a, A, 3, 1)                     # 1..2 pending from 0 ms
    lib.omdp_fh_obi_arb_expire(a, 3 * MS)
    data(a, A, 10, 1)                    # 4..9 pending from 3 ms
    lib.omdp_fh_obi_arb_expire(a, 5 * MS)
    assert (a.n_gaps, a.timed_out) == (1, 2)
    lib.omdp_fh_obi_arb_expire(a, 8 * MS - 1)
    assert (a.n_gaps, a.timed_out) == (1, 2)
    lib.omdp_fh_obi_arb_expire(a, 8 * MS)
    assert (a.n_gaps, a.timed_out, a.missed) == (0, 8, 8)


def test_no_timeout_waits_for_the_other_stream() -> None:
    a = new_arb()
    a.gap_timeout_ns = 0
    control(a, A, "C", 0)
    data(a, A, 5, 1)
    lib.omdp_fh_obi_arb_expire(a, 10**18)
    assert (a.n_gaps, a.missed) == (1, 0)
    assert data(a, B, 1, 4) == [1, 2, 3, 4]
    assert (a.missed, a.filled) == (0, 4)
