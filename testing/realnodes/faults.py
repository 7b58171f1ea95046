"""Faults of the real-node environment, each made in the real data path and undone by ``none``:

``unhealthy-device[:N]``  the node's device plugin reports its first N GPUs (default 1)
                          Unhealthy; the kubelet drops them from allocatable
``stopped-kubelet``       the node's kubelet is frozen (SIGSTOP): no status, no lease, the node
                          controller marks the node NotReady after its grace period; ``none``
                          resumes it (SIGCONT) and the node turns Ready again
``slow-link:RATE``        a token-bucket filter (``tc tbf``) on the node's pod bridge, inside the
                          environment's namespace, limits traffic towards the node's pods to
                          RATE (``100mbit``, ``1gbit``, ...)
``dropped-path:PEER``     every packet between the node's pods and PEER's pods is dropped
                          (``iptables`` DROP in the namespace's FORWARD chain, both ways): each
                          node is healthy alone and with any other node, but a workload spanning
                          both never hears from the other side (a fabric fault, not a node's)
``killed-rank``           every workload rank (a process of the nccl-tests stand-in or a
                          training worker) that starts in one of the node's pods is sent SIGKILL
                          while the fault is on: its launcher sees a rank die mid-collective, on
                          each retry too
``killed-rank-once``      like ``killed-rank`` for the first attempt only: the ranks the watcher
                          first finds on the node are killed, then it stops, so the launcher's
                          in-place retry runs clean
``oom-kill``              each container in which a workload rank starts on the node has its
                          memory capped just above what it holds then: the rank outgrows it and
                          the kernel's OOM killer ends it (:mod:`.oomkill`); ``none`` lifts
                          the caps
``none``                  clears every fault of the node
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REAL_FAULT_KINDS = (
    "unhealthy-device",
    "stopped-kubelet",
    "slow-link",
    "dropped-path",
    "killed-rank",
    "killed-rank-once",
    "oom-kill",
    "none",
)
#: the faults that strike the workload's ranks as they start (a watcher on the node's pod cgroups)
RANK_FAULTS = ("killed-rank", "killed-rank-once", "oom-kill")
_RATE = re.compile(r"^[1-9][0-9]{0,5}(kbit|mbit|gbit)$")
_RATE_UNIT = {"kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


def burst_bytes(rate: str) -> int:
    """The token bucket a ``slow-link:RATE`` filter gets: 10 ms of the rate, at least 8 KiB.

    A bucket as large as the messages a collective's small sizes move lets those sizes through
    at full speed, so a pair behind the filter measures a healthy bandwidth there, and a
    threshold over the best size passes; a small bucket keeps every size behind the rate. 8 KiB
    is above an Ethernet frame and above one kernel tick of 4mbit at 100 Hz.
    """
    found = _RATE.match(rate)
    if found is None:
        raise RealFaultError(f"{rate!r} is no rate such as 100mbit (kbit, mbit or gbit)")
    bits = int(rate[: -len(found.group(1))]) * _RATE_UNIT[found.group(1)]
    return max(8 * 1024, bits // 8 // 100)


#: a node name as Kubernetes allows it (a DNS subdomain), the peer of ``dropped-path``
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class RealFaultError(ValueError):
    """A real-node fault spec that cannot be understood."""


@dataclass(frozen=True)
class RealFault:
    """One node's fault: ``kind``, the GPU count of ``unhealthy-device``, the rate of ``slow-link``,
    the other end of ``dropped-path``."""

    kind: str
    count: int = 0
    rate: str = ""
    peer: str = ""

    def __str__(self) -> str:
        if self.kind == "unhealthy-device":
            return f"unhealthy-device:{self.count}"
        if self.kind == "slow-link":
            return f"slow-link:{self.rate}"
        if self.kind == "dropped-path":
            return f"dropped-path:{self.peer}"
        return self.kind


def parse_real_fault(text: str) -> RealFault:
    kind, _, arg = text.strip().partition(":")
    if kind not in REAL_FAULT_KINDS:
        raise RealFaultError(f"unknown fault {kind!r} on real nodes; choose from {', '.join(REAL_FAULT_KINDS)}")
    if kind == "unhealthy-device":
        if arg and not arg.isdigit():
            raise RealFaultError(f"fault {text!r}: the device count must be a whole number")
        count = int(arg) if arg else 1
        if count < 1:
            raise RealFaultError(f"fault {text!r}: at least one device")
        return RealFault(kind, count=count)
    if kind == "slow-link":
        if not _RATE.match(arg):
            raise RealFaultError(f"fault {text!r}: give a rate such as slow-link:100mbit (kbit, mbit or gbit)")
        return RealFault(kind, rate=arg)
    if kind == "dropped-path":
        if not _NODE_NAME.match(arg):
            raise RealFaultError(f"fault {text!r}: name the other end of the path, e.g. dropped-path:h100-onprem-1")
        return RealFault(kind, peer=arg)
    if arg:
        raise RealFaultError(f"fault {text!r}: {kind} takes no argument")
    return RealFault(kind)


def parse_real_assignment(spec: str) -> tuple[str, RealFault]:
    """``NODE=KIND[:ARG]`` → (node, fault)."""
    node, sep, fault = spec.partition("=")
    if not sep or not node.strip() or not fault.strip():
        raise RealFaultError(f"fault {spec!r} must look like NODE=KIND")
    return node.strip(), parse_real_fault(fault)
