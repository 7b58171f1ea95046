"""Whether the controller may write in a Workflow's namespace, kept in its ``NamespaceAccess`` condition.

Before anything of a Workflow is created, the controller's own permissions in the namespace are
checked (the cached SelfSubjectAccessReview of :mod:`...kube.access`). Missing permissions make the
Workflow wait, with a condition and one Warning Event naming the RoleBinding to create; past
``Settings.namespace_access_timeout`` it fails. Access granted after a wait is recorded and the pass
goes on from the status just written.
"""

from __future__ import annotations

from typing import Any

from nvcre.compiler.vocabulary import RUN_BINDING, RUN_ROLE

from ...clock import parse_time
from ...judge import conditions as cond
from ..common import namespace_of
from ..context import Context, Result
from .ports import StatusWrite
from .spec import NAMESPACE_ACCESS

__all__ = ["NamespaceGate"]


class NamespaceGate:
    """Holds a Workflow back while the controller may not write in its namespace."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def check(self, wf: dict[str, Any], status: dict[str, Any], write: StatusWrite) -> Result | None:
        """None when the controller may write in the Workflow's namespace; else wait (or fail),
        with the status written through ``write``."""
        ctx = self.ctx
        namespace = namespace_of(wf)
        check = ctx.access.check(ctx.kube, namespace)
        now = ctx.clock.stamp()
        if check.allowed:
            if not cond.is_true(status, NAMESPACE_ACCESS) and cond.condition(status, NAMESPACE_ACCESS) is not None:
                granted = f"The controller may write in namespace {namespace}"
                new = cond.set_condition(status, NAMESPACE_ACCESS, "True", "NamespaceAccessGranted", granted, now)
                new = cond.set_lifecycle(new, cond.IN_PROGRESS, "NamespaceAccessGranted", granted, now)
                write(wf, new)
                return Result(ctx.settings.step_interval)  # go on from the status just written
            return None
        reason = "NamespaceAccessCheckFailed" if check.error else "NamespacePermissionsMissing"
        binding = (
            f"RoleBinding {RUN_BINDING} in namespace {namespace} to ClusterRole {RUN_ROLE} (nvcrectl rbac print --namespace {namespace})"
        )
        detail = check.error or "missing " + ", ".join(check.missing)
        message = f"The controller cannot write in namespace {namespace} ({detail}); create the {binding}"
        previous = cond.condition(status, NAMESPACE_ACCESS)
        first = previous is None or previous.get("status") != "False"
        since = parse_time(previous.get("lastTransitionTime")) if previous and not first else None
        waited = (ctx.clock.now() - since).total_seconds() if since else 0.0
        new = (
            status
            if not first and previous and previous.get("reason") == reason
            else cond.set_condition(status, NAMESPACE_ACCESS, "False", reason, message, now)
        )
        if waited > ctx.settings.namespace_access_timeout:
            new = cond.set_lifecycle(new, cond.FAILED, reason, f"{message}; gave up after waiting {int(waited)}s", now)
            write(wf, new)
            ctx.event(wf, "Warning", reason, f"{message}; gave up after waiting {int(waited)}s")
            return Result()
        new = cond.set_lifecycle(new, cond.IN_PROGRESS, reason, message, now)
        write(wf, new)
        if first:
            ctx.event(wf, "Warning", reason, message)
        return Result(min(ctx.settings.poll_interval, 15.0))
