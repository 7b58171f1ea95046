"""Host paths and kernel settings the environment has to touch, recorded so it can put them back.

- The paths each node mounts a private directory over (:data:`node.PRIVATE_PATHS`) must exist on
  the host as mount points; those that did not exist are made and, at the end, removed again (they
  stay empty: the nodes only ever write into their private copies).
- The kubelet sets a few kernel settings at start (``vm.overcommit_memory``, ``kernel.panic`` ...)
  that are not per network namespace; their values are saved before the first kubelet starts and
  written back after the last one stops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

#: the kernel settings the kubelet writes when ``protectKernelDefaults`` is false
KUBELET_SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def save_sysctls(names: Iterable[str] = KUBELET_SYSCTLS) -> dict[str, str]:
    saved = {}
    for name in names:
        try:
            saved[name] = _sysctl_path(name).read_text().strip()
        except OSError:
            continue
    return saved


def restore_sysctls(saved: Mapping[str, str]) -> list[str]:
    """Write the saved values back; return the names that could not be restored."""
    failed = []
    for name, value in saved.items():
        path = _sysctl_path(name)
        try:
            if path.read_text().strip() != value:
                path.write_text(value + "\n")
        except OSError:
            failed.append(name)
    return failed


def make_mount_points(paths: Iterable[str]) -> list[str]:
    """Create the missing ``paths`` (and missing parents); return every directory made, deepest first."""
    made: list[str] = []
    for raw in paths:
        path = Path(raw)
        missing = [p for p in (path, *path.parents) if not p.exists()]
        for directory in reversed(missing):
            directory.mkdir()
            made.append(str(directory))
    return sorted(set(made), key=lambda p: len(Path(p).parts), reverse=True)


def remove_made(made: Iterable[str]) -> list[str]:
    """Remove the directories :func:`make_mount_points` made (deepest first); return those left."""
    left = []
    for raw in sorted(made, key=lambda p: len(Path(p).parts), reverse=True):
        try:
            Path(raw).rmdir()
        except FileNotFoundError:
            continue
        except OSError:
            left.append(raw)
    return left
