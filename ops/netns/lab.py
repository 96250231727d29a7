"""Hosts emulated on one machine: network namespaces joined by veth pairs to a bridge.

``NamespaceLab(n)`` makes namespaces ``<prefix>h0`` .. ``<prefix>h<n-1>``, each with
loopback and an ``eth0`` at ``10.77.0.<i+1>/24``, cabled to a bridge that lives in a
namespace of its own (``<prefix>sw``), so this machine's own interfaces are never touched.
A topology then places partitions on them (``[hosts.fh] netns = "<prefix>h0", address =
"10.77.0.1"``); the runtime gives each such host its own mount namespace with a private
/dev/shm and its own PID namespace (``omdp.runtime.hosts``), so only the network joins
them. Used by the multi-host tests and ``omdp bench transport --hosts netns``; needs
root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2; ``lab_unavailable()`` says why not.

``python -m ops.netns.lab up N PREFIX`` makes such a lab and leaves it for topologies that
name its hosts (``ops/topologies/opra_hosts_*.toml`` use ``up 2 omdp``: ``omdph0``,
``omdph1``); ``down N PREFIX`` removes it.
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from types import TracebackType

SUBNET = "10.77.0"


class NamespaceLabError(RuntimeError):
    """An ``ip`` command failed: the message has the command and its error output."""


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise NamespaceLabError(f"ip {' '.join(args)}: {r.stderr.strip() or f'exit status {r.returncode}'}")


def lab_unavailable() -> str | None:
    """Why namespaces cannot be made here (no iproute2/util-linux, not permitted), or None."""
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool!r} is not installed (iproute2 / util-linux)"
    probe = f"omdp-probe-{secrets.token_hex(3)}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return f"cannot create network namespaces here ({r.stderr.strip()}); needs root"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return None


@dataclass
class NamespaceLab:
    """``n`` namespace hosts on one bridge; a context manager that removes them on exit."""

    n: int
    prefix: str = field(default_factory=lambda: f"o{secrets.token_hex(2)}")
    hosts: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)

    @property
    def switch(self) -> str:
        """The namespace holding the bridge."""
        return f"{self.prefix}sw"

    def up(self) -> NamespaceLab:
        """Make the namespaces, the bridge and the cables; on failure remove what was made."""
        if not 1 <= self.n <= 200:
            raise ValueError(f"namespace lab of {self.n} hosts: 1 to 200")
        try:
            _ip("netns", "add", self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i in range(self.n):
                host, addr = f"{self.prefix}h{i}", f"{SUBNET}.{i + 1}"
                a, b = f"{self.prefix}a{i}", f"{self.prefix}b{i}"
                _ip("netns", "add", host)
                self.hosts.append(host)
                _ip("link", "add", a, "type", "veth", "peer", "name", b)
                _ip("link", "set", a, "netns", host)
                _ip("link", "set", b, "netns", self.switch)
                _ip("-n", host, "link", "set", a, "name", "eth0")
                _ip("-n", host, "addr", "add", f"{addr}/24", "dev", "eth0")
                _ip("-n", host, "link", "set", "eth0", "up")
                _ip("-n", host, "link", "set", "lo", "up")
                _ip("-n", self.switch, "link", "set", b, "master", "br0")
                _ip("-n", self.switch, "link", "set", b, "up")
                self.addresses.append(addr)
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Remove every namespace of the lab (their veth ends go with them)."""
        for ns in [*self.hosts, self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        self.hosts.clear()
        self.addresses.clear()

    def hosts_toml(self, names: list[str] | None = None) -> str:
        """A topology's ``[hosts.*]`` tables for this lab (names default to h0, h1, ...)."""
        names = names or [f"h{i}" for i in range(self.n)]
        return "\n".join(f'[hosts.{name}]\nnetns = "{ns}"\naddress = "{addr}"\n'
                         for name, ns, addr in zip(names, self.hosts, self.addresses))

    def __enter__(self) -> NamespaceLab:
        return self.up()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.down()


def main(argv: list[str]) -> int:
    """``up N PREFIX`` / ``down N PREFIX``: a lab that outlives this command."""
    if len(argv) != 3 or argv[0] not in ("up", "down") or not argv[1].isdigit():
        print("usage: python -m ops.netns.lab up|down N PREFIX", file=sys.stderr)
        return 2
    lab = NamespaceLab(int(argv[1]), prefix=argv[2])
    if argv[0] == "down":
        lab.hosts = [f"{lab.prefix}h{i}" for i in range(lab.n)]
        lab.down()
        return 0
    why = lab_unavailable()
    if why:
        print(f"namespace lab: {why}", file=sys.stderr)
        return 1
    try:
        lab.up()
    except (NamespaceLabError, ValueError) as e:
        print(f"namespace lab {argv[2]}: {e}", file=sys.stderr)
        return 1
    print("\n".join(f"{h} {a}" for h, a in zip(lab.hosts, lab.addresses)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
