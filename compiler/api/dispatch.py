"""From a plain mapping to a typed model: pick the kind, run pydantic, report problems.

``kind_of`` reads ``apiVersion`` and ``kind`` and names the model class (or says why it
cannot). ``load_model`` validates with pydantic and turns every pydantic error into a
``Diagnostic`` whose path is a Kubernetes field path (``spec.categories[2].options.env[0]``),
so callers see one error format whichever layer found the problem.
"""

from __future__ import annotations

import json
from typing import Any, cast

from pydantic import ValidationError

from ..diagnostics import Diagnostic, PathPart, error
from ..vocabulary import API_VERSION
from .common import ApiObject
from .kinds import kind_class, kind_names

__all__ = ["kind_of", "load_model", "pydantic_diagnostics"]


def kind_of(data: Any) -> tuple[type[ApiObject] | None, list[Diagnostic]]:
    """The model class for a document, or None and the reasons."""
    if not isinstance(data, dict):
        return None, [error("DocumentInvalid", "", f"a document must be a mapping, got {type(data).__name__}")]
    problems: list[Diagnostic] = []
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if api_version is None:
        problems.append(error("FieldRequired", "apiVersion", "Required value"))
    elif api_version != API_VERSION:
        problems.append(
            error(
                "FieldNotSupported",
                "apiVersion",
                f"Unsupported value: {json.dumps(api_version)}: supported values: {json.dumps(API_VERSION)}",
            )
        )
    if kind is None:
        problems.append(error("FieldRequired", "kind", "Required value"))
        return None, problems
    cls = kind_class(kind) if isinstance(kind, str) else None
    if cls is None:
        supported = ", ".join(json.dumps(name) for name in kind_names())
        problems.append(error("FieldNotSupported", "kind", f"Unsupported value: {json.dumps(kind)}: supported values: {supported}"))
    return (cls if not problems else None), problems


def load_model(cls: type[ApiObject], data: dict[str, Any]) -> tuple[ApiObject | None, list[Diagnostic]]:
    """Validate ``data`` as ``cls`` with pydantic alone (no CRD rules)."""
    try:
        return cast(ApiObject, cls.from_dict(data)), []
    except ValidationError as exc:
        return None, pydantic_diagnostics(exc, data)


# pydantic error type -> diagnostic code; anything else is FieldInvalid.
_CODES = {
    "missing": "FieldRequired",
    "extra_forbidden": "FieldUnknown",
    "literal_error": "FieldNotSupported",
    "string_too_long": "FieldTooLong",
    "too_long": "FieldTooMany",
    "value_from_forbidden": "FieldForbidden",
}


def pydantic_diagnostics(exc: ValidationError, data: Any) -> list[Diagnostic]:
    out = []
    for item in exc.errors(include_url=False):
        path = _field_path(item["loc"], data)
        kind = item["type"]
        code = _CODES.get(kind) or ("FieldTypeInvalid" if kind.endswith("_type") else "FieldInvalid")
        if kind == "missing":
            message = "Required value"
        elif kind == "extra_forbidden":
            message = f'unknown field "{path[-1]}"'
        else:
            message = item["msg"]
        out.append(error(code, path, message))
    return out


def _field_path(loc: tuple[Any, ...], data: Any) -> list[PathPart]:
    """Follow ``loc`` through the input data; parts that are not keys or indexes there are
    pydantic's own labels (union members, ``[key]``) and are dropped."""
    path: list[PathPart] = []
    node = data
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(node, dict) and part in node:
            path.append(str(part))  # a map key, even a non-string one, is a name in the path
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and last and isinstance(part, str) and not part.startswith("["):
            path.append(part)  # a missing field
        else:
            continue
    return path
