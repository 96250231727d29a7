"""vega-ib's control path without an HCA: endpoints and device choices parse or fail with
their name, the bootstrap messages are checked field by field, and where no RDMA device
exists every entry point says "No IB devices found" (as rdma-core's tests do) or that
pyverbs / the C path is missing - never a hang or a crash."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.api import TransportError
from omdp.transport.ib_bootstrap import BootstrapError, check_hello, check_side, hello, recv_line, side_message
from omdp.transport.ib_verbs import IbDeviceChoice, IbUnavailableError, ib_unavailable
from omdp.transport.vega_ib import parse_ib_endpoint

SPEC = {"transport": "vega-ib", "queue_size": 8, "max_message": 256, "mutex": False, "signal_every": 4}


def test_endpoints_and_device_choices() -> None:
    assert parse_ib_endpoint("10.0.0.2:7000") == ("10.0.0.2", 7000, IbDeviceChoice())
    assert parse_ib_endpoint("h:0@mlx5_1") == ("h", 0, IbDeviceChoice("mlx5_1", 1, 0))
    assert parse_ib_endpoint("h:1@rxe0:2:3") == ("h", 1, IbDeviceChoice("rxe0", 2, 3))
    for bad in ("h", "h:x", "h:99999"):
        with pytest.raises(ValueError, match="vega-ib endpoint"):
            parse_ib_endpoint(bad)
    for bad in ("dev:", "dev:x", "dev:1:2:3", "de v"):
        with pytest.raises(ValueError, match="InfiniBand device"):
            IbDeviceChoice.parse(bad)


def test_side_messages_are_checked_field_by_field() -> None:
    good = side_message(0x1234, 77, 3, bytes(range(16)), 0xABCD, 0x7F00_0000_1000, 5, True)
    assert check_side(good, "p") == good
    for field, value in (("qp_num", 1 << 24), ("psn", -1), ("lid", "3"), ("gid", "00ff"), ("rkey", 1 << 32),
                         ("mtu", 9), ("ethernet", 1), ("addr", True)):
        with pytest.raises(BootstrapError, match=f"vega-ib peer p: .*{field}|out of range|16 bytes"):
            check_side({**good, field: value}, "p")
    with pytest.raises(BootstrapError, match="not an object"):
        check_side([good], "p")


def test_hellos_name_what_differs() -> None:
    knobs = {"queue_size": 8, "max_message": 256}
    assert check_hello(hello(knobs), knobs, "p") is None
    assert "knobs differ" in check_hello(hello({**knobs, "queue_size": 16}), knobs, "p")
    assert "not a vega-ib" in check_hello({"magic": "x"}, knobs, "p")


def test_setup_lines_that_are_late_long_or_garbled_fail_with_the_peer() -> None:
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b'{"x": 1}\n[1]\nnot json\n')
        buf = bytearray()
        assert recv_line(a, "p", time.monotonic() + 1, buf) == {"x": 1}
        with pytest.raises(BootstrapError, match="not an object"):
            recv_line(a, "p", time.monotonic() + 1, buf)
        with pytest.raises(BootstrapError, match="not JSON"):
            recv_line(a, "p", time.monotonic() + 1, buf)
        with pytest.raises(BootstrapError, match="no setup message"):
            recv_line(a, "p", time.monotonic() + 0.2, buf)
        b.sendall(b"x" * 20000)
        with pytest.raises(BootstrapError, match="longer than"):
            recv_line(a, "p", time.monotonic() + 1, bytearray())
        b.close()
        with pytest.raises(BootstrapError, match="hung up"):
            recv_line(a, "p", time.monotonic() + 1, bytearray())


def test_without_a_device_every_entry_point_says_so() -> None:
    why = ib_unavailable()
    if why is None:
        pytest.skip("this machine has an RDMA device (tests/integration/test_vega_ib_transport.py runs instead)")
    with pytest.raises(IbUnavailableError) as receiver_error:
        open_receiver(SPEC, "127.0.0.1:0")
    assert str(receiver_error.value) == why
    if not hasattr(lib, "omdp_vib_open"):
        return
    # a sender meets a well-formed receiver first, then finds no device for its own side
    server = socket.create_server(("127.0.0.1", 0))
    welcome = {"verdict": True, "layout": "00" * ffi.sizeof("omdp_vega_layout_t"),
               "side": side_message(1, 1, 1, bytes(16), 1, 4096, 3, False)}

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(json.dumps(welcome).encode() + b"\n")
            conn.recv(4096)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    with pytest.raises(IbUnavailableError) as sender_error:
        open_sender(SPEC, f"127.0.0.1:{server.getsockname()[1]}", connect_timeout=5)
    assert str(sender_error.value) == why
    t.join(5)
    server.close()


def test_an_absent_receiver_is_unreachable_by_name() -> None:
    if not hasattr(lib, "omdp_vib_open"):
        pytest.skip("this build has no InfiniBand path")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(TransportError, match=f"vega-ib receiver 127.0.0.1:{port} unreachable within 0.3 s"):
        open_sender(SPEC, f"127.0.0.1:{port}", connect_timeout=0.3)
    assert time.monotonic() - t0 < 5
