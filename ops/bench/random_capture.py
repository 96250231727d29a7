"""Random valid OPRA FAST V2 packets for the decode benchmark, built in memory.

A stand-in for a synthetic capture when none is at hand (``omdp bench decode
--random-messages N``): quotes ('k') with every BBO appendage kind and a few last sales,
grouped in bursts on one root as an underlying's tick re-quotes its series, cut into
packets of about 14 messages by the codec's stream encoder. Not a market model: prices
and sizes are uniform draws.
"""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_fast import encode_stream, new_records

EXCHANGES = np.frombuffer(b"ABCIPX", dtype=np.uint8)
MONTH_CODES = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWX", dtype=np.uint8)
BBO = np.frombuffer(b"AAAAAAAAABDEFHIJL MNPCGKO", dtype=np.uint8)
SALE_SHARE = 0.0005


def _roots(rng: np.random.Generator, n: int) -> np.ndarray:
    letters = rng.integers(ord("A"), ord("Z") + 1, size=(n, 5), dtype=np.uint8)
    lengths = rng.integers(1, 5, size=n)
    letters[np.arange(5)[None, :] >= lengths[:, None]] = ord(" ")
    return letters.view("S5").reshape(n)


def random_records(n: int, seed: int = 1) -> np.ndarray:
    """``n`` valid quote-heavy records in bursts per root, with contiguous sequence numbers."""
    rng = np.random.default_rng(seed)
    r = new_records(n)
    roots = _roots(rng, 500)
    burst_len = rng.integers(3, 40, size=n // 3 + 1)
    burst_root = rng.integers(0, roots.size, size=burst_len.size)
    root_idx = np.repeat(burst_root, burst_len)[:n]
    quote = rng.random(n) >= SALE_SHARE
    r["category"] = np.where(quote, ord("k"), ord("a"))
    r["msg_type"] = ord(" ")
    r["participant"] = rng.choice(EXCHANGES, n)
    r["retrans"] = ord(" ")
    r["msg_seq"] = np.arange(1, n + 1)
    r["time"] = 93000000 + (np.arange(n) // 4000)  # HHMMSSmmm: about 4,000 messages per millisecond
    r["root"] = roots[root_idx]
    r["root_len"] = 5
    r["month_code"] = rng.choice(MONTH_CODES, n)
    r["expiry_day"] = rng.integers(15, 22, n)
    r["expiry_year"] = rng.choice([8, 9, 10], n, p=[0.8, 0.15, 0.05])
    r["strike_den"] = ord("A")
    r["strike"] = rng.integers(2, 120, n) * 25  # 5.0 .. 297.5 in steps of 2.5
    r["strike_code"] = rng.integers(ord("A"), ord("Z") + 1, n)
    r["premium_den"] = ord("B")
    bid = rng.integers(5, 5000, n)
    r["bid"] = bid
    r["offer"] = bid + rng.integers(5, 60, n)
    r["bid_size"] = rng.integers(1, 500, n)
    r["offer_size"] = rng.integers(1, 500, n)
    r["session"] = ord(" ")
    r["bbo_ind"] = np.where(quote, rng.choice(BBO, n), 0)
    r["best_bid_part"] = rng.choice(EXCHANGES, n)
    r["best_bid_den"] = ord("B")
    r["best_bid"] = bid + rng.integers(0, 5, n)
    r["best_bid_size"] = rng.integers(1, 900, n)
    r["best_offer_part"] = rng.choice(EXCHANGES, n)
    r["best_offer_den"] = ord("B")
    r["best_offer"] = r["offer"] - rng.integers(0, 5, n)
    r["best_offer_size"] = rng.integers(1, 900, n)
    r["volume"] = np.where(quote, 0, rng.integers(1, 100, n))
    r["premium"] = np.where(quote, 0, bid)
    return r


def random_packets(n_messages: int, seed: int = 1, mean_per_packet: float = 14.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(buf, offsets, lengths)`` of packets holding ``n_messages`` random valid messages."""
    rng = np.random.default_rng(seed + 1)
    wanted = np.clip(rng.poisson(mean_per_packet - 1, size=4096) + 1, 1, 60)
    buf, offsets, lengths, _ = encode_stream(random_records(n_messages, seed), b"", wanted)
    return np.frombuffer(buf, dtype=np.uint8), offsets, lengths


def random_obi_blocks(n_messages: int, seed: int = 1, mean_per_packet: float = 14.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The messages of ``random_packets`` as OPRA binary (OBI v6) blocks, cut alike: short
    quotes where OPRA would send them (nearly every quote here), a block time per message."""
    from feedhandlers.opra_obi_stream import as_obi, encode_stream as obi_stream

    rng = np.random.default_rng(seed + 1)
    wanted = np.clip(rng.poisson(mean_per_packet - 1, size=4096) + 1, 1, 60)
    recs = as_obi(random_records(n_messages, seed))
    ts = 1_771_857_000 * 10**9 + np.arange(n_messages, dtype=np.int64) * 250  # 09:30 ET, 4 messages/us
    buf, offsets, lengths, _ = obi_stream(recs, b"", wanted, ts_ns=ts)
    return np.frombuffer(buf, dtype=np.uint8), offsets, lengths
