"""A snapshot of the host state a real-node environment could change, and the difference between
two snapshots: the host network namespace's links, addresses, routes and iptables rules, the
mount table, the named network namespaces, the cgroup directories, a set of kernel settings and
the host paths the nodes mount over. ``python -m nvcre.testing.realnodes.hoststate save FILE``
and ``... compare FILE`` do it from a shell (exit 1 when something differs).

Volatile fields (counters, interface statistics, mount ids) are left out, so two snapshots of an
unchanged host are equal.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .cgroups import hierarchies
from .hostdirs import KUBELET_SYSCTLS
from .node import PRIVATE_PATHS

SYSCTLS = (
    "net.ipv4.ip_forward",
    "net.ipv4.conf.all.forwarding",
    "net.ipv6.conf.all.forwarding",
    "net.bridge.bridge-nf-call-iptables",
    "net.ipv4.conf.all.route_localnet",
    *KUBELET_SYSCTLS,
)
#: mount points other tools on a shared machine add and remove on their own
_NOISY_MOUNTS = ("/var/lib/containers/", "/run/containers/", "/run/user/")


def _run(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        return f"({argv[0]} not installed)"
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    return proc.stdout if proc.returncode == 0 else f"(exit {proc.returncode}: {proc.stderr.strip()})"


def _lines(text: str) -> list[str]:
    return sorted(line.rstrip() for line in text.splitlines() if line.strip())


def _links() -> list[str]:
    # name, flags and kind only: counters and the carrier state of idle links change on their own
    out = []
    for line in _run(["ip", "-o", "link", "show"]).splitlines():
        match = re.match(r"\d+:\s+(\S+?):\s+<([^>]*)>", line)
        if match:
            out.append(f"{match.group(1)} <{match.group(2)}>")
    return sorted(out)


def _addresses() -> list[str]:
    out = []
    for line in _run(["ip", "-o", "addr", "show"]).splitlines():
        fields = line.split()
        if len(fields) >= 4:
            out.append(f"{fields[1]} {fields[2]} {fields[3]}")
    return sorted(out)


def _iptables(command: str) -> list[str]:
    text = _run([command])
    return sorted(re.sub(r"\[\d+:\d+\]", "", line) for line in text.splitlines() if line and not line.startswith("#"))


def _mounts() -> list[str]:
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            dash = fields.index("-")
            point = fields[4]
            if any(point.startswith(prefix) for prefix in _NOISY_MOUNTS):
                continue
            out.append(f"{point} {fields[dash + 1]} {fields[3]}")
    return sorted(out)


def _cgroups() -> list[str]:
    """Each hierarchy's top-level directories, and every directory below one named ``nvcre-*``."""
    out = []
    for hierarchy in hierarchies():
        for entry in sorted(hierarchy.iterdir()):
            if not entry.is_dir():
                continue
            out.append(str(entry))
            if entry.name.startswith("nvcre-"):
                out.extend(str(d) for d in sorted(entry.rglob("*")) if d.is_dir())
    return out


def _sysctls() -> dict[str, str]:
    values = {}
    for name in SYSCTLS:
        path = Path("/proc/sys") / name.replace(".", "/")
        try:
            values[name] = path.read_text().strip()
        except OSError:
            values[name] = "(absent)"
    return values


def snapshot() -> dict[str, Any]:
    """The host state now (see the module docstring)."""
    netns_dir = Path("/run/netns")
    return {
        "links": _links(),
        "addresses": _addresses(),
        "routes": _lines(_run(["ip", "route", "show", "table", "all"])),
        "routes6": _lines(_run(["ip", "-6", "route", "show", "table", "all"])),
        "iptables": _iptables("iptables-save"),
        "ip6tables": _iptables("ip6tables-save"),
        "mounts": _mounts(),
        "netns": sorted(p.name for p in netns_dir.iterdir()) if netns_dir.is_dir() else ["(no /run/netns)"],
        "cgroups": _cgroups(),
        "sysctls": _sysctls(),
        "paths": {path: Path(path).exists() for path in PRIVATE_PATHS},
    }


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed between two snapshots, one line per change (empty: nothing)."""
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            changes += [f"{key}: added {item}" for item in new if item not in old]
            changes += [f"{key}: removed {item}" for item in old if item not in new]
        elif isinstance(old, dict) and isinstance(new, dict):
            changes += [
                f"{key}: {name} {old.get(name)!r} -> {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)
            ]
        else:
            changes.append(f"{key}: {old!r} -> {new!r}")
    return changes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Snapshot the host state a real-node environment could change, or compare with one.")
    parser.add_argument("action", choices=("save", "compare"))
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.action == "save":
        args.file.write_text(json.dumps(snapshot(), indent=1) + "\n")
        return 0
    try:
        before = json.loads(args.file.read_text())
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    changes = differences(before, snapshot())
    for line in changes:
        print(line)
    print("host unchanged" if not changes else f"{len(changes)} change(s)")
    return 1 if changes else 0


if __name__ == "__main__":
    sys.exit(main())
