"""Who may read the dashboard: which addresses count as this host only, and the warning an
operator gets when the dashboard listens beyond it."""
from __future__ import annotations

import pytest

from ops.dashboard.access import exposure_warning, is_loopback


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True), ("LOCALHOST", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.7", False), ("fe80::1", False), ("dash.example", False),
])
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_exposed_address_warns_and_names_the_token() -> None:
    assert exposure_warning("127.0.0.1", 8000, None) is None
    assert exposure_warning("::1", 8000, "t") is None
    text = exposure_warning("0.0.0.0", 8000, None)
    assert text is not None and "0.0.0.0:8000" in text and "--read-token" in text and "OMDP_DASHBOARD_TOKEN" in text
    guarded = exposure_warning("10.0.0.7", 9000, "t")
    assert guarded is not None and "10.0.0.7:9000" in guarded and "plain HTTP" in guarded
