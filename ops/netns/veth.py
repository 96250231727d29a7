"""A veth pair across two network namespaces on one host: the sending end (``tx``) in a
namespace of its own, the receiving end (``rx``) in this process's. It is how AF_XDP is
measured and tested on a machine without a spare NIC (docs/xdp.md "On one host"): the
replayer sends from inside the namespace (``ReplayConfig.netns``), the feed handler receives
here, and frames cross the pair as they would cross a wire.

Needs root (namespaces, links) and iproute2; ``xdp_veth_unavailable()`` says why not.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from types import TracebackType

from feedhandlers.xdp import xdp_built


def xdp_veth_unavailable() -> str | None:
    """None when this process can make a veth pair in a namespace and the native module has
    AF_XDP; else why not."""
    if not xdp_built():
        return "this build of omdp has no AF_XDP (libxdp-dev and libbpf-dev absent at build time)"
    if os.geteuid() != 0:
        return "AF_XDP and veth namespaces need root"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2) to make the veth pair"
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {r.stderr.strip() or f'exit status {r.returncode}'}")


@dataclass
class VethPair:
    """``tx`` in namespace ``ns`` with address ``tx_addr``, ``rx`` here with ``rx_addr``; a
    context manager that removes both on exit."""

    ns: str
    tx: str
    rx: str
    rx_addr: str
    tx_addr: str

    def xdp_attached(self) -> bool:
        """Whether an XDP program is attached to the receiving end."""
        out = subprocess.run(["ip", "-d", "link", "show", "dev", self.rx], check=True, capture_output=True,
                             text=True, timeout=30).stdout
        return "prog/xdp" in out or " xdp " in out or "xdpgeneric" in out

    def close(self) -> None:
        """Remove the pair and the namespace (the tx end goes with either)."""
        subprocess.run(["ip", "link", "del", self.rx], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True, timeout=30)

    def __enter__(self) -> VethPair:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def make_veth() -> VethPair:
    """A fresh veth pair, its names and /24 chosen at random: one end in a new namespace, the
    other here, both up with their addresses. On failure nothing is left behind."""
    tag = f"{os.getpid() % 10000:04d}{random.randint(0, 999):03d}"
    sub = random.randint(1, 250)
    pair = VethPair(ns=f"omdpx{tag}", tx=f"oxt{tag}", rx=f"oxr{tag}", rx_addr=f"10.213.{sub}.2",
                    tx_addr=f"10.213.{sub}.1")
    _ip("netns", "add", pair.ns)
    try:
        _ip("link", "add", pair.rx, "type", "veth", "peer", "name", pair.tx, "netns", pair.ns)
        _ip("addr", "add", f"{pair.rx_addr}/24", "dev", pair.rx)
        _ip("link", "set", pair.rx, "up")
        _ip("-n", pair.ns, "link", "set", pair.tx, "up")
        _ip("-n", pair.ns, "addr", "add", f"{pair.tx_addr}/24", "dev", pair.tx)
    except BaseException:
        pair.close()
        raise
    return pair
