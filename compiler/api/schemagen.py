"""Turns the pydantic models into structural OpenAPI v3 schemas for the CRDs.

The walk reads each field's type and the constraints pydantic already enforces (``ge``,
``le``, ``min_length``, ``max_length``, ``pattern``), plus the ``Crd`` markers and the class
attributes ``crd_rules``/``crd_extra``. Every node it emits is typed and inlined (no ``$ref``);
the one ``anyOf`` is the integer-or-string pair Kubernetes allows beside
``x-kubernetes-int-or-string``. A type or constraint it does not know is an error, so nothing
is dropped from the CRD without notice.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Literal, Union

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .markers import NO_DEFAULT, Crd

__all__ = ["model_schema", "type_schema", "SchemaGenError"]


class SchemaGenError(TypeError):
    """A model uses a type or constraint the generator cannot express in a structural schema."""


_SCALARS = {str: "string", int: "integer", bool: "boolean"}


def model_schema(cls: type[BaseModel]) -> dict[str, Any]:
    """The object schema of one model class, properties in declaration order."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in cls.model_fields.items():
        wire = field.alias or name
        try:
            prop = type_schema(field.annotation, list(field.metadata))
        except SchemaGenError as exc:
            raise SchemaGenError(f"{cls.__name__}.{name}: {exc}") from None
        if field.description:
            prop = {**prop, "description": field.description}
        properties[wire] = prop
        if field.is_required():
            required.append(wire)
    node: dict[str, Any] = {"type": "object", "properties": properties}
    doc = cls.__dict__.get("__doc__")
    if doc:
        node["description"] = inspect.cleandoc(doc)
    if required:
        node["required"] = required
    if cls.model_config.get("extra") == "allow":
        node["x-kubernetes-preserve-unknown-fields"] = True
    node.update(getattr(cls, "crd_extra", {}))
    rules = getattr(cls, "crd_rules", ())
    if rules:
        node["x-kubernetes-validations"] = [rule.as_schema() for rule in rules]
    return node


def type_schema(annotation: Any, metadata: list[Any]) -> dict[str, Any]:
    """The schema of one annotation with the constraints in ``metadata`` applied."""
    annotation, metadata = _unwrap(annotation, metadata)
    origin = typing.get_origin(annotation)

    if origin in (Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return type_schema(members[0], metadata)
        return _int_or_string(members, metadata)

    if origin is Literal:
        values = list(typing.get_args(annotation))
        if not all(isinstance(v, str) for v in values):
            raise SchemaGenError(f"only string literals are supported, got {values!r}")
        node: dict[str, Any] = {"type": "string", "enum": values}
    elif origin is list:
        (item,) = typing.get_args(annotation)
        node = {"type": "array", "items": type_schema(item, [])}
    elif origin is dict:
        key, value = typing.get_args(annotation)
        if key is not str:
            raise SchemaGenError(f"map keys must be strings, got {key!r}")
        node = {"type": "object", "additionalProperties": type_schema(value, [])}
    elif annotation in _SCALARS:
        node = {"type": _SCALARS[annotation]}
    elif annotation is Any:
        node = {}
    elif inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        node = model_schema(annotation)
    else:
        raise SchemaGenError(f"unsupported type {annotation!r}")
    return _apply(node, metadata)


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """Peel ``Annotated`` layers, collecting their metadata (and the metadata of Field() calls)."""
    collected = list(metadata)
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        collected.extend(extra)
    flat: list[Any] = []
    for item in collected:
        if isinstance(item, FieldInfo):
            flat.extend(item.metadata)
        else:
            flat.append(item)
    return annotation, flat


def _int_or_string(members: list[Any], metadata: list[Any]) -> dict[str, Any]:
    """``int | str`` (the str side may carry a pattern and length) as x-kubernetes-int-or-string."""
    string_meta: list[Any] = []
    kinds = set()
    for member in members:
        inner, meta = _unwrap(member, [])
        kinds.add(inner)
        if inner is str:
            string_meta = meta
    if kinds != {int, str}:
        raise SchemaGenError(f"only int | str unions are supported, got {members!r}")
    node = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    return _apply(node, string_meta + metadata)


def _apply(node: dict[str, Any], metadata: list[Any]) -> dict[str, Any]:
    """Add the constraints and markers found in ``metadata`` to ``node``."""
    kind = node.get("type")
    sized = {"string": "Length", "array": "Items", "object": "Properties"}.get(str(kind), "Length")
    rules: list[dict[str, Any]] = []
    for item in metadata:
        if isinstance(item, Crd):
            rules.extend(rule.as_schema() for rule in item.rules)
            _apply_marker(node, item)
        elif isinstance(item, at.Ge):
            node["minimum"] = item.ge
        elif isinstance(item, at.Le):
            node["maximum"] = item.le
        elif isinstance(item, at.Gt):
            node["minimum"], node["exclusiveMinimum"] = item.gt, True
        elif isinstance(item, at.Lt):
            node["maximum"], node["exclusiveMaximum"] = item.lt, True
        elif isinstance(item, at.MinLen):
            node[f"min{sized}"] = item.min_length
        elif isinstance(item, at.MaxLen):
            node[f"max{sized}"] = item.max_length
        elif getattr(item, "pattern", None) is not None:
            node["pattern"] = item.pattern
        elif _is_harmless(item):
            continue
        else:
            raise SchemaGenError(f"unsupported constraint {item!r}")
    if rules:
        node["x-kubernetes-validations"] = node.get("x-kubernetes-validations", []) + rules
    return node


def _apply_marker(node: dict[str, Any], marker: Crd) -> None:
    if marker.list_type:
        node["x-kubernetes-list-type"] = marker.list_type
    if marker.list_map_keys:
        node["x-kubernetes-list-map-keys"] = list(marker.list_map_keys)
    if marker.preserve_unknown:
        node["x-kubernetes-preserve-unknown-fields"] = True
    if marker.object_type:
        node["type"] = "object"
    if marker.format:
        node["format"] = marker.format
    if marker.default is not NO_DEFAULT:
        node["default"] = marker.default


def _is_harmless(item: Any) -> bool:
    """Pydantic's own metadata objects that carry no schema constraint (all fields unset)."""
    fields = getattr(item, "__dict__", {})
    return type(item).__name__ == "_PydanticGeneralMetadata" and all(v is None for v in fields.values())
