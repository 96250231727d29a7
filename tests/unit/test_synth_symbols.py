"""Pre-2010 OPRA symbology: strike letters, strike bands, month codes, made roots."""
from __future__ import annotations

import numpy as np

from ops.synth.symbols import RootNamer, main_root, month_codes, strike_band, strike_codes


def test_strike_codes_of_the_standard_table() -> None:
    strikes = [5, 40, 100, 105, 140, 200, 7.5, 12.5, 32.5, 107.5]
    codes = strike_codes(np.array([int(k * 1000) for k in strikes]))
    assert bytes(codes).decode() == "AHTAHTUVZU"


def test_strikes_without_a_letter_take_the_one_below() -> None:
    codes = strike_codes(np.array([41_000, 37_500, 2_500]))
    assert bytes(codes).decode() == "HGT"


def test_strike_bands_split_at_whole_hundreds() -> None:
    assert strike_band(np.array([5_000, 100_000, 100_500, 200_000, 1_400_000])).tolist() == [0, 0, 1, 1, 13]


def test_month_codes() -> None:
    codes = month_codes(np.array([1, 12, 1, 7]), np.array([False, False, True, True]))
    assert bytes(codes).decode() == "ALMS"


def test_root_namer_never_repeats_and_prefers_letters() -> None:
    namer = RootNamer(np.random.default_rng(1), {"VAA"})
    made = [namer.fresh("V") for _ in range(700)]
    assert len(set(made)) == 700 and "VAA" not in made
    assert all(r.startswith("V") for r in made[:675]) and not made[-1].startswith("V")
    assert main_root("MSFT", namer) == "MSQ"
    assert main_root("IBM", namer) == "IBM"
