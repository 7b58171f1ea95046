"""Namespaces held by processes, never by mounts: the environment's network namespace and each
node's private mount namespace live as long as a holder process does, so nothing is mounted on
the host to keep them, and they vanish with the last process inside them.

Also the thread-local ``setns`` the forwarders use to open a socket inside the environment's
network namespace from this process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..errors import ControlPlaneError

CLONE_NEWNET = 0x40000000
NSENTER = "nsenter"
UNSHARE = "unshare"


class NamespaceError(ControlPlaneError):
    """A namespace could not be made, entered or configured."""


def _setns(fd: int, nstype: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, nstype) != 0:
        err = ctypes.get_errno()
        raise NamespaceError(f"setns failed: {os.strerror(err)}")


@contextlib.contextmanager
def entered_netns(path: str | Path) -> Iterator[None]:
    """Run the block with this thread inside the network namespace at ``path``.

    Only the calling thread moves; sockets made inside keep the namespace after it returns."""
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    target = os.open(str(path), os.O_RDONLY)
    try:
        _setns(target, CLONE_NEWNET)
        try:
            yield
        finally:
            _setns(own, CLONE_NEWNET)
    finally:
        os.close(target)
        os.close(own)


def socket_in(path: str | Path, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A new socket that belongs to the network namespace at ``path``."""
    with entered_netns(path):
        return socket.socket(family, kind)


def netns_argv(netns: str | Path, argv: Sequence[str]) -> list[str]:
    """``argv`` run inside the network namespace at ``netns`` (and no other namespace)."""
    return [NSENTER, f"--net={netns}", "--", *argv]


def node_argv(holder_pid: int, argv: Sequence[str]) -> list[str]:
    """``argv`` run in a node holder's mount and network namespaces."""
    return [NSENTER, f"--target={holder_pid}", "--mount", "--net", "--", *argv]


def run_in(netns: str | Path, argv: Sequence[str], *, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run a short command (``ip``, ``tc``, ``iptables``) inside the environment's network namespace."""
    full = netns_argv(netns, argv)
    try:
        proc = subprocess.run(full, capture_output=True, text=True, check=False, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NamespaceError(f"`{shlex.join(argv)}` in the environment's namespace failed: {exc}") from None
    if check and proc.returncode != 0:
        raise NamespaceError(f"`{shlex.join(argv)}` in the environment's namespace failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


def netns_holder_argv() -> list[str]:
    """A process that makes a new network namespace and sleeps in it until killed."""
    return [UNSHARE, "--net", "--", "sleep", "infinity"]


def mount_holder_argv(netns: str | Path, binds: Sequence[tuple[Path, Path]], cgroup_procs: Sequence[Path]) -> list[str]:
    """A process joining ``cgroup_procs``, then holding a private mount namespace (inside ``netns``) in
    which each ``(source, target)`` directory is bind-mounted before it sleeps until killed."""
    steps = [f"echo $$ > {shlex.quote(str(procs))}" for procs in cgroup_procs]
    steps += [f"mount --bind {shlex.quote(str(source))} {shlex.quote(str(target))}" for source, target in binds]
    steps.append("exec sleep infinity")
    script = " && ".join(steps)
    return netns_argv(netns, [UNSHARE, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script])


def in_cgroups(cgroup_procs: Sequence[Path], argv: Sequence[str]) -> list[str]:
    """``argv`` started after its process joined every ``cgroup.procs`` file given."""
    script = 'while [ "$1" != "--" ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "nvcre-node", *(str(p) for p in cgroup_procs), "--", *argv]


def ns_path(pid: int, kind: str = "net") -> Path:
    return Path(f"/proc/{pid}/ns/{kind}")
