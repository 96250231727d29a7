"""The InfiniBand control path with pyverbs (rdma-core's Python bindings): find the device
and port, check the port is up, open the device, make the protection domain and register
one copy of a Vega region for remote writes. vega-ib's C link (vega_ib.h) then makes its
queue pair on these objects and carries the data without Python.

pyverbs is optional (docs/architecture.md principle 8): this module imports it only when called, and
every failure is an ``IbUnavailableError`` naming what is missing - no pyverbs, no
InfiniBand path in this build, "No IB devices found" (the words of rdma-core's own tests),
a device or port that does not exist, or a port that is not active. docs/infiniband.md
tells how to install pyverbs and run on soft-RoCE or a real HCA.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from omdp.native import lib
from omdp.transport.api import TransportError

NO_DEVICES = "No IB devices found"
PYVERBS_MISSING = ("pyverbs is not importable: install rdma-core's python3-pyverbs and put its package on the path "
                   "(docs/infiniband.md)")
NO_IB_BUILD = ("this build of omdp._native has no InfiniBand path (infiniband/verbs.h was missing when it was "
               "compiled: install libibverbs-dev and rebuild)")
PORT_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_DEVICE_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?::(?P<port>\d+)(?::(?P<gid>\d+))?)?$")


class IbUnavailableError(TransportError):
    """No usable InfiniBand here; the message says what is missing."""


class IbPortDownError(IbUnavailableError):
    """The chosen port exists but is not ACTIVE."""


@dataclass(frozen=True)
class IbDeviceChoice:
    """Which device, port and GID table entry a side uses (None: the first device with an
    active port; GID index 0 unless given)."""

    name: str | None = None
    port: int = 1
    gid_index: int = 0

    @classmethod
    def parse(cls, text: str | None) -> IbDeviceChoice:
        """``DEVICE[:PORT[:GID_INDEX]]`` (or None/empty: any device); ValueError naming it."""
        if not text:
            return cls()
        m = _DEVICE_RE.fullmatch(text)
        if not m:
            raise ValueError(f"InfiniBand device {text!r}: expected DEVICE[:PORT[:GID_INDEX]], e.g. mlx5_0:1:3")
        return cls(m["name"], int(m["port"] or 1), int(m["gid"] or 0))

    def __str__(self) -> str:
        return f"{self.name or '(first active)'}:{self.port}:{self.gid_index}"


def _pyverbs() -> Any:
    try:
        import pyverbs.device as device
    except ImportError:
        raise IbUnavailableError(PYVERBS_MISSING) from None
    return device


def ib_unavailable() -> str | None:
    """Why vega-ib cannot run here (no IB path built, no pyverbs, no device), or None."""
    if not hasattr(lib, "omdp_vib_open"):
        return NO_IB_BUILD
    try:
        device_names()
    except IbUnavailableError as e:
        return str(e)
    return None


def device_names() -> list[str]:
    """Names of this machine's RDMA devices; raises IbUnavailableError (NO_DEVICES) when
    there are none, as rdma-core's tests report it."""
    device = _pyverbs()
    from pyverbs.pyverbs_error import PyverbsError

    try:
        found = device.get_device_list()
    except PyverbsError:
        found = []  # libibverbs answers "Failed to get devices list" when the kernel has none
    if not found:
        raise IbUnavailableError(NO_DEVICES)
    return [d.name.decode() for d in found]


@dataclass(frozen=True)
class PortFacts:
    """What the bootstrap tells the peer about this side's port."""

    device: str
    port: int
    gid_index: int
    lid: int
    gid: bytes        # 16 bytes
    mtu: int          # enum ibv_mtu of the active MTU
    ethernet: bool    # RoCE: the peer is addressed by GID


class IbRegion:
    """One side's pyverbs objects: the opened device, its PD, and the MR over the region at
    ``address`` (``size`` bytes, local and remote write). Close after the C link."""

    def __init__(self, choice: IbDeviceChoice, address: int, size: int) -> None:
        device = _pyverbs()
        import pyverbs.enums as e
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.pyverbs_error import PyverbsError

        names = device_names()
        self.ctx: Any = None
        self.pd: Any = None
        self.mr: Any = None
        try:
            name = self._pick(device, names, choice)
            where = f"device {name} port {choice.port}"
            try:
                self.ctx = device.Context(name=name)
                attr = self.ctx.query_port(choice.port)
            except PyverbsError as err:
                raise IbUnavailableError(f"{where}: cannot open or query it: {err}") from None
            if attr.state != e.IBV_PORT_ACTIVE:
                raise IbPortDownError(f"{where} is {PORT_STATES.get(attr.state, attr.state)}, not ACTIVE "
                                      "(cable, subnet manager, or the rxe link's interface down?)")
            ethernet = attr.link_layer == e.IBV_LINK_LAYER_ETHERNET
            try:
                gid = bytes.fromhex(self.ctx.query_gid(choice.port, choice.gid_index).gid.replace(":", ""))
            except PyverbsError as err:
                raise IbUnavailableError(f"{where}: GID index {choice.gid_index}: {err}") from None
            if ethernet and not any(gid):
                raise IbUnavailableError(f"{where}: GID index {choice.gid_index} is empty; RoCE needs a GID "
                                         "(choose another index: DEVICE:PORT:GID_INDEX)")
            self.facts = PortFacts(name, choice.port, choice.gid_index, int(attr.lid), gid, int(attr.active_mtu),
                                   ethernet)
            try:
                self.pd = PD(self.ctx)
                self.mr = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE, address=address)
            except PyverbsError as err:
                raise IbUnavailableError(f"{where}: protection domain or memory registration of {size} bytes "
                                         f"failed: {err} (locked memory limit: ulimit -l?)") from None
            self.context_ptr = _pointer(self.ctx, "context", where)
            self.pd_ptr = _pointer(self.pd, "pd", where)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _pick(device: Any, names: list[str], choice: IbDeviceChoice) -> str:
        import pyverbs.enums as e
        from pyverbs.pyverbs_error import PyverbsError

        if choice.name is not None:
            if choice.name not in names:
                raise IbUnavailableError(f"no InfiniBand device {choice.name!r} (this machine has {', '.join(names)})")
            return choice.name
        for name in names:
            try:
                ctx = device.Context(name=name)
                try:
                    if ctx.query_port(choice.port).state == e.IBV_PORT_ACTIVE:
                        return name
                finally:
                    ctx.close()
            except PyverbsError:
                continue
        raise IbPortDownError(f"no device has port {choice.port} ACTIVE (devices: {', '.join(names)})")

    @property
    def lkey(self) -> int:
        """The local key of the region's registration."""
        return int(self.mr.lkey)

    @property
    def rkey(self) -> int:
        """The key the peer writes with."""
        return int(self.mr.rkey)

    def close(self) -> None:
        """Deregister, free the PD, close the device (after the C link closed its QP)."""
        for obj in (self.mr, self.pd, self.ctx):
            if obj is not None:
                obj.close()
        self.mr = self.pd = self.ctx = None


def _pointer(obj: Any, attr: str, where: str) -> int:
    """The C address pyverbs exposes for ``obj`` (``Context.context``, ``PD.pd``)."""
    value = getattr(obj, attr, None)
    if not isinstance(value, int) or value == 0:
        raise IbUnavailableError(f"{where}: this pyverbs does not expose {type(obj).__name__}.{attr} as an "
                                 "address (vega-ib needs the C addresses of the context and PD it builds its queue pair on)")
    return value
