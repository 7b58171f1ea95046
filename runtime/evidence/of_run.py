"""Writing a run's bundle from objects already collected and judged: what ``run --evidence`` and
``evidence NAME`` write.

The caller hands the run's objects and the verdict it already printed
(:mod:`nvcre.runtime.ops.evidence_objects` builds them from what the operations collected);
this module assembles and writes the bundle, all or nothing. Nothing is read from the cluster
or judged here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .assemble import Objects, assemble
from .bundle import write_bundle

if TYPE_CHECKING:
    from .dsse import Signer

__all__ = ["EvidenceRequest", "write_objects"]


@dataclass(frozen=True)
class EvidenceRequest:
    """Where a run's bundle goes (a new or empty directory) and the key that signs it, if any."""

    directory: Path
    signer: Signer | None = None


def write_objects(objects: Objects, verdict: Any, request: EvidenceRequest) -> str:
    """Write the bundle of ``objects`` judged as ``verdict``; returns the line that says so.

    Raises :class:`~nvcre.runtime.evidence.EvidenceError` when the directory cannot take it."""
    write_bundle(assemble(objects, verdict, signer=request.signer), request.directory)
    signed = f", signed (key id {request.signer.key_id[:16]})" if request.signer is not None else ""
    return f"Evidence written to {request.directory} ({verdict.result}{signed})\n"
