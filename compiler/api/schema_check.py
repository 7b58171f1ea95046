"""Checks a document against a CRD's structural schema, as the API server does before CEL.

Covers types (with ``x-kubernetes-int-or-string``), enums, patterns (RE2, like Go), string
lengths in characters, numeric bounds, item and property counts, required and unknown fields,
``date-time`` formats, and the uniqueness that ``x-kubernetes-list-type: set|map`` demands.
Nodes marked ``x-kubernetes-preserve-unknown-fields`` accept any extra keys; an embedded
resource must name its ``apiVersion`` and ``kind``. A ``null`` in a field that is not
``nullable`` counts as absent, because the API server drops it before validating. Object
metadata (at the root and in embedded resources) is ObjectMeta, checked elsewhere.

``normalize`` prepares a copy the way the API server does before validating: nulls in
non-nullable fields are dropped and schema defaults are filled in, so rules (transition
rules above all) compare like with like.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Iterator

from ..diagnostics import Diagnostic, PathPart, error
from .patterns import DATE_TIME

__all__ = ["check_schema", "normalize", "BLOCKING_CODES"]

#: Codes that mean a value has the wrong shape, so rules above it may not evaluate cleanly.
BLOCKING_CODES = frozenset({"FieldTypeInvalid", "FieldRequired", "FieldNotSupported", "FieldTooLong", "FieldTooMany"})

_DATE_TIME = re.compile(DATE_TIME)
_PATTERNS: dict[str, Any] = {}


def check_schema(schema: dict[str, Any], value: Any, path: tuple[PathPart, ...] = ()) -> list[Diagnostic]:
    """Every structural problem of ``value`` under ``schema``, each with its field path."""
    return list(_check(schema, value, path))


def normalize(schema: dict[str, Any], value: Any) -> Any:
    """A copy of ``value`` as the API server sees it before validating: nulls in fields that
    are not nullable are dropped (or replaced by the field's default), then absent fields with
    a schema default are filled in."""
    result = copy.deepcopy(value)
    _prune_nulls(schema, result)
    _default(schema, result)
    return result


def whole_numbers_as_integers(schema: dict[str, Any] | None, value: Any) -> Any:
    """A copy of ``value`` with whole-valued floats (``2.0``) turned into ints where the schema
    wants an integer, the way the API server decodes JSON numbers; nothing else changes."""
    if (
        isinstance(value, float)
        and value.is_integer()
        and schema is not None
        and (schema.get("type") == "integer" or schema.get("x-kubernetes-int-or-string"))
    ):
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers_as_integers(_field_schema(schema, key), item) for key, item in value.items()}
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        return [whole_numbers_as_integers(items if isinstance(items, dict) else None, item) for item in value]
    return value


def _field_schema(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if schema is None:
        return None
    if key in schema.get("properties", {}):
        found: dict[str, Any] = schema["properties"][key]
        return found
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _prune_nulls(schema: dict[str, Any] | None, value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = _field_schema(schema, key)
            if value[key] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del value[key]
            else:
                _prune_nulls(sub, value[key])
    elif isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        for item in value:
            _prune_nulls(items if isinstance(items, dict) else None, item)


def _default(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if "default" in sub and (value.get(key) is None and not sub.get("nullable")):
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = _field_schema(schema, key)
            if sub is not None:
                _default(sub, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)


def _check(schema: dict[str, Any], value: Any, path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    if value is None:
        if not schema.get("nullable"):
            yield error("FieldTypeInvalid", path, f"must be of type {_expected(schema)}, got null")
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _is_int(value)):
            yield error("FieldTypeInvalid", path, f"must be an integer or a string, got {_type_name(value)}")
            return
        if isinstance(value, str):
            yield from _check_string(schema, value, path)
        return
    kind = schema.get("type")
    if kind is None:
        return  # preserve-unknown-fields node without a type: anything goes
    if not _has_type(value, kind):
        yield error("FieldTypeInvalid", path, f"must be of type {kind}, got {_type_name(value)}")
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(json.dumps(v) for v in schema["enum"])
        yield error("FieldNotSupported", path, f"Unsupported value: {json.dumps(value)}: supported values: {supported}")
    if kind == "string":
        yield from _check_string(schema, value, path)
    elif kind in ("integer", "number"):
        yield from _check_number(schema, value, path)
    elif kind == "array":
        yield from _check_array(schema, value, path)
    elif kind == "object":
        yield from _check_object(schema, value, path)


def _check_string(schema: dict[str, Any], value: str, path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    # Like the API server: length first, then the pattern, and only the first failure is reported.
    pattern = schema.get("pattern")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield error("FieldTooLong", path, f"Too long: may not be more than {schema['maxLength']} characters")
    elif "minLength" in schema and len(value) < schema["minLength"]:
        yield error("FieldInvalid", path, f"should be at least {schema['minLength']} characters long")
    elif pattern is not None and _compiled(pattern).search(value) is None:
        yield error("FieldInvalid", path, f"should match '{pattern}'")
    if schema.get("format") == "date-time" and not _DATE_TIME.fullmatch(value):
        yield error("FieldInvalid", path, "must be an RFC 3339 date-time, for example 2026-10-21T12:00:00Z")


_INT_FORMATS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _check_number(schema: dict[str, Any], value: int | float, path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    bounds = _INT_FORMATS.get(schema.get("format", ""))
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        yield error("FieldInvalid", path, f"must be of type integer with format {schema['format']}")
        return
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            yield error("FieldInvalid", path, f"should be {word} {low}")
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            yield error("FieldInvalid", path, f"should be {word} {high}")


def _check_array(schema: dict[str, Any], value: list[Any], path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        # The items are not checked: the list is refused whatever they hold, and checking ten
        # thousand of them would only bury this one error.
        yield error("FieldTooMany", path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
        return
    if "minItems" in schema and len(value) < schema["minItems"]:
        yield error("FieldInvalid", path, f"should have at least {schema['minItems']} items")
    items = schema.get("items", {})
    for index, item in enumerate(value):
        yield from _check(items, item, path + (index,))
    yield from _check_list_type(schema, value, path)


def _check_list_type(schema: dict[str, Any], value: list[Any], path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    list_type = schema.get("x-kubernetes-list-type")
    if list_type not in ("set", "map"):
        return
    keys = schema.get("x-kubernetes-list-map-keys", [])
    seen: set[str] = set()
    for index, item in enumerate(value):
        if list_type == "map":
            if not isinstance(item, dict):
                continue
            identity = {key: item.get(key) for key in keys}
        else:
            identity = item
        marker = json.dumps(identity, sort_keys=True)
        if marker in seen:
            yield error("FieldDuplicate", path + (index,), f"Duplicate value: {marker}")
        seen.add(marker)


def _check_object(schema: dict[str, Any], value: dict[str, Any], path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    properties = schema.get("properties", {})
    present = {key for key, item in value.items() if item is not None or properties.get(key, {}).get("nullable")}
    yield from _object_shape(schema, value, present, path)
    for key, item in value.items():
        yield from _check_member(schema, key, item, key in present, path)


def _object_shape(schema: dict[str, Any], value: dict[str, Any], present: set[str], path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    """What the object as a whole must hold: its required keys, an embedded object's type, its size."""
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in present:
            yield error("FieldRequired", path + (key,), "Required value")
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if key not in properties and not (isinstance(value.get(key), str) and value[key]):
                yield error("FieldRequired", path + (key,), "Required value: an embedded object names its apiVersion and kind")
    if "maxProperties" in schema and len(present) > schema["maxProperties"]:
        yield error("FieldTooMany", path, f"Too many: {len(present)}: must have at most {schema['maxProperties']} properties")
    if "minProperties" in schema and len(present) < schema["minProperties"]:
        yield error("FieldInvalid", path, f"should have at least {schema['minProperties']} properties")


def _check_member(schema: dict[str, Any], key: Any, item: Any, present: bool, path: tuple[PathPart, ...]) -> Iterator[Diagnostic]:
    """One key of an object against the schema's properties, its additionalProperties or neither."""
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if not isinstance(key, str):
        yield error("FieldTypeInvalid", path + (str(key),), f"keys must be strings, got {_type_name(key)}: quote the key")
    elif key == "metadata" and (not path or schema.get("x-kubernetes-embedded-resource")):
        # Object metadata follows ObjectMeta, which the schema leaves as a bare object.
        if item is not None and not isinstance(item, dict):
            yield error("FieldTypeInvalid", path + (key,), f"must be of type object, got {_type_name(item)}")
    elif key in properties:
        if present:
            yield from _check(properties[key], item, path + (key,))
    elif isinstance(extra, dict):
        yield from _check(extra, item, path + (key,))
    elif not schema.get("x-kubernetes-preserve-unknown-fields", False):
        yield error("FieldUnknown", path + (key,), f'unknown field "{key}"')


def _compiled(pattern: str) -> Any:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        import re2  # loaded for the first pattern a document's values meet, not by every import

        compiled = _PATTERNS[pattern] = re2.compile(pattern)
    return compiled


def _is_int(value: Any) -> bool:
    """JSON has one number type: the API server takes a whole-valued float (2.0) as an integer."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _has_type(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return _is_int(value)
    if kind == "number":
        return _is_int(value) or isinstance(value, float)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _expected(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    return str(schema.get("type", "any"))


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__
