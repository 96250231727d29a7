"""Today's rate profile: the figures the capture is scaled to, and the 10 ms burst profile.

``--rate 1x`` is the mean of a profile whose 10 ms peak is ``PEAK_MSGS_PER_S`` (issue 38:
plan for about 120 million messages per second) at the configured peak/mean ratio, so the
mean at 1x is ``PEAK_MSGS_PER_S / peak_ratio`` and the peak stays 120 M/s whatever the
ratio. The profile is a multiplier per 10 ms bucket with mean 1 and maximum ``peak_ratio``:
a slowly wandering base level plus bursts (an underlying's move re-quoted by every
exchange) that rise in one bucket and decay over a few, one of them as high as the ratio
allows, solved so that the maximum over the mean is exactly the ratio.
"""
from __future__ import annotations

import numpy as np

PEAK_MSGS_PER_S = 120e6
"""Issue 38: recipients plan for peaks of about 120 M messages/s (over the 96 lines)."""
LINES = 96
"""Spec 2.2: regular-session lines 1..96 (since 2024-02-05)."""
DEFAULT_PEAK_RATIO = 8.0
"""10 ms peak over the mean, ours (the 2008 synth's 10 ms peak is 7.3x its mean)."""
BUCKET_NS = 10_000_000
BURSTS_PER_SECOND = 4.0
BURST_DECAY = 0.45
"""A burst's level falls to this share from one 10 ms bucket to the next."""


def mean_msgs_per_s(rate: float, peak_ratio: float) -> float:
    """Messages per second over all lines at ``--rate rate``."""
    return rate * PEAK_MSGS_PER_S / peak_ratio


def burst_profile(rng: np.random.Generator, n_buckets: int, peak_ratio: float) -> np.ndarray:
    """Rate multiplier of each 10 ms bucket: mean 1, maximum ``peak_ratio`` (>= 1)."""
    if n_buckets <= 0:
        return np.zeros(0)
    if peak_ratio <= 1.0 or n_buckets == 1:
        return np.ones(n_buckets)
    # base: log-AR(1) wander, +-25% over a second
    eps = rng.normal(0.0, 0.05, n_buckets)
    log_base = np.empty(n_buckets)
    acc = 0.0
    for i in range(n_buckets):  # n_buckets is 100 per second of capture: cheap
        acc = 0.97 * acc + eps[i]
        log_base[i] = acc
    base = np.exp(log_base)
    base /= base.mean()
    bursts = np.zeros(n_buckets)
    starts = np.flatnonzero(rng.random(n_buckets) < BURSTS_PER_SECOND * BUCKET_NS / 1e9)
    tallest = int(rng.integers(0, n_buckets))
    heights = rng.uniform(0.2, 0.8, starts.size)
    kernel = BURST_DECAY ** np.arange(8)
    for s, h in zip(np.append(starts, tallest).tolist(), np.append(heights, 1.0).tolist()):
        seg = kernel[: n_buckets - s]
        bursts[s : s + seg.size] += h * seg
    # smallest burst scale a with max(base + a*bursts) / mean(...) = ratio (bisection: the
    # ratio grows with a towards max(bursts)/mean(bursts)); below the base's own ratio,
    # the base is flattened instead
    def ratio(a: float, b: np.ndarray) -> float:
        p = b + a * bursts
        return float(p.max() / p.mean())

    if ratio(0.0, base) >= peak_ratio:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if ratio(0.0, 1.0 + mid * (base - 1.0)) < peak_ratio:
                lo = mid
            else:
                hi = mid
        p = 1.0 + lo * (base - 1.0)
        return p / p.mean()
    limit = float(bursts.max() / bursts.mean())
    if peak_ratio >= limit:
        raise ValueError(f"peak_ratio {peak_ratio:g} is more than a capture of {n_buckets} buckets of 10 ms can show "
                         f"(at most {limit:.0f}); make the capture longer or the ratio smaller")
    lo, hi = 0.0, 1.0
    while ratio(hi, base) < peak_ratio:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if ratio(mid, base) < peak_ratio:
            lo = mid
        else:
            hi = mid
    p = base + hi * bursts
    return p / p.mean()
