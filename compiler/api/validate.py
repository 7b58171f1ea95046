"""Offline validation that reaches the same verdicts as the installed CRDs.

``validate(data, old=None)`` runs, against the committed CRD of the document's kind:

1. the structural schema checks (``schema_check``) on the document as the API server sees
   it: nulls in non-nullable fields dropped, schema defaults filled in;
2. every ``x-kubernetes-validations`` rule, evaluated with cel-python on the node it sits on
   (``self``), and transition rules against the correlated node of ``old`` (``oldSelf``) when
   an old object is given;
3. the metadata checks the API server makes (name, namespace, label and annotation keys), and
   the checks that a Certification's categories get distinct Workflow names and its name fits
   the label it becomes (``workflow_names``), and that every threshold expression gives a
   boolean for a measured value (``threshold_check``) and every node-health expression stays
   under the cost limit (``health_check``), and that a training category's counts are decimal
   digits where they are written (``env_counts``);
4. the pydantic models, as a backstop: a pydantic error is kept only where no other check
   already reported a problem at that path.

Unlike the API server, rules still run after a schema error, so one pass reports every
problem. One exception keeps the output free of noise and the cost bounded: a rule is not
run when a value of the wrong shape (wrong type, missing required field, unsupported value,
too long, too many) sits at or below its node; the schema error already explains the
rejection. Before any of this, the document must be plain bounded data (``yamlio.Limits``:
values, depth, 64-bit integers, no dates or binary); otherwise only those problems are
reported. Diagnostics are deduplicated and sorted by field path. ``parse_document`` returns
the typed model when nothing is wrong.

``certainly_valid`` is the render path's shortcut: the same schema, metadata and rule checks
without building a model (Python equivalents decide the rules where they exist, cel-python is
loaded only for the others), answering True only for documents on which the models could
not disagree (no nulls, ASCII text, the common metadata fields). Anything else, and every
document with a problem, goes through ``validate``, so every report comes from one place.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ..diagnose.prior import annotation_problems
from ..diagnostics import Diagnostic, PathPart, error, format_path
from ..vocabulary import API_VERSION
from ..yamlio import DOCUMENT_LIMITS, load_documents, plain_data_problems
from .cel_rules import MODEL_DECIDED_RULES
from .crdfiles import CRD_DIR, crd_file_name, crd_file_of_kind
from .env_counts import training_count_problems
from .health_check import health_expression_problems
from .markers import REASON_CODES
from .native_rules import NATIVE_RULES
from .patterns import LABEL_KEY, LABEL_VALUE
from .schema_check import BLOCKING_CODES, check_schema, normalize, whole_numbers_as_integers
from .threshold_check import threshold_problems
from .workflow_names import certification_name_problems

if TYPE_CHECKING:
    from .common import ApiObject

__all__ = ["validate", "parse_document", "certainly_valid", "installed_schema", "schema_of_kind", "iter_rules"]

_MISSING = object()
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_KEY = re.compile(LABEL_KEY)
_LABEL_VALUE = re.compile(LABEL_VALUE)
#: The API server's cap on the total size of an object's annotations (keys plus values).
MAX_ANNOTATIONS_BYTES = 256 * 1024


def validate(data: Any, old: Any = None) -> list[Diagnostic]:
    """Every problem in ``data`` (and in the change from ``old``, when given), sorted by path."""
    return _run(data, old)[1]


def parse_document(data: Any) -> tuple[ApiObject | None, list[Diagnostic]]:
    """The typed model of a document and its diagnostics; the model is None when any is an error."""
    return _run(data, None)


def installed_schema(cls: type[ApiObject]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a kind, read from its committed CRD file."""
    schema: dict[str, Any] = _installed_crd(crd_file_name(cls))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def schema_of_kind(kind: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` of a kind named by its ``kind`` string (no model is built), or None."""
    name = crd_file_of_kind(kind)
    return _installed_crd(name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"] if name is not None else None


@lru_cache(maxsize=None)
def _installed_crd(file_name: str) -> dict[str, Any]:
    path = CRD_DIR / file_name
    (crd,) = load_documents(path.read_text(encoding="utf-8"), str(path))
    return dict(crd)


#: Kinds whose models check nothing the CRD schema and rules do not (every field constraint
#: of theirs is in the generated schema, the one validator a model-decided rule), so a document
#: the CRD checks pass is one the models accept.
_SHORTCUT_KINDS = frozenset({"Certification"})
#: Metadata fields the shortcut accepts (as strings, or maps of strings for labels and
#: annotations); any other field is left to the ObjectMeta model.
_SHORTCUT_METADATA = {"name": str, "generateName": str, "namespace": str, "labels": dict, "annotations": dict}


def certainly_valid(data: Any, kind: str) -> bool:
    """True when ``data`` is a valid ``kind`` and ``validate(data)`` would report nothing.

    False means "not known to be valid" (a problem, or a document outside the shortcut): call
    ``validate`` for the report. No model is built and cel-python is loaded only for a rule with
    no Python equivalent on a node the document has.
    """
    if kind not in _SHORTCUT_KINDS or not isinstance(data, dict) or data.get("kind") != kind:
        return False
    # Bounded plain data first: nothing below may walk data that breaks the limits (depth above all).
    if data.get("apiVersion") != API_VERSION or _plain_problems(data, "") or not _model_neutral(data):
        return False
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not all(_shortcut_metadata(key, value) for key, value in meta.items()):
        return False
    schema = schema_of_kind(kind)
    if schema is None:
        return False
    current = whole_numbers_as_integers(schema, normalize(schema, data))
    if check_schema(schema, current):
        return False
    namespaced = _installed_crd(crd_file_of_kind(kind) or "")["spec"].get("scope") == "Namespaced"
    if _check_metadata(kind, namespaced, meta) or certification_name_problems(current) or threshold_problems(current):
        return False
    if training_count_problems(current) or annotation_problems(current):
        return False
    return not _check_rules(schema, current, _MISSING, (), _Blocked([]), decide_model_rules=True)


def _shortcut_metadata(key: str, value: Any) -> bool:
    if type(value) is not _SHORTCUT_METADATA.get(key):
        return False
    return type(value) is str or all(type(k) is str and type(v) is str for k, v in value.items())


def _model_neutral(value: Any) -> bool:
    """No null and no text outside ASCII anywhere: where a model and the schema could read a
    value differently (an optional field's null, Unicode classes in a pattern)."""
    if value is None:
        return False
    if type(value) is str:
        return value.isascii()
    if type(value) is dict:
        return all(type(key) is str and key.isascii() and _model_neutral(item) for key, item in value.items())
    if type(value) is list:
        return all(_model_neutral(item) for item in value)
    return True


def iter_rules(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every validation rule in a schema with the schema path of the node it sits on."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule
    for key, sub in schema.get("properties", {}).items():
        yield from iter_rules(sub, f"{path}.{key}" if path else key)
    if isinstance(schema.get("items"), dict):
        yield from iter_rules(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from iter_rules(schema["additionalProperties"], f"{path}.*")


def _run(data: Any, old: Any) -> tuple[ApiObject | None, list[Diagnostic]]:
    # Sizes, depth and value types first: nothing below may walk data that breaks them.
    unplain = _plain_problems(data, "")
    if old is not None:
        unplain += _plain_problems(old, "old object: ")
    if unplain:
        return None, _finish(unplain)
    from .dispatch import kind_of, load_model

    cls, problems = kind_of(data)
    if cls is None:
        return None, _finish(problems)
    schema = installed_schema(cls)
    current = whole_numbers_as_integers(schema, normalize(schema, data))  # as the API server decodes it
    found = check_schema(schema, current)
    found += _check_metadata(cls.kind_name(), cls.namespaced, data.get("metadata"))
    found += certification_name_problems(current)
    found += threshold_problems(current)
    found += health_expression_problems(current)
    found += training_count_problems(current)
    found += annotation_problems(current)
    previous = _MISSING
    if old is not None:
        old_cls, old_problems = kind_of(old)
        if old_cls is not cls:
            found.append(error("OldObjectInvalid", "", "the old object must be a valid object of the same kind"))
            found += [error(d.code, d.path, f"old object: {d.message}") for d in old_problems]
        else:
            previous = whole_numbers_as_integers(schema, normalize(schema, old))
    found += _check_rules(schema, current, previous, (), _Blocked(found))
    model, model_problems = load_model(cls, whole_numbers_as_integers(schema, data))
    reported = {d.path for d in found}
    found += [d for d in model_problems if d.path not in reported]
    found = _finish(found)
    if any(d.is_error for d in found):
        model = None
    return model, found


def _plain_problems(data: Any, prefix: str) -> list[Diagnostic]:
    return [error(code, path, prefix + message) for code, path, message in plain_data_problems(data, DOCUMENT_LIMITS)]


class _Blocked:
    """Where the schema checks found values of the wrong shape, as the set of those paths and
    every path above them, so that a lookup costs the same however many errors there are."""

    def __init__(self, found: list[Diagnostic]):
        self.shape = _with_ancestors(d.path for d in found if d.code in BLOCKING_CODES)
        self.types = _with_ancestors(d.path for d in found if d.code == "FieldTypeInvalid")

    def ill_typed(self, path: tuple[PathPart, ...]) -> bool:
        """A value at or below ``path`` has the wrong type: rules there would see garbage."""
        return format_path(path) in self.types

    def misshapen(self, path: tuple[PathPart, ...]) -> bool:
        return format_path(path) in self.shape


_STEP = re.compile(r"[.\[]")


def _with_ancestors(paths: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for path in paths:
        if path in out:
            continue
        out.add(path)
        out.add("")
        out.update(path[: match.start()] for match in _STEP.finditer(path))
    return frozenset(out)


def _check_rules(
    schema: dict[str, Any],
    value: Any,
    old: Any,
    path: tuple[PathPart, ...],
    blocked: _Blocked,
    decide_model_rules: bool = False,
) -> list[Diagnostic]:
    """Evaluate the rules on this node, then on every node below it that is present.

    The rules a model decides are skipped (the model reports them) unless
    ``decide_model_rules``, when their Python equivalent decides them here.
    """
    if value is None:
        return []
    out: list[Diagnostic] = []
    # A rule over a node with a value of the wrong shape at or below it (a wrong type, a missing
    # required field, too many items...) is not run: the schema error already rejects the
    # document, and such a rule could only fail noisily or, over a list, cost far more than
    # its size (the API server skips every rule in that case).
    rules = schema.get("x-kubernetes-validations", [])
    skip = bool(rules) and blocked.misshapen(path)
    for rule in rules:
        transition = "oldSelf" in rule["rule"]
        if (transition and old is _MISSING) or skip:
            continue
        diagnostic = _evaluate(rule, value, old, path, transition, blocked, decide_model_rules)
        if diagnostic is not None:
            out.append(diagnostic)
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if isinstance(value, dict):
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                out += _check_rules(sub, item, _child(old, key), path + (key,), blocked, decide_model_rules)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        if len(value) > schema.get("maxItems", len(value)):
            return out  # refused by its size already; its items are not worth a rule each
        old_items = _correlate(schema, old)
        for index, item in enumerate(value):
            out += _check_rules(schema["items"], item, old_items(item), path + (index,), blocked, decide_model_rules)
    return out


def _evaluate(
    rule: dict[str, Any],
    value: Any,
    old: Any,
    path: tuple[PathPart, ...],
    transition: bool,
    blocked: _Blocked,
    decide_model_rules: bool = False,
) -> Diagnostic | None:
    where = path + _field_path_parts(rule.get("fieldPath", ""))
    native = NATIVE_RULES.get(rule["rule"]) if not transition else None
    if rule["rule"] in MODEL_DECIDED_RULES:
        if not decide_model_rules:
            return None  # the pydantic model reports the same failure, at the same path
        if native is None or native(value) is not True:
            return error(REASON_CODES[rule.get("reason", "FieldValueInvalid")], where, rule["message"])
        return None
    holds = native(value) if native is not None else None
    if holds is None:
        from .cel_eval import RuleError, evaluate_rule  # cel-python, for a rule with no Python equivalent

        try:
            holds = evaluate_rule(rule["rule"], value, old, transition=transition)
        except RuleError as exc:
            if blocked.misshapen(path):
                return None
            return error("RuleEvaluationError", where, f"{rule['message']} (the rule could not be evaluated: {exc})")
    if holds:
        return None
    return error(REASON_CODES[rule.get("reason", "FieldValueInvalid")], where, rule["message"])


def _child(old: Any, key: str) -> Any:
    if isinstance(old, dict) and old.get(key) is not None:
        return old[key]
    return _MISSING


def _correlate(schema: dict[str, Any], old: Any) -> Any:
    """Old list items pair with new ones only in ``x-kubernetes-list-type: map`` lists, by key."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return lambda item: _MISSING
    by_key = {tuple(entry.get(k) for k in keys): entry for entry in old if isinstance(entry, dict)}

    def lookup(item: Any) -> Any:
        if not isinstance(item, dict):
            return _MISSING
        return by_key.get(tuple(item.get(k) for k in keys), _MISSING)

    return lookup


def _field_path_parts(field_path: str) -> tuple[PathPart, ...]:
    return tuple(part for part in field_path.split(".") if part)


def _check_metadata(kind: str, namespaced: bool, meta: Any) -> list[Diagnostic]:
    """The object-metadata checks the API server makes on every object."""
    if not isinstance(meta, dict):
        return [] if meta is not None else [error("FieldRequired", "metadata", "Required value")]
    out: list[Diagnostic] = []
    name, generate_name, namespace = meta.get("name"), meta.get("generateName"), meta.get("namespace")
    if not name and not generate_name:
        out.append(error("FieldRequired", "metadata.name", "Required value: name or generateName is required"))
    if isinstance(name, str) and name and (len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name)):
        out.append(
            error(
                "FieldInvalid",
                "metadata.name",
                "must be a lowercase RFC 1123 subdomain: lowercase alphanumerics, '-' and '.', at most 253 characters",
            )
        )
    if namespace is not None and not namespaced:
        out.append(error("FieldForbidden", "metadata.namespace", f"not allowed on this type: {kind} is cluster-scoped"))
    elif isinstance(namespace, str) and namespace and (len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace)):
        out.append(error("FieldInvalid", "metadata.namespace", "must be a lowercase RFC 1123 label of at most 63 characters"))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = sum(
            len(str(k).encode("utf-8", "surrogatepass")) + len(str(v).encode("utf-8", "surrogatepass")) for k, v in annotations.items()
        )
        if size > MAX_ANNOTATIONS_BYTES:
            out.append(
                error(
                    "FieldTooLong",
                    "metadata.annotations",
                    f"Too long: annotations hold {size} bytes; keys and values together may hold at most {MAX_ANNOTATIONS_BYTES}",
                )
            )
    for field, check_values in (("labels", True), ("annotations", False)):
        entries = meta.get(field)
        if not isinstance(entries, dict):
            continue
        for key, item in entries.items():
            if not _is_qualified_key(key):
                out.append(
                    error("FieldInvalid", ("metadata", field), f"{key!r} is not a valid key: [prefix/]name, name at most 63 characters")
                )
            if check_values and isinstance(item, str) and (len(item) > 63 or not _LABEL_VALUE.fullmatch(item)):
                # The API server reports label values at the map, like label keys.
                out.append(error("FieldInvalid", ("metadata", field), f"{item!r} is not a valid label value (key {key!r})"))
    return out


def _is_qualified_key(key: Any) -> bool:
    if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key):
        return False
    prefix, _, _ = key.rpartition("/")
    return len(prefix) <= 253


def _finish(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Drop repeats (same path and message) and sort by path, indexes compared as numbers."""
    unique: dict[tuple[str, str], Diagnostic] = {}
    for item in diagnostics:
        unique.setdefault((item.path, item.message), item)
    return sorted(unique.values(), key=lambda d: (_path_key(d.path), d.message, d.code))


_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _path_key(path: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(index)) if index else (1, name) for index, name in _PART.findall(path))
