"""How often each underlying ticks, so that the feed carries the requested message rate
with the activity skew of the day.

Each underlying's weight is its share of the day's quote messages. A pilot measures how
many quote messages one tick of each underlying makes (its series whose quotes change
on every listing exchange, averaged over an up and a down step), and the tick rate is the
underlying's share of the target rate divided by that. The generator then corrects the
overall level chunk by chunk (``RateController``), so the capture hits the target rate
whatever the pilot missed (first quotes of the day, anomalies, shocks).
"""
from __future__ import annotations

import numpy as np

from ops.synth.pricing import SeriesPricer
from ops.synth.quoting import QuoteBook, quote
from ops.synth.series import SeriesTable


def messages_per_tick(table: SeriesTable, book: QuoteBook, pricer: SeriesPricer, spot: np.ndarray,
                      step_cents: np.ndarray) -> np.ndarray:
    """Expected quote messages of each series at one tick of its underlying (opening price,
    averaged over a step up and a step down)."""
    series = np.arange(len(table), dtype=np.int64)
    und = table.underlying
    base = quote(book, series, pricer.value(series, spot[und]))
    total = np.zeros(len(table))
    for sign in (1, -1):
        moved = quote(book, series, pricer.value(series, spot[und] + sign * step_cents[und] / 100.0))
        diff = np.zeros(base[0].shape, dtype=bool)
        for a, b in zip(base, moved):
            diff |= a != b
        total += (diff & book.listed).sum(axis=0)
    return total / 2.0


def tick_rates(weight: np.ndarray, per_tick: np.ndarray, quotes_per_second: float) -> np.ndarray:
    """Ticks per second of each underlying for ``quotes_per_second`` quote messages in all,
    ``per_tick`` being each underlying's messages per tick (at least half a message)."""
    share = np.asarray(weight, dtype=np.float64) / float(np.sum(weight))
    return share * quotes_per_second / np.maximum(per_tick, 0.5)


class RateController:
    """Scales all tick rates chunk by chunk so cumulative quote messages track the target.

    The next chunk asks for its own share of the target plus half the running shortfall,
    at the messages-per-unit-scale the last chunk showed; the scale moves at most 4x per
    chunk and stays within [0.05, 50].
    """

    def __init__(self, quotes_per_second: float) -> None:
        self.target_rate = quotes_per_second
        self.scale = 1.0
        self.target = 0.0
        self.produced = 0
        self._per_scale: float | None = None

    def next_scale(self, seconds: float) -> float:
        """The scale to use for a chunk of ``seconds`` of session time."""
        if self._per_scale is not None and self._per_scale > 0:
            want = self.target_rate * seconds + 0.5 * (self.target - self.produced)
            wanted_scale = max(want, 0.0) / (self._per_scale * seconds)
            self.scale = float(np.clip(wanted_scale, self.scale / 4, self.scale * 4))
            self.scale = float(np.clip(self.scale, 0.05, 50.0))
        self.target += self.target_rate * seconds
        return self.scale

    def record(self, messages: int, seconds: float, scale: float) -> None:
        """What the chunk produced at ``scale`` (quote messages over ``seconds``)."""
        self.produced += messages
        if seconds > 0 and scale > 0:
            self._per_scale = messages / (scale * seconds)
