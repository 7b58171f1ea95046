"""What a real-node environment runs, found before anything starts: the binaries built from source
(kubelet, kube-proxy, CoreDNS, the CNI plugins, the sandbox program, the GPU device plugin, by
``testing/gobuild/build.py --real``) and Debian's containerd, ctr and runc, with the
util-linux and iproute2 commands that make the namespaces. It also needs root and a cgroup
hierarchy under /sys/fs/cgroup.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import binaries
from ..errors import ControlPlaneError

SYSTEM_COMMANDS = ("containerd", "ctr", "runc", "containerd-shim-runc-v2", "nsenter", "unshare", "ip", "sysctl", "mount", "tc", "iptables")
PACKAGES = "containerd runc iproute2 iptables util-linux procps"


class ToolchainMissing(ControlPlaneError):
    """Something a real-node environment needs is missing; the message says how to get it."""


@dataclass(frozen=True)
class Tools:
    kubelet: Path
    kube_proxy: Path
    coredns: Path
    cni_bin_dir: Path
    pause: Path
    device_plugin: Path
    containerd: str
    ctr: str
    runc: str


def missing_system() -> list[str]:
    """System commands not on PATH."""
    return [c for c in SYSTEM_COMMANDS if shutil.which(c) is None]


def machine_problems() -> list[str]:
    """What this machine lacks for real nodes, each with what to do (empty: none): root, a cgroup
    hierarchy, the system tools. What is only not built yet is not among them:
    ``dev up --real`` builds it."""
    found = []
    if os.geteuid() != 0:
        found.append("real nodes need root (the kubelet, containerd and the namespaces)")
    if not Path("/sys/fs/cgroup").is_dir():
        found.append("no cgroup hierarchy at /sys/fs/cgroup")
    system = missing_system()
    if system:
        found.append(f"missing {', '.join(system)}: apt-get install --no-install-recommends {PACKAGES} (scripts/test-tools.sh does)")
    return found


def problems() -> list[str]:
    """Everything that stops a real-node environment here, each with what to do (empty: none):
    :func:`machine_problems` and the real-node binaries not built yet."""
    found = machine_problems()
    built = binaries.build_module().real_missing()
    if built:
        found.append(f"not built: {', '.join(built)}: run `python -m nvcre.testing.gobuild.build --real`")
    return found


def locate() -> Tools:
    """The tools, or :class:`ToolchainMissing` naming every missing piece."""
    found = problems()
    if found:
        raise ToolchainMissing("; ".join(found))
    module = binaries.build_module()
    return Tools(
        kubelet=Path(module.binary_path("kubelet")),
        kube_proxy=Path(module.binary_path("kube-proxy")),
        coredns=Path(module.tool_binary_path("coredns")),
        cni_bin_dir=Path(module.tool_binary_path("cni-plugins")).parent,
        pause=Path(module.pause_binary_path()),
        device_plugin=Path(module.device_plugin_binary_path()),
        containerd=str(shutil.which("containerd")),
        ctr=str(shutil.which("ctr")),
        runc=str(shutil.which("runc")),
    )
