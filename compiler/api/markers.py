"""Schema markers: the CRD-only facts a model field or class carries beside its pydantic type.

Pydantic enforces types and the usual bounds (``ge``, ``max_length``, ``pattern``...); the CRD
generator reads those same constraints back, so they are written once. What pydantic has no
word for lives here:

* ``Rule``: one ``x-kubernetes-validations`` entry (a CEL expression, its message, and
  optionally the field it blames and the Kubernetes error reason it raises).
* ``Crd``: per-field schema extras put in ``Annotated[...]`` metadata (rules on that node,
  list semantics, preserved unknown fields, a schema default, a format).

A model class lists rules for its own object node in the ``crd_rules`` class attribute and
other object-level keywords (``x-kubernetes-embedded-resource``...) in ``crd_extra``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Rule", "Crd", "NO_DEFAULT", "REASON_CODES"]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()

#: Kubernetes validation-rule reasons and the diagnostic code each one becomes.
REASON_CODES = {
    "FieldValueInvalid": "FieldInvalid",
    "FieldValueForbidden": "FieldForbidden",
    "FieldValueRequired": "FieldRequired",
    "FieldValueDuplicate": "FieldDuplicate",
}


@dataclass(frozen=True)
class Rule:
    """A CEL validation rule placed on one schema node.

    ``field_path`` is relative to that node and starts with a dot (``.valueFrom``); when set,
    the API server and the offline validator report the failure there instead of at the node.
    A rule whose expression mentions ``oldSelf`` is a transition rule: it only runs on update.
    """

    rule: str
    message: str
    field_path: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.reason is not None and self.reason not in REASON_CODES:
            raise ValueError(f"unknown validation reason {self.reason!r}")
        if self.field_path is not None and not self.field_path.startswith("."):
            raise ValueError(f"field_path must start with '.', got {self.field_path!r}")

    @property
    def is_transition(self) -> bool:
        return "oldSelf" in self.rule

    def as_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "message": self.message}
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Crd:
    """Schema extras for the node a field's type produces (see the module docstring)."""

    rules: tuple[Rule, ...] = ()
    list_type: str | None = None  # atomic | set | map
    list_map_keys: tuple[str, ...] = ()
    preserve_unknown: bool = False
    object_type: bool = False  # give a free-form node ``type: object``
    format: str | None = None
    default: Any = NO_DEFAULT
