"""The report page's tables: how a cell of each kind of column is written (latencies in µs,
counts with thousands separators, a null as n/a) and the HTML table itself, shared by every
section of the page (``report_html``, ``backtest_report``)."""
from __future__ import annotations

import html
from collections.abc import Callable

Format = Callable[[object], str]


def _na(f: Format) -> Format:
    return lambda v: "n/a" if v is None else f(v)


US = _na(lambda v: f"{v / 1_000:,.2f}")
INT = _na(lambda v: f"{v:,}")
FLOAT = _na(lambda v: f"{v:,.2f}")
RATIO = _na(lambda v: f"{v:.6f}")
SHARE = _na(lambda v: f"{v:.3f}")
PCT = _na(lambda v: f"{100 * v:.2f}%")
TEXT = _na(str)
BOOL = _na(lambda v: "yes" if v else "no")
LINE = lambda v: "all" if v is None else f"{v}"  # noqa: E731


def html_table(rows: list[dict], cols: list[tuple[str, str, Format]], empty: str = "none") -> str:
    """``rows`` as a table of columns (key, heading, format); ``empty`` when there are none."""
    if not rows:
        return f"<p class='empty'>{html.escape(empty)}</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(r.get(k)))}</td>" for k, _, fmt in cols) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
