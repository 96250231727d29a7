"""``omdp.units``: every latency a person reads is in the unit that reads best, with three
significant digits; the boundaries round up into the next unit instead of printing 1000 us."""
from __future__ import annotations

import pytest

from omdp.units import fmt_ns, fmt_us


@pytest.mark.parametrize(("ns", "text"), [
    (None, "n/a"), (float("nan"), "n/a"), (0, "0 ns"), (812, "812 ns"), (999.6, "1.00 us"), (1_000, "1.00 us"),
    (9_999, "10.0 us"), (12_345, "12.3 us"), (999_499, "999 us"), (999_999, "1.00 ms"), (1_250_000, "1.25 ms"),
    (4_311_744_000, "4.31 s"), (5_432_100_000_000, "5,432 s"), (-5_000, "-5.00 us"),
])
def test_a_duration_in_nanoseconds_reads_in_its_unit(ns: float | None, text: str) -> None:
    assert fmt_ns(ns) == text


def test_the_issue_figure_p99_of_4311744_us_reads_seconds() -> None:
    assert fmt_us(4_311_744) == "4.31 s" and fmt_us(None) == "n/a" and fmt_us(0.5) == "500 ns"
