"""Which render notes a run's tier turns into Events, as NVCRE's Certification and WorkloadRun
controllers emit them.

- ``NICResourceDetection`` (Normal) only when detection ran and chose no NIC resource (none or
  several qualified, so nothing is requested); a detected name is no Event;
- ``GKENetworkDetection`` and ``TCPXOPluginDetection`` (Warnings) on a Certification only: they
  are the Certification tier's in NVCRE, a WorkloadRun does not emit them;
- ``GPUArchitectureDefaults`` (Warning) on both.

The (type, reason, message) triples come from :func:`nvcre.runtime.compile.render_events`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import compile as compiler

__all__ = ["CERTIFICATION_ONLY", "tier_render_events"]

#: render Events only the Certification tier emits
CERTIFICATION_ONLY = frozenset({"GKENetworkDetection", "TCPXOPluginDetection"})
_NIC = "NICResourceDetection"
#: how the NIC detection words a refusal (no resource, or several, qualified): the one outcome
#: NVCRE reports with an Event
_NIC_REFUSED = "NIC resource not chosen"


def _emitted(kind: str, note: Any) -> bool:
    code = str(getattr(note, "code", ""))
    if code == _NIC:
        return str(getattr(note, "message", "")).startswith(_NIC_REFUSED)
    return not (kind != "Certification" and code in CERTIFICATION_ONLY)


def tier_render_events(kind: str, notes: Sequence[Any]) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the render notes a ``kind`` (Certification or WorkloadRun)
    turns into Events."""
    return compiler.render_events([note for note in notes if _emitted(kind, note)])
