"""The replay's text options: rates, lines, copies, drops, targets, and their errors."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ops.replay.config import ReplayConfig, ReplayConfigError, line_ranges, parse_copies, parse_drops, parse_lines
from ops.replay.rates import PAPER_1X_PPS, RateError, RateSpec
from ops.replay.service import netns_prefix


@pytest.mark.parametrize("text,value", [("10x", 10.0), ("0.5x", 0.5), (" 2.5X ", 2.5), ("1e1x", 10.0)])
def test_rate_parses(text: str, value: float) -> None:
    spec = RateSpec.parse(rate=text)
    assert spec.kind == "rate" and spec.value == value
    assert spec.target_pps(recorded_pps=1.0) == value * PAPER_1X_PPS


@pytest.mark.parametrize("text", ["10", "x", "fast", "-2x", "0x", "nanx", "infx", "10xx", ""])
def test_rate_that_is_not_a_rate(text: str) -> None:
    with pytest.raises(RateError, match="rate"):
        RateSpec.parse(rate=text)


def test_exactly_one_rate_option() -> None:
    with pytest.raises(RateError, match="exactly one"):
        RateSpec.parse()
    with pytest.raises(RateError, match="exactly one"):
        RateSpec.parse(rate="1x", pps=100)
    assert RateSpec.parse(speed="2").target_pps(recorded_pps=1000.0) == 2000.0
    assert RateSpec.parse(pps=240000).target_pps(recorded_pps=5.0) == 240000.0
    with pytest.raises(RateError, match="above 0"):
        RateSpec.parse(pps="-1")
    with pytest.raises(RateError, match="not a number"):
        RateSpec.parse(speed="quick")


def test_lines_copies_drops() -> None:
    assert parse_lines("1-3,7, 5-5") == (1, 2, 3, 5, 7)
    assert parse_lines("24") == (24,)
    assert line_ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8" and parse_lines(line_ranges([1, 2, 3, 5])) == (1, 2, 3, 5)
    for bad in ("0", "3-1", "1-100", "a", "1,,2"):
        with pytest.raises(ReplayConfigError):
            parse_lines(bad)
    assert parse_copies("b,a") == ("A", "B")
    with pytest.raises(ReplayConfigError):
        parse_copies("C")
    assert parse_drops("A:0.001,B:0.0005") == {"A": 0.001, "B": 0.0005}
    for bad in ("A", "C:0.1", "A:x", "A:1.5"):
        with pytest.raises(ReplayConfigError):
            parse_drops(bad)


def test_config_rules(tmp_path: Path) -> None:
    rate = RateSpec.parse(rate="1x")
    cfg = ReplayConfig(capture_dir=tmp_path, rate=rate, lines="1-2", drops="A:0.01")
    assert cfg.lines == (1, 2) and cfg.copies_sent == ("A", "B") and cfg.copies_mask == 3
    assert cfg.drop_thresholds() == (int(0.01 * 2**64), 0)
    ring = ReplayConfig(capture_dir=tmp_path, rate=rate, target="ring:feed0")
    assert ring.ring_name == "feed0" and ring.copies_sent == ("A",)
    with pytest.raises(ValidationError, match="not sent"):
        ReplayConfig(capture_dir=tmp_path, rate=rate, copies="A", drops="B:0.1")
    with pytest.raises(ValidationError, match="ring:NAME"):
        ReplayConfig(capture_dir=tmp_path, rate=rate, target="tcp")
    with pytest.raises(ValidationError, match="IPv4"):
        ReplayConfig(capture_dir=tmp_path, rate=rate, interface="lo")
    with pytest.raises(ValidationError, match="power of two"):
        ReplayConfig(capture_dir=tmp_path, rate=rate, intended_capacity=1000)


def test_data_root_follows_the_layout(tmp_path: Path) -> None:
    cap = tmp_path / "data" / "captures" / "2008-02-04"
    cap.mkdir(parents=True)
    cfg = ReplayConfig(capture_dir=cap, rate=RateSpec.parse(rate="1x"))
    assert cfg.data_root() == (tmp_path / "data").resolve()


@pytest.mark.parametrize("kwargs,fragment", [
    ({"rate": "1e308x"}, "--rate '1e308x' is too fast: at most 41666.7x"),
    ({"rate": "1e-300x"}, "--rate '1e-300x' is too slow"),
    ({"pps": "1e308"}, "--pps '1e308' is too fast: at most 1e+09"),
    ({"pps": "1e-9"}, "--pps '1e-9' is too slow"),
    ({"speed": "1e300"}, "--speed '1e300' is too fast"),
])
def test_rates_the_pacing_cannot_represent(kwargs: dict, fragment: str) -> None:
    with pytest.raises(RateError) as e:
        RateSpec.parse(**kwargs)
    assert fragment in str(e.value)


def test_rate_bounds_on_a_capture() -> None:
    import numpy as np

    from ops.replay.rates import MAX_PPS
    from ops.replay.schedule import Schedule

    sched = Schedule(pkts=np.zeros(0), sources=[], control_buf=b"", lap_span=10_000_000, recorded_timing=True,
                     recorded_pps=1e300, data_offsets=np.arange(10), line_packets={1: 10})
    with pytest.raises(RateError, match=r"--speed speed 1e\+08 asks for .* at most 1e\+09 packets/s"):
        sched.scale_for(RateSpec.parse(speed="1e8"))
    fastest = RateSpec.parse(rate=f"{MAX_PPS / PAPER_1X_PPS}x")
    assert sched.scale_for(fastest) > 0


def test_http_rate_request_is_bounded() -> None:
    from ops.replay.http_api import RateRequest

    with pytest.raises(RateError, match="at most"):
        RateRequest(rate="1e308x").spec()


@pytest.mark.parametrize("netns", ["a b", "x;y", "n" * 65])
def test_a_sender_namespace_that_is_not_a_name_is_refused(tmp_path: Path, netns: str) -> None:
    with pytest.raises(ValidationError, match="netns"):
        ReplayConfig(capture_dir=tmp_path, rate=RateSpec.parse(rate="1x"), netns=netns)


def test_a_sender_namespace_that_does_not_exist_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="netns 'omdp-no-such-ns-41': no such network namespace"):
        netns_prefix("omdp-no-such-ns-41")
    assert netns_prefix("") == []

