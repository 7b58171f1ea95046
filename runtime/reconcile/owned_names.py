"""A Workflow's name when the rendered one is already another owner's: the owner's own variant.

Rendered Workflow names keep NVCRE's shape (``compiler/naming.py``: 25 characters and five hex
digits of FNV-1a), so two long Certification names in one namespace can render the same name
(20 bits: daily names a couple of years apart do). The controller does not fail the later one:
when the rendered name is held by a Workflow another object controls, it creates this owner's
Workflow under a name of its own, a prefix of the rendered name and ten hex digits of SHA-256 over
the rendered name and the owner's UID. The same owner always gets the same name, so a reconcile
after a restart adopts what it created; the name is recorded in the owner's status
(``workflowRef``), which is where every later step reads it. Only if that name is taken too does
the owner fail ``WorkflowNameCollision``.

A render for GitOps (``certification render``) sees one Certification at a time and keeps the
rendered name, as NVCRE does: there the fallback is the controller's alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .common import Adopted, create_or_adopt, meta, name_of
from .context import Context

__all__ = ["WORKFLOW_NAME_TAKEN", "OwnedCreate", "create_owned_workflow", "owner_scoped_name", "taken_message"]

#: The Event reason when the rendered name was another owner's and the Workflow got its own.
WORKFLOW_NAME_TAKEN = "WorkflowNameTaken"

#: NVCRE's Workflow name limit (the Workflow tier appends to it for its Jobs and pods).
_LIMIT = 31
_DIGITS = 10


def owner_scoped_name(rendered: str, owner_uid: str) -> str:
    """``rendered`` made this owner's: a prefix and ten hex digits of its hash with the owner's UID."""
    digest = hashlib.sha256(f"{rendered}\0{owner_uid}".encode()).hexdigest()[:_DIGITS]
    prefix = rendered[: _LIMIT - _DIGITS - 1].rstrip("-")
    return f"{prefix}-{digest}" if prefix else digest


@dataclass(frozen=True)
class OwnedCreate:
    """The outcome of the create, and the rendered name when another owner held it."""

    outcome: Adopted
    taken: str | None = None


def create_owned_workflow(ctx: Context, manifest: Mapping[str, Any], owner: Mapping[str, Any]) -> OwnedCreate:
    """Create or adopt ``manifest`` for ``owner``; under the owner's own name when the rendered one is another's."""
    outcome = create_or_adopt(ctx, manifest, owner)
    uid = str(meta(owner).get("uid") or "")
    if not outcome.collision or not uid:
        return OwnedCreate(outcome)
    taken = name_of(manifest)
    renamed = {**manifest, "metadata": {**meta(manifest), "name": owner_scoped_name(taken, uid)}}
    return OwnedCreate(create_or_adopt(ctx, renamed, owner), taken)


def taken_message(taken: str, name: str, kind: str) -> str:
    return f"Workflow name {taken} is held by a Workflow this {kind} does not own; its Workflow is {name}"
