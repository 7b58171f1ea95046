"""Node faults of the simulated cluster: parsing ``NODE=KIND`` specs and what each does.

Kinds:

``slow-link[:factor]``  the node's links run at ``factor`` (default 0.1) of nominal bandwidth
``bad-link:PEER``       the path between this node and ``PEER`` runs at a tenth of nominal
                        bandwidth: each node is healthy alone and in any group without the
                        other, slow only in a group holding both (a fabric fault, not a node's)
``nccl-crash``          an NCCL error on this node makes the workload exit non-zero
``crash-once``          like ``nccl-crash`` for the first workload played on the node, then healthy
                        (a transient fault: what checkpoint restarts exist for)
``hang``                the workload on this node never finishes
``corrupt-data``        the collective of a group holding this node returns wrong values: the
                        nccl-tests rows print a non-zero ``#wrong`` and the run ends ``Out of
                        bounds values : N FAILED``, yet the workload exits 0 (a launcher that
                        loses the rank's exit status), so only the log tells
``nan-loss``            a training run on a group holding this node diverges half-way: from then
                        on Megatron prints ``lm loss: NAN`` and counts ``number of nan
                        iterations``, yet keeps going and exits 0, so only the log tells
``imex-down``           the node's IMEX daemon never joins a ComputeDomain: a pod claiming the
                        domain's channel there never starts its program (on GB200/GB300)
``xid``                 once work runs on the node, a GPU health condition appears and the node
                        is cordoned, as GPU health agents do
``no-capacity``         allocatable GPUs drop to 0, so new pods stay Unschedulable
``cordon``              the node is cordoned (``spec.unschedulable: true``)
``none``                clears every fault of the node

The patch bodies here are pure; the cluster applies them through the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FAULT_KINDS = (
    "slow-link",
    "bad-link",
    "nccl-crash",
    "crash-once",
    "hang",
    "corrupt-data",
    "nan-loss",
    "imex-down",
    "xid",
    "no-capacity",
    "cordon",
    "none",
)
DEFAULT_SLOW_FACTOR = 0.1
#: what a group holding both ends of a bad link measures, as a share of nominal bandwidth
BAD_LINK_FACTOR = 0.1
XID_CONDITION = "NVSentinelGPUHealthy"
FAULT_ANNOTATION = "sim.nvcre.io/fault"


class FaultError(ValueError):
    """A fault spec that cannot be understood."""


@dataclass(frozen=True)
class Fault:
    """One node's fault: ``kind``, for ``slow-link`` the link quality, for ``bad-link`` the peer."""

    kind: str
    factor: float = 1.0
    peer: str = ""

    def __str__(self) -> str:
        if self.kind == "slow-link":
            return f"slow-link:{self.factor:g}"
        if self.kind == "bad-link":
            return f"bad-link:{self.peer}"
        return self.kind

    @property
    def link_quality(self) -> float:
        return self.factor if self.kind == "slow-link" else 1.0


NO_FAULT = Fault("none")


def parse_fault(kind: str) -> Fault:
    """``slow-link``, ``slow-link:0.5``, ``xid``... as a :class:`Fault`."""
    text = kind.strip()
    base, _, arg = text.partition(":")
    if base not in FAULT_KINDS:
        raise FaultError(f"unknown fault {text!r}; choose from {', '.join(FAULT_KINDS)}")
    if base == "slow-link":
        try:
            factor = float(arg) if arg else DEFAULT_SLOW_FACTOR
        except ValueError:
            raise FaultError(f"fault {text!r}: the slow-link factor must be a number") from None
        if not 0 < factor <= 1:
            raise FaultError(f"fault {text!r}: the slow-link factor must be in (0, 1]")
        return Fault("slow-link", factor)
    if base == "bad-link":
        peer = arg.strip()
        if not peer:
            raise FaultError(f"fault {text!r}: bad-link needs the node at the other end (bad-link:PEER)")
        return Fault("bad-link", BAD_LINK_FACTOR, peer)
    if arg:
        raise FaultError(f"fault {text!r}: {base} takes no argument")
    return Fault(base)


def group_quality(faults: Mapping[str, Fault]) -> float:
    """The link quality a group of nodes (``node -> fault``, one entry per member) runs at.

    The slowest member's own links, and the slowest bad link whose two ends are both members.
    """
    quality = min((f.link_quality for f in faults.values()), default=1.0)
    for node, fault in faults.items():
        if fault.kind == "bad-link" and fault.peer in faults and fault.peer != node:
            quality = min(quality, fault.factor)
    return quality


def parse_assignment(spec: str) -> tuple[str, Fault]:
    """``NODE=KIND`` as ``(node, fault)``."""
    node, sep, kind = spec.partition("=")
    if not sep or not node.strip() or not kind.strip():
        raise FaultError(f"fault {spec!r} must look like NODE=KIND (for example gpu-0=slow-link:0.5)")
    return node.strip(), parse_fault(kind)


def xid_condition(now: str, gpu: int = 3) -> dict[str, Any]:
    """The Node condition a GPU health agent writes after an Xid error."""
    return {
        "type": XID_CONDITION,
        "status": "False",
        "reason": "GpuXidError",
        "message": f"GPU {gpu} reported Xid 79 (GPU has fallen off the bus)",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def has_xid_condition(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == XID_CONDITION and c.get("status") == "False" for c in conditions)
