"""AF_XDP queue names (``IFACE:QUEUE``), shared by the feed handler's ``receive = "xdp"`` and
the replayer's AF_XDP sender (docs/xdp.md).

The C side is built only where libxdp's and libbpf's headers existed at build time; without
them it refuses at start with that reason, and the socket paths stay as they are.
"""
from __future__ import annotations

import re

from omdp.native import lib

_SPEC = re.compile(r"^([A-Za-z0-9_.:@-]{1,15}):(\d{1,5})$")
IFNAME_MAX = 15
"""Characters of an interface name (IF_NAMESIZE less its NUL)."""


def parse_xdp_queue(spec: str, field: str = "xdp") -> tuple[str, int]:
    """``"IFACE:QUEUE"`` as (interface name, receive/transmit queue); a ValueError naming
    ``field`` and the reason when it is not one."""
    m = _SPEC.match(spec)
    if not m:
        raise ValueError(f"{field} {spec!r}: expected IFACE:QUEUE (an interface name of at most "
                         f"{IFNAME_MAX} characters, a colon, a queue number), e.g. 'eth0:0'")
    return m.group(1), int(m.group(2))


def xdp_built() -> bool:
    """Whether this build of the native module has AF_XDP (libxdp and libbpf were there)."""
    return hasattr(lib, "OMDP_FH_XDP_BUILT")
