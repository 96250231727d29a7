"""The C decision engine's book, NBBO and checks against references computed here.

Named "sanitize": CI also runs this file against the ASan/UBSan build of the C core.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decision_engines.engine import MAX_OUT_PER_MSG, DecisionEngine, EngineError, split_output
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import NO_SLOT, REF_DISABLED_HI, REF_DISABLED_LO
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIG_CROSSED, SIG_LOCKED, SIG_OFF_SMILE, SIG_PARITY
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.record import RF_SAMPLED, RF_SIGNAL, RT_SIGNAL

P = 1_000_000_000
CENT = P // 100
EXCH = b"ABCIPX"
ROOT = b"JPM  \0"
EXPIRY = 20080216
NONE_BID = -(1 << 63)
NONE_ASK = (1 << 63) - 1


def engine(**kw: int) -> DecisionEngine:
    cfg = {"max_series": 64, "max_groups": 8, "sample_every": 0}
    cfg.update(kw)
    return DecisionEngine(EngineConfig(**cfg))


def quote(ex: bytes, bid: float, ask: float, *, strike: int = 40, pc: bytes = b"C", bsz: int = 10, asz: int = 10,
          **kw: object) -> np.ndarray:
    return build_quotes(root=ROOT, expiry=EXPIRY, strike_px=strike * P, put_call=pc, participant=ex,
                        bid_px=round(bid * 100) * CENT, bid_size=bsz, offer_px=round(ask * 100) * CENT,
                        offer_size=asz, underlying_id=7, **kw)


def stream(*quotes: np.ndarray) -> np.ndarray:
    out = np.concatenate(quotes)
    out["msg_seq"] = np.arange(1, len(out) + 1)
    return out


def nbbo(e: DecisionEngine, strike: int = 40, pc: bytes = b"C") -> tuple[int, int, int, int, int, int]:
    slot = e.find_series(ROOT, EXPIRY, strike * P, pc)
    assert slot is not None
    s = e.snapshot()[slot]
    return int(s["bid_px"]), int(s["bid_size"]), int(s["bid_part"]), int(s["offer_px"]), int(s["offer_size"]), int(s["offer_part"])


def reference_nbbo(book: dict[int, tuple[int, int, int, int]]) -> tuple[int, int, int, int, int, int]:
    """Best bid: highest price, then largest size, then first exchange; best offer likewise."""
    bid = (0, 0, 0)
    offer = (0, 0, 0)
    best_b = (NONE_BID, 0, -1)
    best_a = (NONE_ASK, 0, -1)
    for x in range(6):
        if x not in book:
            continue
        bp, bs, ap, as_ = book[x]
        if bp > 0 and bs > 0 and (bp > best_b[0] or (bp == best_b[0] and bs > best_b[1])):
            best_b = (bp, bs, x)
        if ap > 0 and as_ > 0 and (ap < best_a[0] or (ap == best_a[0] and as_ > best_a[1])):
            best_a = (ap, as_, x)
    if best_b[2] >= 0:
        bid = (best_b[0], best_b[1], EXCH[best_b[2]])
    if best_a[2] >= 0:
        offer = (best_a[0], best_a[1], EXCH[best_a[2]])
    return (*bid, *offer)


quote_st = st.tuples(
    st.integers(0, 3),      # series: strike 40/45 x call/put
    st.integers(0, 5),      # exchange
    st.integers(0, 30),     # bid in cents, 0 = no bid
    st.integers(0, 3),      # bid size
    st.integers(0, 30),     # offer in cents, 0 = no offer
    st.integers(0, 3),      # offer size
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quotes=st.lists(quote_st, min_size=1, max_size=120), cut=st.integers(1, 17))
def test_nbbo_matches_reference_on_random_streams(quotes: list[tuple[int, ...]], cut: int) -> None:
    arr = np.array(quotes, dtype=np.int64)
    strikes = np.where(arr[:, 0] < 2, 40, 45) * P
    pcs = np.where(arr[:, 0] % 2 == 0, ord("C"), ord("P")).astype(np.uint8)
    msgs = build_quotes(root=ROOT, expiry=EXPIRY, strike_px=strikes, put_call=pcs,
                        participant=np.frombuffer(EXCH, np.uint8)[arr[:, 1]], bid_px=arr[:, 2] * CENT,
                        bid_size=arr[:, 3], offer_px=arr[:, 4] * CENT, offer_size=arr[:, 5], underlying_id=1)
    e = engine()
    out = e.process(msgs, batch=cut)
    books: dict[int, dict[int, tuple[int, int, int, int]]] = {}
    state: dict[int, int] = {}
    expected_book_signals = []
    for i, (s, x, b, bs, a, as_) in enumerate(quotes):
        books.setdefault(s, {})[x] = (b * CENT, bs, a * CENT, as_)
        ref = reference_nbbo(books[s])
        new = 0
        if ref[0] and ref[3]:
            new = SIG_CROSSED if ref[0] > ref[3] else SIG_LOCKED if ref[0] == ref[3] else 0
        if new and not state.get(s, 0):
            expected_book_signals.append((i + 1, new))
        state[s] = new
    for s, book in books.items():
        strike = 40 if s < 2 else 45
        pc = b"C" if s % 2 == 0 else b"P"
        assert nbbo(e, strike, pc) == reference_nbbo(book)
    got = [(int(m), int(k)) for m, k in zip(out.signals["msg_seq"], out.signals["kind"]) if k != SIG_PARITY]
    assert got == expected_book_signals
    c = e.counters()
    assert c["processed"] == c["quotes"] == len(quotes)
    assert c["series"] == len(books)


def test_crossed_and_locked_signal_when_leaving_the_normal_state() -> None:
    e = engine()
    msgs = stream(
        quote(b"A", 1.00, 1.10),
        quote(b"C", 1.05, 1.20),   # normal
        quote(b"C", 1.10, 1.20),   # locked: C bid 1.10 = A offer 1.10
        quote(b"X", 1.00, 1.30),   # still locked: no new signal
        quote(b"C", 1.15, 1.20),   # now crossed: the same condition going on, no new signal
        quote(b"A", 1.00, 1.25),   # normal again
        quote(b"A", 1.00, 1.10),   # crossed (C 1.15 > A 1.10): a new signal
        quote(b"C", 1.05, 1.20),   # normal
        quote(b"I", 1.12, 1.30),   # crossed by I
    )
    out = e.process(msgs)
    sig = out.signals
    assert list(sig["kind"]) == [SIG_LOCKED, SIG_CROSSED, SIG_CROSSED]
    assert list(sig["msg_seq"]) == [3, 7, 9]
    assert sig["bid_px"][1] == 115 * CENT and sig["offer_px"][1] == 110 * CENT
    assert sig["value"][1] == pytest.approx(0.05)
    assert bytes(sig["bid_part"][1:2]) == b"C" and bytes(sig["offer_part"][1:2]) == b"A"
    assert bytes(sig["bid_part"][2:3]) == b"I" and sig["participant"][2] == ord("I")
    assert sig["participant"][0] == ord("C") and sig["root"][0] == b"JPM  "
    assert all(sig["hdr"]["type"] == RT_SIGNAL) and all(sig["hdr"]["flags"] & RF_SIGNAL)
    c = e.counters()
    assert (c["sig_locked"], c["sig_crossed"], c["signals"]) == (1, 2, 3)


def publish(e: DecisionEngine, slot: int, **limits: int) -> None:
    back = e.begin_refs()
    assert back is not None
    back["band_lo"], back["band_hi"] = REF_DISABLED_LO, REF_DISABLED_HI
    back["parity_lo"], back["parity_hi"] = REF_DISABLED_LO, REF_DISABLED_HI
    for k, v in limits.items():
        back[k][slot] = v
    e.publish_refs()


def test_band_check_flags_quotes_outside_the_band() -> None:
    e = engine()
    e.process(stream(quote(b"A", 1.00, 1.10)))
    slot = e.find_series(ROOT, EXPIRY, 40 * P, b"C")
    publish(e, slot, band_lo=90 * CENT, band_hi=120 * CENT)
    out = e.process(stream(
        quote(b"B", 1.00, 1.15),   # inside
        quote(b"C", 1.25, 1.40),   # bid 1.25 above 1.20
        quote(b"I", 0.50, 0.80),   # offer 0.80 below 0.90
        quote(b"P", 1.20, 1.30),   # at the edge: inside
    ))
    sig = out.signals
    assert list(sig["kind"]) == [SIG_OFF_SMILE, SIG_OFF_SMILE]
    assert list(sig["participant"]) == [ord("C"), ord("I")]
    assert sig["value"] == pytest.approx([0.05, 0.10])
    assert list(sig["ref_lo"]) == [90 * CENT] * 2 and list(sig["ref_hi"]) == [120 * CENT] * 2
    # The C quote also crossed the NBBO (1.25 > 1.10): one anomaly, one signal.
    assert e.counters()["sig_crossed"] == 0
    assert e.counters()["refs_published"] == 1


def test_parity_break_signals_once_per_break() -> None:
    e = engine()
    e.process(stream(quote(b"A", 2.00, 2.50), quote(b"A", 1.00, 1.10, pc=b"P")))
    call = e.find_series(ROOT, EXPIRY, 40 * P, b"C")
    put = e.find_series(ROOT, EXPIRY, 40 * P, b"P")
    snap = e.snapshot()
    assert snap["twin"][call] == put and snap["twin"][put] == call
    # Synthetic C - P: bid 2.00 - 1.10 = 0.90, offer 2.50 - 1.00 = 1.50; limits [0.85, 1.15].
    publish(e, call, parity_lo=85 * CENT, parity_hi=115 * CENT)
    out = e.process(stream(
        quote(b"A", 2.00, 2.50),                 # no break
        quote(b"B", 2.30, 2.45),                 # call bid 2.30 - put offer 1.10 = 1.20 > 1.15: break
        quote(b"C", 2.31, 2.45),                 # still broken: no new signal
        quote(b"B", 2.00, 2.45),                 # C still 2.31: broken
        quote(b"C", 2.00, 2.45),                 # back to normal
        quote(b"A", 0.70, 0.80, pc=b"P"),        # put offer 0.80: 2.00 - 0.80 = 1.20: break again
    ))
    sig = out.signals
    assert list(sig["kind"]) == [SIG_PARITY, SIG_PARITY]
    assert list(sig["msg_seq"]) == [2, 6]
    assert sig["bid_px"][0] == 120 * CENT and sig["value"][0] == pytest.approx(0.05)
    assert list(sig["ref_lo"]) == [85 * CENT] * 2 and list(sig["ref_hi"]) == [115 * CENT] * 2
    assert list(sig["put_call"]) == [ord("C"), ord("P")]


def test_sampling_is_exactly_one_in_n_across_batches() -> None:
    e = engine(sample_every=7)
    msgs = stream(*[quote(EXCH[i % 6:i % 6 + 1], 1.00, 1.10 + 0.01 * (i % 3)) for i in range(100)])
    out = e.process(msgs, batch=3)
    assert len(out.samples) == 100 // 7
    assert list(out.samples["msg_seq"]) == list(range(7, 101, 7))
    assert all(out.samples["hdr"]["flags"] & RF_SAMPLED)
    assert e.counters()["sampled"] == 14
    out2 = e.process(stream(*[quote(b"A", 1.0, 1.1)] * 5))
    assert list(out2.samples["msg_seq"]) == [5]  # messages 101..105 overall: the 105th


def test_stamps_are_monotonic_in_what_the_engine_forwards() -> None:
    e = engine(sample_every=2)
    msgs = stream(*[quote(b"A", 1.00, 1.10), quote(b"C", 1.20, 1.30)] * 10)
    from omdp.clock import now_ns
    t0 = now_ns()
    msgs["hdr"]["stamps"]["fh_in"] = t0 - 2000
    msgs["hdr"]["stamps"]["fh_out"] = t0 - 1000
    before = msgs.copy()
    out = e.process(msgs, batch=4)
    assert np.array_equal(msgs, before), "the input batch is read-only"
    for recs in (out.samples, out.signals):
        st_ = recs["hdr"]["stamps"]
        assert len(recs) and (st_["fh_out"] <= st_["de_in"]).all() and (st_["de_in"] <= st_["de_out"]).all()
        assert (st_["de_in"] >= t0).all()


def test_table_full_is_counted_and_nothing_breaks() -> None:
    e = engine(max_series=3)
    msgs = stream(*[quote(b"A", 1.0, 1.1, strike=k) for k in (10, 20, 30, 40, 50)], quote(b"B", 1.0, 1.2, strike=20))
    out = e.process(msgs)
    c = e.counters()
    assert (c["series"], c["table_full"], c["quotes"], c["processed"]) == (3, 2, 4, 6)
    assert len(out.signals) == 0
    assert e.find_series(ROOT, EXPIRY, 50 * P, b"C") is None


def test_bad_records_are_counted_and_skipped() -> None:
    e = engine(sample_every=1)
    good = quote(b"A", 1.0, 1.1)
    bad_type = quote(b"A", 1.0, 1.1)
    bad_type["hdr"]["type"] = 99
    bad_part = quote(b"K", 1.0, 1.1)   # no exchange of OPRA's table
    unrouted = quote(b"A", 1.0, 1.1)
    unrouted["underlying_id"] = 0xFFFFFFFF
    bad_pc = quote(b"A", 1.0, 1.1)
    bad_pc["put_call"] = 0
    bad_expiry = quote(b"A", 1.0, 1.1)
    bad_expiry["expiry"] = 20081301
    huge = quote(b"B", 1.0, 1.1)
    huge["offer_px"] = 1 << 62
    trade = quote(b"A", 1.0, 1.1)
    trade["category"] = ord("a")
    out = e.process(stream(good, bad_type, bad_part, unrouted, bad_pc, bad_expiry, huge, trade))
    c = e.counters()
    assert c["bad_record"] == 1 and c["bad_participant"] == 1 and c["unrouted"] == 1
    assert c["bad_series"] == 2 and c["bad_price"] == 1 and c["other"] == 1
    assert c["processed"] == 7 and c["quotes"] == 2 and c["sampled"] == 7
    assert nbbo(e)[3] == 110 * CENT  # the huge offer was ignored
    assert len(out.samples) == 7


def test_bbo_indicator_and_appendages_are_checked() -> None:
    e = engine()
    msgs = stream(
        quote(b"A", 1.00, 1.20, bbo_ind=b"F"),                       # contains best bid and offer: ok
        quote(b"C", 1.05, 1.30, bbo_ind=b"E"),                       # contains best bid, offer unchanged: ok
        quote(b"X", 0.90, 1.25, bbo_ind=b"K", best_offer_part=b"A",   # no best bid: wrong (bid mismatch);
              best_offer_px=120 * CENT, best_offer_size=10),          # offer appendage A 1.20x10: ok
        quote(b"X", 0.90, 1.25, bbo_ind=b"M", best_bid_part=b"C",     # bid appendage C 1.04: wrong price
              best_bid_px=104 * CENT, best_bid_size=10),
        quote(b"B", 0.95, 1.25, bbo_ind=b"A"),                       # no change to either: ok
        quote(b"B", 0.95, 1.25, bbo_ind=b"Z"),                       # not an indicator
    )
    e.process(msgs)
    c = e.counters()
    assert c["bbo_checked"] == 5
    assert c["bbo_bid_mismatch"] == 2
    assert c["bbo_offer_mismatch"] == 0
    assert c["bbo_bad_indicator"] == 1


def test_output_full_returns_early_and_loses_nothing() -> None:
    e = engine(sample_every=1)
    msgs = stream(*[quote(b"A", 1.0, 1.1)] * 10)
    out = np.zeros(MAX_OUT_PER_MSG + 300, dtype=np.uint8)
    consumed, used = e.process_batch(msgs, out, 0)
    assert consumed == 2 and used == 2 * OPRA_MSG_DTYPE.itemsize
    assert e.counters()["out_full_stops"] == 1
    assert list(split_output(out, used).samples["msg_seq"]) == [1, 2]
    with pytest.raises(EngineError):
        e.process_batch(msgs, np.zeros(MAX_OUT_PER_MSG - 8, dtype=np.uint8), 0)


def test_refs_double_buffer_waits_for_the_hot_path() -> None:
    e = engine()
    assert e.begin_refs() is not None
    e.publish_refs()
    assert e.begin_refs() is None, "a second publish before any batch must wait"
    e.process(stream(quote(b"A", 1.0, 1.1)))
    assert e.begin_refs() is not None


def test_snapshot_reports_groups_and_missing_sides() -> None:
    e = engine()
    e.process(stream(quote(b"A", 0.0, 0.10, bsz=0), quote(b"A", 1.0, 1.1, strike=45, pc=b"P")))
    snap = e.snapshot()
    assert list(snap["bid_px"]) == [0, 100 * CENT] and list(snap["bid_part"]) == [0, ord("A")]
    assert list(snap["twin"]) == [NO_SLOT, NO_SLOT]
    g = e.groups()
    assert len(g) == 1 and g["underlying_id"][0] == 7 and g["expiry"][0] == EXPIRY


@pytest.mark.parametrize("max_series", [64, 1 << 17])
def test_lazily_zeroed_engine_matches_a_prefaulted_one(max_series: int) -> None:
    """The engine's memory is fresh zero mappings, touched where used (replay) or pre-faulted
    (live): both must produce the same output, books and counters, small tables and tables of
    2 MiB and more (2 MiB aligned, huge pages asked for), and be freed cleanly."""
    rng = np.random.default_rng(7)
    n = 3000
    msgs = build_quotes(root=ROOT, expiry=EXPIRY, strike_px=rng.integers(30, 60, n) * P,
                        put_call=np.where(rng.integers(0, 2, n) == 0, ord("C"), ord("P")).astype(np.uint8),
                        participant=np.frombuffer(EXCH, np.uint8)[rng.integers(0, 6, n)],
                        bid_px=rng.integers(1, 30, n) * CENT, bid_size=rng.integers(1, 5, n),
                        offer_px=rng.integers(1, 30, n) * CENT, offer_size=rng.integers(1, 5, n), underlying_id=3)
    msgs["msg_seq"] = np.arange(1, n + 1)
    results = []
    for prefault in (False, True):
        e = DecisionEngine(EngineConfig(max_series=max_series, max_groups=8, sample_every=7), prefault=prefault)
        out = e.process(msgs, batch=97)
        for recs in (out.samples, out.signals):
            recs["hdr"]["stamps"] = 0  # wall-clock stamps: the only field that may differ
        results.append((out.samples.tobytes(), out.signals.tobytes(), e.snapshot().tobytes(), e.counters()))
        e.close()
    assert results[0] == results[1]
    assert results[0][3]["quotes"] == n
