"""The shape every status tier shares: get, gate, one step, write the status.

A reconcile of a Certification, WorkloadRun, Workflow or Job opens the same way: read the object
(from the cache, or this process's own latest write of it), then the lifecycle gate (gone: done;
being deleted: finalize; no finalizer yet: add it and come back), and only then the tier's own
step. A status is written whole, but only over the version it was computed from (``based_on``),
so a copy the cache had not brought up to date ends in a Conflict and the reconcile runs again.
A tier subclass names its resource and finalizer and writes ``step`` and ``_finalize``.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from ..kube.resources import Resource
from .common import lifecycle_gate
from .context import Context, Result

__all__ = ["StatusTier"]


class StatusTier(ABC):
    """Base of the four lifecycle tiers; see the module docstring."""

    resource: ClassVar[Resource]
    finalizer: ClassVar[str]
    ctx: Context

    def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.ctx.read(self.resource, name, namespace)
        gate = lifecycle_gate(self.ctx, self.resource, obj, self.finalizer, self._finalize)
        if gate is not None or obj is None:
            if obj is None:
                self.forget(namespace, name)
            return gate or Result()
        return self.step(obj)

    @abstractmethod
    def step(self, obj: dict[str, Any]) -> Result:
        """The tier's own work on a live object that holds its finalizer."""

    @abstractmethod
    def _finalize(self, obj: Any) -> Result:
        """The tier's clean-up of an object being deleted; removes the finalizer when done."""

    def forget(self, namespace: str, name: str) -> None:
        """Drop whatever the tier remembers of an object that is gone (nothing, by default: the
        Certification, WorkloadRun and Job tiers keep no memo of their own)."""
        return None

    def _write(self, obj: Mapping[str, Any], status: dict[str, Any]) -> None:
        """Write ``status`` whole over the version of ``obj`` it was computed from."""
        self.ctx.write_status(self.resource, obj, lambda _old: copy.deepcopy(status), based_on=obj)
