"""The report page's tables: how a cell of each kind of column is written (latencies in the
unit that reads best, ``omdp.units``: 12.3 us, 4.31 s; counts with thousands separators; a
null as n/a) and the HTML table itself, shared by every section of the page
(``report_html``, ``backtest_report``). A row whose every figure is zero says nothing (a line
with no traffic, a kind with no signals): the table leaves it out and says how many."""
from __future__ import annotations

import html
from collections.abc import Callable

from omdp.units import fmt_ns

Format = Callable[[object], str]


def _na(f: Format) -> Format:
    return lambda v: "n/a" if v is None else f(v)


US = _na(fmt_ns)
INT = _na(lambda v: f"{v:,}")
FLOAT = _na(lambda v: f"{v:,.2f}")
RATIO = _na(lambda v: f"{v:.6f}")
SHARE = _na(lambda v: f"{v:.3f}")
PCT = _na(lambda v: f"{100 * v:.2f}%")
TEXT = _na(str)
BOOL = _na(lambda v: "yes" if v else "no")
LINE = lambda v: "all" if v is None else f"{v}"  # noqa: E731
KEY = _na(lambda v: f"{v}")
"""A number that names what a row is about (a line, a rank, a window), not a figure."""

FIGURES = (US, INT, FLOAT, RATIO, SHARE, PCT)
"""The formats of figures (the other columns name what a row is about)."""


def all_zero(row: dict, cols: list[tuple[str, str, Format]]) -> bool:
    """Every figure of the row is zero (or unknown, with at least one zero)."""
    values = [row.get(k) for k, _, fmt in cols if fmt in FIGURES]
    return any(v == 0 for v in values) and all(v in (0, None) for v in values)


def html_table(rows: list[dict], cols: list[tuple[str, str, Format]], empty: str = "none") -> str:
    """``rows`` as a table of columns (key, heading, format); ``empty`` when there are none."""
    shown = [r for r in rows if not all_zero(r, cols)]
    left_out = len(rows) - len(shown)
    note = f"<p class='empty'>{left_out:,} row(s) whose every figure is zero left out</p>" if left_out else ""
    if not shown:
        return note or f"<p class='empty'>{html.escape(empty)}</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(r.get(k)))}</td>" for k, _, fmt in cols) + "</tr>" for r in shown
    )
    return f"<div class='table'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{note}"
