"""--universe: the fixed-width listed-options file, on a small file written here."""
from __future__ import annotations

from pathlib import Path

import pytest

from ops.synth.listed_options import ListedOptionsError, listed_universe, parse_line, read_listed_options


def _record(root: str, und: str, company: str, exch: str, limit: int, typ: str) -> str:
    line = f"{root:<7}{und:<7}{company:<31.31}{exch:<12}{limit * 100:012d} {'000000000':<10}{typ:<3}"
    assert len(line) == 83
    return line


RECORDS = [
    _record("AAQ", "AAPL", "Apple Inc", "ABCIPX", 250_000, "EU"),
    _record("VAA", "AAPL", "Apple Inc (09LPS)", "ABCIPX", 250_000, "EL"),
    _record("WAA", "AAPL", "Apple Inc (10LPS)", "ABCIPX", 250_000, "EL"),
    _record("XYZ", "XYZ", "Xyz Corp", "CX", 25_000, "EU"),
    _record("OLD", "XYZ", "Xyz Corp (08LPS)", "CX", 25_000, "EL"),
    _record("SPX", "SPX", "CBOE S&P 500 INDEX", "C", 0, "IU"),
    _record("1AAQ02", "AAPL", "Apple flex", "ABCIPX", 250_000, "EF"),
    _record("RAI1C", "RAI", "Reynolds future", "O", 0, "SF"),
    _record("QQQ", "QQQQ", "PowerShares QQQ Trust", "ABCIPXQ", 900_000, "EU"),
]


@pytest.fixture()
def listed_file(tmp_path: Path) -> Path:
    path = tmp_path / "listed.txt"
    path.write_text("\n".join(RECORDS) + "\n")
    return path


def test_kept_records(listed_file: Path) -> None:
    recs = read_listed_options(listed_file)
    assert [r.root for r in recs] == ["AAQ", "VAA", "WAA", "XYZ", "OLD", "SPX", "QQQ"]
    by = {r.root: r for r in recs}
    assert by["VAA"].leaps and by["VAA"].leaps_year == 2009 and by["WAA"].leaps_year == 2010
    assert by["QQQ"].exchanges == "ABCIPX" and by["QQQ"].position_limit == 900_000
    assert by["SPX"].kind == "index" and by["XYZ"].exchanges == "CX"


def test_universe_from_the_file(listed_file: Path) -> None:
    uni = listed_universe(listed_file, 2008)
    syms = [u.symbol for u in uni.underlyings]
    assert syms == ["AAPL", "QQQQ", "SPX", "XYZ"]
    aapl = uni.underlyings[0]
    assert aapl.spot == 133.0 and aapl.penny and aapl.exchanges == "ABCIPX"
    assert sorted(uni.roots[r].leaps_year for r in aapl.roots) == [0, 2009, 2010]
    xyz = uni.underlyings[3]
    assert [uni.roots[r].leaps_year for r in xyz.roots] == [0, 0]  # an expired LEAPS year is a regular root
    assert uni.namer is None and uni.source == "file:listed.txt"
    heavy = sum(u.weight for u in uni.underlyings if u.symbol in ("AAPL", "QQQQ", "SPX"))
    assert heavy / sum(u.weight for u in uni.underlyings) == pytest.approx(0.6)


def test_bad_layout_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(RECORDS[0] + "\n" + RECORDS[3][:50] + "\n")
    with pytest.raises(ListedOptionsError, match="bad.txt:2"):
        read_listed_options(path)
    with pytest.raises(ListedOptionsError, match="position limit"):
        parse_line(RECORDS[0][:57] + "x" * 12 + RECORDS[0][69:], 7, "f")
