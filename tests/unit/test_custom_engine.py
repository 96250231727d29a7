"""The Python API for custom engines: sampling, stamps, signal records, read-only batches."""
from __future__ import annotations

import numpy as np
import pytest

from decision_engines.custom import CustomEngine
from decision_engines.quote_records import build_quotes
from decision_engines.signal_record import SIG_CUSTOM
from omdp.record import RF_SAMPLED, RF_SIGNAL, RT_SIGNAL

P = 1_000_000_000


def batch(n: int, first_seq: int = 1) -> np.ndarray:
    spread = (np.arange(n) % 5) * P // 10
    return build_quotes(root=b"ABC  ", expiry=20080419, strike_px=25 * P, put_call=b"P", participant=b"X",
                        bid_px=P, bid_size=5, offer_px=P + spread, offer_size=5, underlying_id=9,
                        msg_seq=np.arange(first_seq, first_seq + n))


class Wide(CustomEngine):
    def process_batch(self, records: np.ndarray) -> None:
        spread = records["offer_px"] - records["bid_px"]
        self.signal(spread >= 3 * P // 10, kind=SIG_CUSTOM + 2, value=spread / P, ref_hi=3 * P // 10)


def test_signals_carry_the_message_and_what_was_checked() -> None:
    e = Wide(sample_every=0, engine_id=4)
    out = e.run(batch(10))
    sig = out.signals
    assert list(sig["msg_seq"]) == [4, 5, 9, 10]
    assert (sig["hdr"]["type"] == RT_SIGNAL).all() and (sig["hdr"]["flags"] == RF_SIGNAL).all()
    assert (sig["kind"] == SIG_CUSTOM + 2).all() and (sig["engine"] == 4).all()
    assert sig["value"] == pytest.approx([0.3, 0.4, 0.3, 0.4])
    assert (sig["ref_hi"] == 3 * P // 10).all() and (sig["bid_px"] == P).all()
    assert (sig["root"] == b"ABC  ").all() and (sig["put_call"] == ord("P")).all()
    st = sig["hdr"]["stamps"]
    assert (st["de_in"] > 0).all() and (st["de_out"] >= st["de_in"]).all()
    assert len(out.samples) == 0


def test_sampling_is_exactly_one_in_n_across_batches() -> None:
    e = Wide(sample_every=4)
    seqs = []
    for first in range(1, 40, 7):
        out = e.run(batch(7, first))
        seqs += list(out.samples["msg_seq"])
        assert (out.samples["hdr"]["flags"] & RF_SAMPLED).all()
    assert seqs == list(range(4, 43, 4))
    assert e.processed == 42


def test_sample_that_raised_a_signal_is_flagged() -> None:
    out = Wide(sample_every=5).run(batch(10))
    assert list(out.samples["msg_seq"]) == [5, 10]
    assert (out.samples["hdr"]["flags"] & RF_SIGNAL).all()


def test_batch_is_read_only_and_signal_only_inside() -> None:
    class Writer(CustomEngine):
        def process_batch(self, records: np.ndarray) -> None:
            records["bid_px"] = 0

    with pytest.raises(ValueError):
        Writer().run(batch(3))
    with pytest.raises(RuntimeError):
        Wide().signal(np.array([0]))


def test_signal_fields_per_selected_record() -> None:
    class Picks(CustomEngine):
        def process_batch(self, records: np.ndarray) -> None:
            self.signal(np.array([1, 3]), value=np.array([7.0, 8.0]))

    out = Picks(sample_every=0).run(batch(6))
    assert list(out.signals["msg_seq"]) == [2, 4] and list(out.signals["value"]) == [7.0, 8.0]
