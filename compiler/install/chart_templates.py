"""Helm templates derived from the install's own objects, so the chart cannot drift from ``setup render``.

The objects are rendered by the same functions ``render_install`` uses, from *probe* values: every
string and integer of the values model is replaced by a unique token (``NVCREHOLE007X``) that
stands for ``$.Values.<path>``. Walking the result, a string that is exactly a token becomes that
value, a string with tokens inside becomes a ``printf`` of its literal and value parts, and every
such scalar is written as ``{{ <expression> | toJson }}``, so no value can change the document's
structure. Booleans are found by rendering again with each one false: an object that disappears
gets an ``if``, a scalar that changes becomes a ``ternary``; ``rbac.scope`` is found the same way
with each supported scope. Objects that carry the token of a ``rbac.runNamespaces`` item are
repeated with ``range``. The few keys the compiler leaves out when a value is empty are declared in
:data:`OPTIONAL_KEYS`; the strings in :data:`SWITCHES` (a Secret name that adds a volume, a mount
and a flag when set) are found like booleans, by rendering again with each one empty: a list item
that goes away is wrapped in ``if``, a value that changes becomes a ``ternary`` of the two. Label
maps a user extends (:data:`MERGED_LABELS`) are the compiler's labels ``merge``d with the value.
Anything the walk cannot express is a :class:`ChartError`, never a silent difference.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..emit import dump_yaml
from .values import DEFAULT_VALUES, FREE_FORM, RBAC_SCOPES

__all__ = [
    "ChartError",
    "Document",
    "Holes",
    "MERGED_LABELS",
    "OPTIONAL_KEYS",
    "SWITCHES",
    "emit_document",
    "probe_values",
    "template_documents",
    "tokenize",
]

RUN_NAMESPACE_VARIABLE = "$runNamespace"
_TOKEN = re.compile(r"NVCREHOLE[0-9]{3}X")


class ChartError(RuntimeError):
    """The generator met an object it cannot turn into a template that renders the same."""


@dataclass(frozen=True)
class OptionalKey:
    """A key the compiler writes only when a value is non-empty, rendered by ``expression``."""

    kind: str
    path: tuple[str, ...]
    condition: str
    expression: str
    raw: bool = False  # the expression already yields JSON text (an ``include``)


#: Keys that exist only for a non-empty value (the compiler omits them otherwise).
OPTIONAL_KEYS: tuple[OptionalKey, ...] = (
    OptionalKey(
        "Deployment",
        ("spec", "template", "spec", "imagePullSecrets"),
        "$.Values.manager.imagePullSecrets",
        'include "nvcre.imagePullSecrets" $.Values.manager.imagePullSecrets',
        raw=True,
    ),
    OptionalKey(
        "Deployment", ("spec", "template", "spec", "nodeSelector"), "$.Values.manager.nodeSelector", "$.Values.manager.nodeSelector"
    ),
    OptionalKey("Deployment", ("spec", "template", "spec", "tolerations"), "$.Values.manager.tolerations", "$.Values.manager.tolerations"),
)

#: String values whose being set changes the objects' structure (not only a scalar).
SWITCHES: tuple[tuple[str, ...], ...] = (("metrics", "certSecret"),)

#: Objects whose ``metadata.labels`` are the compiler's labels plus a free-form map of values
#: (the compiler's win on a clash, in ``setup render`` and in the chart alike).
MERGED_LABELS: dict[str, str] = {
    "ServiceMonitor": "$.Values.metrics.serviceMonitor.labels",
    "PrometheusRule": "$.Values.metrics.prometheusRule.labels",
}
#: The key the probe values put in every free-form map.
PROBE_KEY = "probe"

#: The manager image, as ``image_reference`` builds it: ``repository@digest`` or ``repository:tag``.
IMAGE_PATH = ("spec", "template", "spec", "containers", 0, "image")
IMAGE_EXPRESSION = 'include "nvcre.managerImage" $.Values.manager.image'


@dataclass
class Holes:
    """Tokens and the Go template expression each stands for."""

    expressions: dict[str, str] = field(default_factory=dict)
    raw: set[str] = field(default_factory=set)
    #: tokens of optional keys and the condition under which their line renders
    optional: dict[str, str] = field(default_factory=dict)

    def token(self, expression: str, *, raw: bool = False, only_if: str | None = None) -> str:
        if len(self.expressions) >= 1000:
            raise ChartError("too many template holes")
        token = f"NVCREHOLE{len(self.expressions):03d}X"
        self.expressions[token] = expression
        if raw:
            self.raw.add(token)
        if only_if is not None:
            self.optional[token] = only_if
        return token

    def expression_of(self, text: str) -> str:
        """A Go expression for a string that may hold tokens among literal text.

        Text with values inside becomes ``printf`` with the literal parts in the format (``%``
        doubled) and ``%v`` per value, so adjacent values are never joined by a space as
        ``print`` would join two numbers.
        """
        fmt: list[str] = []
        arguments: list[str] = []
        position = 0
        for match in _TOKEN.finditer(text):
            if match.group() in self.raw:
                raise ChartError(f"a JSON-valued hole cannot sit inside the string {text!r}")
            fmt.append(text[position : match.start()].replace("%", "%%"))
            fmt.append("%v")
            arguments.append(f"({self.expressions[match.group()]})")
            position = match.end()
        if not arguments:
            return _literal(text)
        fmt.append(text[position:].replace("%", "%%"))
        if fmt == ["", "%v", ""]:
            return arguments[0][1:-1]
        return f"printf {_literal(''.join(fmt))} {' '.join(arguments)}"


def _literal(value: Any) -> str:
    """A Go template literal for a JSON scalar (Go reads JSON's string escapes)."""
    return json.dumps(value)


def probe_values(holes: Holes, *, scope: str) -> dict[str, Any]:
    """The values model with a token for every string and integer, booleans true, lists probed."""

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        if path in FREE_FORM:
            return {"probe": "probe"} if isinstance(node, dict) else [{"probe": "probe"}] if isinstance(node, list) else node
        if isinstance(node, dict):
            return {key: walk(value, (*path, key)) for key, value in node.items()}
        if isinstance(node, bool):
            return True
        if isinstance(node, (str, int)):
            return holes.token("$.Values." + ".".join(path))
        if isinstance(node, list):
            return ["probe"]
        raise ChartError(f"values.{'.'.join(path)}: no probe for a {type(node).__name__}")

    values: dict[str, Any] = walk(DEFAULT_VALUES, ())
    values["manager"]["resources"] = holes.token("$.Values.manager.resources")
    values["rbac"]["scope"] = scope
    values["rbac"]["runNamespaces"] = [holes.token(RUN_NAMESPACE_VARIABLE)]
    values["manager"]["image"]["digest"] = ""
    return values


def _set_path(values: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(values)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _bool_paths(node: Any = DEFAULT_VALUES, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(node, bool):
        return [path]
    if isinstance(node, dict) and path not in FREE_FORM:
        return [p for key, value in node.items() for p in _bool_paths(value, (*path, key))]
    return []


def _identity(obj: Mapping[str, Any], holes: Holes) -> tuple[str, str, str]:
    """Kind, name and namespace, with each token read as its expression (probes differ in tokens only)."""
    meta = obj.get("metadata") or {}

    def read(value: Any) -> str:
        return _TOKEN.sub(lambda m: holes.expressions[m.group()], str(value))

    return (str(obj.get("kind")), read(meta.get("name")), read(meta.get("namespace", "")))


@dataclass
class Document:
    """One object of a template file: its body (with tokens) and what must hold for it to render."""

    body: Any
    conditions: list[str] = field(default_factory=list)
    ranged: bool = False


def _get(node: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        node = node[step]
    return node


def _merge_scalars(current: Any, base: Any, other: Any, condition: str, holes: Holes, where: str) -> Any:
    """``current`` with a ternary wherever ``base`` (condition true) and ``other`` (false) differ.

    ``base`` is the render with every boolean true and ``current`` that render with the ternaries
    of the booleans already seen; one value that two booleans change is refused.
    """
    if isinstance(base, dict) and isinstance(other, dict):
        if base.keys() != other.keys():
            raise ChartError(f"{where}: keys change with {condition} ({sorted(base.keys() ^ other.keys())})")
        return {key: _merge_scalars(current[key], base[key], other[key], condition, holes, f"{where}.{key}") for key in base}
    if isinstance(base, list) and isinstance(other, list):
        if len(base) != len(other):
            raise ChartError(f"{where}: list length changes with {condition}")
        return [_merge_scalars(c, a, b, condition, holes, f"{where}[{i}]") for i, (c, a, b) in enumerate(zip(current, base, other))]
    if base == other:
        return current
    if isinstance(base, (dict, list)) or isinstance(other, (dict, list)):
        raise ChartError(f"{where}: structure changes with {condition}")
    if current != base:
        raise ChartError(f"{where}: changes with more than one boolean (the last is {condition})")
    true_expr = holes.expression_of(base) if isinstance(base, str) else _literal(base)
    false_expr = holes.expression_of(other) if isinstance(other, str) else _literal(other)
    return holes.token(f"ternary ({true_expr}) ({false_expr}) {condition}")


def _with_conditions(
    render: Callable[[dict[str, Any]], list[dict[str, Any]]],
    probe: dict[str, Any],
    holes: Holes,
    extra: Sequence[str] = (),
) -> list[Document]:
    """The objects of ``render(probe)``, each with the boolean conditions it depends on."""
    base = render(probe)
    documents = [Document(copy.deepcopy(obj), list(extra)) for obj in base]
    originals = {_identity(obj, holes): obj for obj in base}
    for path in _bool_paths():
        condition = "$.Values." + ".".join(path)
        alternative = {_identity(obj, holes): obj for obj in render(_set_path(probe, path, False))}
        base_ids = {_identity(d.body, holes) for d in documents}
        for document in documents:
            key = _identity(document.body, holes)
            if key not in alternative:
                document.conditions.append(condition)
            else:
                original = originals.get(key, document.body)
                document.body = _merge_scalars(document.body, original, alternative[key], condition, holes, "/".join(key))
        for key, obj in alternative.items():
            if key not in base_ids:
                documents.append(Document(copy.deepcopy(obj), [*extra, f"not {condition}"]))
    for path in SWITCHES:
        condition = "$.Values." + ".".join(path)
        alternative = {_identity(obj, holes): obj for obj in render(_set_path(probe, path, ""))}
        if set(alternative) != set(originals):
            raise ChartError(f"objects come or go with {condition}; only parts of objects may")
        for document in documents:
            key = _identity(document.body, holes)
            if key in originals:
                document.body = _switch(document.body, originals[key], alternative[key], condition, holes, "/".join(key))
    return documents


def _switch(current: Any, base: Any, other: Any, condition: str, holes: Holes, where: str) -> Any:
    """``current`` with what differs between ``base`` (the string set) and ``other`` (empty): list
    items only in ``base`` become items rendered under ``if``, other differences a ``ternary``."""
    if base == other:
        return current
    if isinstance(base, dict) and isinstance(other, dict) and base.keys() == other.keys():
        return {key: _switch(current[key], base[key], other[key], condition, holes, f"{where}.{key}") for key in base}
    if isinstance(base, list) and isinstance(other, list) and len(base) >= len(other):
        if len(base) == len(other):
            return [_switch(c, a, b, condition, holes, f"{where}[{i}]") for i, (c, a, b) in enumerate(zip(current, base, other))]
        out, position = [], 0
        for item, now in zip(base, current):
            if position < len(other) and item == other[position]:
                out.append(now)
                position += 1
            else:
                out.append(holes.token(_expression(item, holes), only_if=condition))
        if position != len(other):
            raise ChartError(f"{where}: items change with {condition}, not only come and go")
        return out
    if current != base:
        raise ChartError(f"{where}: changes with a boolean and with {condition}")
    return holes.token(f"ternary ({_expression(base, holes)}) ({_expression(other, holes)}) (not (empty {condition}))")


def _expression(node: Any, holes: Holes) -> str:
    """A Go template expression that builds ``node`` (maps with ``dict``, lists with ``list``)."""
    if isinstance(node, dict):
        return " ".join(["dict", *(f"{_literal(key)} ({_expression(value, holes)})" for key, value in node.items())])
    if isinstance(node, list):
        return " ".join(["list", *(f"({_expression(item, holes)})" for item in node)])
    if isinstance(node, str):
        return holes.expression_of(node)
    if node is None or isinstance(node, (bool, int)):
        return "nil" if node is None else _literal(node)
    raise ChartError(f"no template expression for a {type(node).__name__}")


def template_documents(render: Callable[[dict[str, Any]], list[dict[str, Any]]], holes: Holes) -> list[Document]:
    """Every object ``render`` can produce, as documents with their conditions, across the RBAC scopes."""
    by_scope = {scope: _with_conditions(render, probe_values(holes, scope=scope), holes) for scope in RBAC_SCOPES}
    merged: list[Document] = []
    seen: set[tuple[str, str, str]] = set()
    for scope in RBAC_SCOPES:
        for document in by_scope[scope]:
            key = _identity(document.body, holes)
            if key in seen:
                continue
            seen.add(key)
            present = [s for s in RBAC_SCOPES if any(_identity(d.body, holes) == key for d in by_scope[s])]
            bodies = [next(d for d in by_scope[s] if _identity(d.body, holes) == key) for s in present]
            if any(
                _structure(b.body, holes) != _structure(bodies[0].body, holes) or b.conditions != bodies[0].conditions for b in bodies[1:]
            ):
                raise ChartError(f"{'/'.join(key)} differs between the RBAC scopes")
            if len(present) < len(RBAC_SCOPES):
                document.conditions.append(
                    " or ".join(f'(eq $.Values.rbac.scope "{s}")' for s in present)
                    if len(present) > 1
                    else f'eq $.Values.rbac.scope "{present[0]}"'
                )
            merged.append(document)
    run_tokens = {t for t, e in holes.expressions.items() if e == RUN_NAMESPACE_VARIABLE}
    for document in merged:
        document.ranged = bool(run_tokens & set(_TOKEN.findall(json.dumps(document.body))))
    _place_optional_keys(merged, holes)
    for document in merged:
        document.body = tokenize(document.body, holes)
    return merged


def _structure(body: Any, holes: Holes) -> str:
    """A comparable form of a body in which each token reads as its expression."""
    return _TOKEN.sub(lambda m: holes.expressions[m.group()], json.dumps(body, sort_keys=True))


def _place_optional_keys(documents: list[Document], holes: Holes) -> None:
    for document in documents:
        if document.body.get("kind") == "Deployment":
            _set_image(document.body, holes)
        if document.body.get("kind") in MERGED_LABELS:
            _merge_labels(document.body, MERGED_LABELS[document.body["kind"]], holes)
        for optional in OPTIONAL_KEYS:
            if document.body.get("kind") != optional.kind:
                continue
            parent = _get(document.body, optional.path[:-1])
            if optional.path[-1] not in parent:
                raise ChartError(f"{optional.kind}: the probe values gave no {'.'.join(optional.path)}")
            parent[optional.path[-1]] = holes.token(optional.expression, raw=optional.raw, only_if=optional.condition)


def _merge_labels(body: dict[str, Any], value: str, holes: Holes) -> None:
    labels = dict(body["metadata"].get("labels") or {})
    if labels.pop(PROBE_KEY, None) != PROBE_KEY:
        raise ChartError(f"{body['kind']}: the probe values' labels ({value}) are not on it")
    body["metadata"]["labels"] = holes.token(f"merge ({_expression(labels, holes)}) {value}")


def _set_image(body: dict[str, Any], holes: Holes) -> None:
    container = _get(body, IMAGE_PATH[:-1])
    if "image" not in container:
        raise ChartError("Deployment: no container image to template")
    container["image"] = holes.token(IMAGE_EXPRESSION)


def tokenize(node: Any, holes: Holes) -> Any:
    """Every string with a token inside becomes one whole token for its expression."""
    if isinstance(node, dict):
        for key in node:
            if _TOKEN.search(key):
                raise ChartError(f"a value reaches a key ({key!r}); keys must be fixed")
        return {key: tokenize(value, holes) for key, value in node.items()}
    if isinstance(node, list):
        return [tokenize(item, holes) for item in node]
    if isinstance(node, str) and _TOKEN.search(node) and not _TOKEN.fullmatch(node):
        return holes.token(holes.expression_of(node))
    return node


_LINE = re.compile(r"^(?P<indent> *)(?P<lead>(?:- )?(?:[A-Za-z0-9_./-]+: )?)(?P<token>NVCREHOLE[0-9]{3}X)$")


def emit_document(document: Document, holes: Holes) -> str:
    """The YAML of one document with every token turned into its template action."""
    text = dump_yaml(document.body).replace("{{", '{{ "{{" }}')
    lines = []
    for line in text.splitlines():
        if not _TOKEN.search(line):
            lines.append(line)
            continue
        match = _LINE.match(line)
        if match is None:
            raise ChartError(f"a template value is not a whole scalar: {line.strip()!r}")
        token = match["token"]
        expression = holes.expressions[token]
        action = f"{{{{ {expression} }}}}" if token in holes.raw else f"{{{{ {expression} | toJson }}}}"
        written = f"{match['indent']}{match['lead']}{action}"
        if token in holes.optional:  # the line renders only when its value is non-empty
            if not match["lead"] or (match["lead"].startswith("- ") and match["lead"] != "- "):
                raise ChartError(f"an optional line must be a map key or a whole list item: {line.strip()!r}")
            lines += [f"{{{{- if {holes.optional[token]} }}}}", written, "{{- end }}"]
        else:
            lines.append(written)
    body = "\n".join(lines) + "\n"
    opening, closing = [], []
    for condition in document.conditions:
        opening.append(f"{{{{- if {condition} }}}}")
        closing.append("{{- end }}")
    if document.ranged:
        opening.append(f"{{{{- range {RUN_NAMESPACE_VARIABLE} := $.Values.rbac.runNamespaces }}}}")
        closing.append("{{- end }}")
    return "".join(line + "\n" for line in opening) + "---\n" + body + "".join(line + "\n" for line in closing)
