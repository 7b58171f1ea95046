"""The failed-node entries a Job's verdict seeds when it blames nodes and nobody was blamed yet (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...judge import health

__all__ = ["seed_failed_nodes"]


def seed_failed_nodes(nodes: Iterable[str], reason: str, message: str) -> list[dict[str, Any]]:
    """One ``status.failedNodes`` entry per node with ``reason`` and ``message``, sorted and unique."""
    return health.merge_failed_nodes((), ({"name": n, "reason": reason, "message": message} for n in nodes))
