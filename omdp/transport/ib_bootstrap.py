"""vega-ib's connection setup: a small TCP exchange of what each side's queue pair needs.

One JSON line each way per step, at most ``MAX_LINE`` bytes, every field checked:

  sender   -> receiver  hello    {"magic", "version", "knobs": {queue_size, max_message, mutex, wait, on_full,
                                  signal_every}}
  receiver -> sender    welcome  {"verdict": true, "layout": hex, "side": {qp_num, psn, lid, gid, rkey, addr, mtu,
                                  ethernet}}   (verdict false and "why" when the knobs differ)
  sender   -> receiver  side     {"side": {...}}          the sender's QP is at RTS
  receiver -> sender    ready    {"ready": true}           the receiver's QP is at RTS

after which the socket stays open as the liveness link (vega_ib.h: one goodbye byte, or
the end of the stream). The receiver's ``layout`` is the first bytes of its region (the
ring's layout block: stride, nonce); the sender lays out its copy from it.
"""
from __future__ import annotations

import json
import socket
import time
from typing import Any

from omdp.transport.api import TransportError

MAGIC = "omdp-vega-ib"
VERSION = 1
MAX_LINE = 16384
SIDE_FIELDS = {"qp_num": int, "psn": int, "lid": int, "gid": str, "rkey": int, "addr": int, "mtu": int,
               "ethernet": bool}


class BootstrapError(TransportError):
    """The peer's setup messages were missing, late or malformed: names the peer and field."""


def send_line(sock: socket.socket, msg: dict[str, Any]) -> None:
    """One JSON line."""
    sock.sendall(json.dumps(msg, separators=(",", ":")).encode() + b"\n")


def recv_line(sock: socket.socket, peer: str, deadline: float, buf: bytearray) -> dict[str, Any]:
    """The next JSON line from ``sock`` by ``deadline`` (time.monotonic); BootstrapError
    when it is late, too long, not an object, or the peer hung up."""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BootstrapError(f"vega-ib peer {peer}: no setup message within the timeout")
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError as e:
            raise BootstrapError(f"vega-ib peer {peer}: connection failed during setup: {e}") from None
        if not chunk:
            raise BootstrapError(f"vega-ib peer {peer}: hung up during setup")
        buf += chunk
        if len(buf) > MAX_LINE:
            raise BootstrapError(f"vega-ib peer {peer}: setup message longer than {MAX_LINE} bytes")
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    try:
        msg = json.loads(line)
    except json.JSONDecodeError as e:
        raise BootstrapError(f"vega-ib peer {peer}: setup message is not JSON ({e})") from None
    if not isinstance(msg, dict):
        raise BootstrapError(f"vega-ib peer {peer}: setup message is not an object")
    return msg


def side_message(qp_num: int, psn: int, lid: int, gid: bytes, rkey: int, addr: int, mtu: int,
                 ethernet: bool) -> dict[str, Any]:
    """This side's queue pair and region, as the peer needs them."""
    return {"qp_num": qp_num, "psn": psn, "lid": lid, "gid": gid.hex(), "rkey": rkey, "addr": addr, "mtu": mtu,
            "ethernet": ethernet}


def check_side(msg: Any, peer: str) -> dict[str, Any]:
    """A peer's side message with every field present and typed; BootstrapError otherwise."""
    if not isinstance(msg, dict):
        raise BootstrapError(f"vega-ib peer {peer}: 'side' is not an object")
    for name, kind in SIDE_FIELDS.items():
        value = msg.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BootstrapError(f"vega-ib peer {peer}: side.{name} missing or not {kind.__name__} ({value!r})")
    if not 0 <= msg["qp_num"] < 1 << 24 or not 0 <= msg["psn"] < 1 << 24 or not 0 <= msg["lid"] < 1 << 16:
        raise BootstrapError(f"vega-ib peer {peer}: qp_num/psn/lid out of range")
    if not 0 <= msg["rkey"] < 1 << 32 or not 0 <= msg["addr"] < 1 << 64 or not 1 <= msg["mtu"] <= 5:
        raise BootstrapError(f"vega-ib peer {peer}: rkey/addr/mtu out of range")
    try:
        gid = bytes.fromhex(msg["gid"])
    except ValueError:
        gid = b""
    if len(gid) != 16:
        raise BootstrapError(f"vega-ib peer {peer}: side.gid is not 16 bytes of hex")
    return msg


def hello(knobs: dict[str, Any]) -> dict[str, Any]:
    """The sender's first message."""
    return {"magic": MAGIC, "version": VERSION, "knobs": knobs}


def check_hello(msg: dict[str, Any], knobs: dict[str, Any], peer: str) -> str | None:
    """Why the receiver refuses this hello (None: accepted)."""
    if msg.get("magic") != MAGIC or msg.get("version") != VERSION:
        return f"not a vega-ib version {VERSION} hello"
    theirs = msg.get("knobs")
    if theirs != knobs:
        return f"channel knobs differ: sender {theirs}, receiver {knobs}"
    return None
