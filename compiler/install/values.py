"""Chart-style values for the install: the defaults, Helm-style merging and ``--set``, and their checks.

Values merge the way Helm merges them: maps merge key by key, anything else replaces, and a
``null`` removes a key: a key of the values model then takes its default again, an entry inside
a pass-through value (``manager.resources``, ``.nodeSelector``, ``.tolerations``) stays removed,
as in Helm. ``parse_set`` reads Helm's ``--set`` syntax (``a.b=c,d={x,y},e[0]=f``, backslash escapes, ``true``/``false``/``null`` and integers
typed). ``resolve_values`` checks the merged result against the defaults' shape plus the rules
below and raises :class:`CompileError` listing every problem by path.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from nvcre import __version__

from ..compose import CONTROLLER_NAMESPACE
from ..diagnostics import CompileError, Diagnostic, error, warning
from ..vocabulary import CONTROLLER_SERVICE_ACCOUNT

__all__ = ["DEFAULT_VALUES", "FREE_FORM", "LABEL_MAPS", "merge_values", "parse_set", "resolve_values"]

DEFAULT_VALUES: dict[str, Any] = {
    "namespace": {"name": CONTROLLER_NAMESPACE, "create": True},
    "serviceAccount": {"name": CONTROLLER_SERVICE_ACCOUNT},
    "crds": {"install": True},
    "logProfiles": {"install": True},
    "rbac": {"scope": "cluster", "runNamespaces": []},
    "manager": {
        "image": {"repository": "nvcre/manager", "tag": __version__, "digest": "", "pullPolicy": "IfNotPresent"},
        "imagePullSecrets": [],
        "replicas": 1,
        "leaderElection": True,
        "workers": 2,
        "logLevel": "info",
        "namespaceAccessTimeout": "10m",
        "neverSchedulableTimeout": "30m",
        "computeDomainTimeout": "10m",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "nodeSelector": {},
        "tolerations": [],
    },
    "metrics": {
        "certSecret": "",
        "serviceMonitor": {"enabled": True, "labels": {}},
        "prometheusRule": {"enabled": True, "labels": {}},
        "grafanaDashboard": {"enabled": True},
    },
}

#: Keys whose value is free-form (a Kubernetes structure passed through, checked by its type only).
FREE_FORM = frozenset(
    {
        ("manager", "resources"),
        ("manager", "nodeSelector"),
        ("manager", "tolerations"),
        ("metrics", "serviceMonitor", "labels"),
        ("metrics", "prometheusRule", "labels"),
    }
)
#: Free-form maps that become object labels: string keys (qualified names) and string values.
LABEL_MAPS = (("metrics", "serviceMonitor", "labels"), ("metrics", "prometheusRule", "labels"))

#: The value rules as anchored patterns. Python checks them with ``fullmatch`` (so a trailing
#: newline never slips past ``$``); the chart's values.schema.json carries the same patterns.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
DIGEST = r"^sha256:[a-f0-9]{64}$"
TAG = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
DURATION = r"^(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+$"
REPOSITORY = r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$"
#: A label key: an optional DNS-subdomain prefix and a name of up to 63 characters.
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
RBAC_SCOPES = ("cluster", "namespaced")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
LOG_LEVELS = ("debug", "info", "warning", "error")
#: Lower bounds of the integer values.
MINIMUMS = {"replicas": 0, "workers": 1}

_DNS_LABEL = re.compile(DNS_LABEL)
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN)
_DIGEST = re.compile(DIGEST)
_TAG = re.compile(TAG)
_DURATION = re.compile(DURATION)
_REPOSITORY = re.compile(REPOSITORY)
_LABEL_KEY = re.compile(LABEL_KEY)
_LABEL_VALUE = re.compile(LABEL_VALUE)


def merge_values(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: maps merge, other values replace, ``None`` deletes. Inputs untouched."""
    out = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# --- --set ---------------------------------------------------------------------------------------


def _split(text: str, separator: str) -> list[str]:
    """Split on unescaped ``separator`` outside ``{...}``; escapes are kept for the next stage."""
    parts, current, depth, escaped = [], "", 0, False
    for char in text:
        if escaped:
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "{":
            depth += 1
            current += char
        elif char == "}":
            depth -= 1
            current += char
        elif char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if escaped:
        current += "\\"
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _typed(text: str) -> Any:
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if re.fullmatch(r"-?(?:0|[1-9][0-9]*)", text):
        return int(text)
    return _unescape(text)


def _value(text: str) -> Any:
    if text.startswith("{") and text.endswith("}"):
        inner = text[1:-1]
        return [] if inner == "" else [_typed(item) for item in _split(inner, ",")]
    return _typed(text)


_SEGMENT = re.compile(r"^(?P<name>(?:[^\[\\]|\\.)+)(?P<indexes>(?:\[\d+\])*)$")


def _assign(target: dict[str, Any], path: list[str], value: Any, where: str) -> None:
    node: Any = target
    steps: list[str | int] = []
    for segment in path:
        match = _SEGMENT.match(segment)
        if match is None:
            raise CompileError([error("InvalidSet", where, f"cannot read the key {segment!r}")])
        steps.append(_unescape(match["name"]))
        steps.extend(int(i) for i in re.findall(r"\[(\d+)\]", match["indexes"]))
    for step, following in zip(steps, [*steps[1:], None]):
        fresh: Any = [] if isinstance(following, int) else {}
        if following is None:
            _store(node, step, value, where)
            return
        if isinstance(step, int):
            while len(node) <= step:
                node.append(None)
            if not isinstance(node[step], (dict, list)):
                node[step] = fresh
            node = node[step]
        else:
            if not isinstance(node.get(step), (dict, list)):
                node[step] = fresh
            node = node[step]


def _store(node: Any, step: str | int, value: Any, where: str) -> None:
    if isinstance(step, int):
        if not isinstance(node, list):
            raise CompileError([error("InvalidSet", where, "an index needs a list")])
        while len(node) <= step:
            node.append(None)
        node[step] = value
    else:
        node[step] = value


def parse_set(expression: str, where: str = "--set") -> dict[str, Any]:
    """Values from one ``--set`` argument (Helm syntax)."""
    out: dict[str, Any] = {}
    for assignment in _split(expression, ","):
        if not assignment:
            continue
        key, eq, raw = assignment.partition("=")
        if not eq or not key:
            raise CompileError([error("InvalidSet", where, f"expected key=value, got {assignment!r}")])
        _assign(out, _split(key, "."), _value(raw), where)
    return out


# --- checks -------------------------------------------------------------------------------------


def _shape(values: Any, defaults: Any, path: tuple[str, ...], problems: list[Diagnostic]) -> None:
    where = ".".join(path)
    if path in FREE_FORM:
        if type(values) is not type(defaults):
            problems.append(error("FieldTypeInvalid", where, f"expected a {_type_name(defaults)}"))
        return
    if isinstance(defaults, dict):
        if not isinstance(values, dict):
            problems.append(error("FieldTypeInvalid", where, "expected a map"))
            return
        for key in sorted(values):
            if key not in defaults:
                problems.append(
                    error("UnknownField", ".".join((*path, str(key))), f"unknown value; expected one of {', '.join(sorted(defaults))}")
                )
            else:
                _shape(values[key], defaults[key], (*path, key), problems)
    elif isinstance(defaults, bool) or isinstance(values, bool):
        if type(values) is not type(defaults):
            problems.append(error("FieldTypeInvalid", where, f"expected a {_type_name(defaults)}"))
    elif isinstance(defaults, list):
        if not isinstance(values, list):
            problems.append(error("FieldTypeInvalid", where, "expected a list"))
    elif not isinstance(values, type(defaults)):
        problems.append(error("FieldTypeInvalid", where, f"expected a {_type_name(defaults)}"))


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", str: "string", list: "list", dict: "map"}.get(type(value), type(value).__name__)


def _rules(values: dict[str, Any]) -> list[Diagnostic]:
    """Every value rule the types alone do not say, in the order of the values file."""
    return [
        *_identity_rules(values),
        *_rbac_rules(values["rbac"]),
        *_image_rules(values["manager"]),
        *_manager_rules(values["manager"]),
        *_metrics_rules(values["metrics"]),
        *_label_problems(values),
    ]


def _identity_rules(values: dict[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    namespace, account = values["namespace"]["name"], values["serviceAccount"]["name"]
    if not _DNS_LABEL.fullmatch(namespace):
        problems.append(error("FieldValueInvalid", "namespace.name", f"{namespace!r} is not a DNS-1123 label"))
    if not _DNS_SUBDOMAIN.fullmatch(account):
        problems.append(error("FieldValueInvalid", "serviceAccount.name", f"{account!r} is not a DNS-1123 subdomain"))
    return problems


def _rbac_rules(rbac: dict[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    if rbac["scope"] not in RBAC_SCOPES:
        problems.append(error("FieldValueNotSupported", "rbac.scope", f"{rbac['scope']!r}: expected cluster or namespaced"))
    seen: set[str] = set()
    for index, namespace in enumerate(rbac["runNamespaces"]):
        where = f"rbac.runNamespaces[{index}]"
        if not isinstance(namespace, str) or not _DNS_LABEL.fullmatch(namespace):
            problems.append(error("FieldValueInvalid", where, f"{namespace!r} is not a namespace name (DNS-1123 label)"))
        elif namespace in seen:
            problems.append(error("FieldValueDuplicate", where, f"{namespace} is listed twice"))
        seen.add(str(namespace))
    if rbac["scope"] == "namespaced" and not rbac["runNamespaces"]:
        problems.append(
            warning(
                "NoRunNamespaces",
                "rbac.runNamespaces",
                "namespaced scope without run namespaces: grant each one later (nvcrectl rbac print)",
            )
        )
    if rbac["scope"] == "cluster" and rbac["runNamespaces"]:
        problems.append(
            warning("RunNamespacesIgnored", "rbac.runNamespaces", "cluster scope already grants every namespace; the list is not used")
        )
    return problems


def _image_rules(manager: dict[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    image = manager["image"]
    if not _REPOSITORY.fullmatch(image["repository"]):
        problems.append(error("FieldValueInvalid", "manager.image.repository", f"{image['repository']!r} is not an image repository"))
    if image["digest"] and not _DIGEST.fullmatch(image["digest"]):
        problems.append(error("FieldValueInvalid", "manager.image.digest", "expected sha256: and 64 hex digits"))
    if not image["digest"] and not _TAG.fullmatch(image["tag"]):
        problems.append(error("FieldValueInvalid", "manager.image.tag", f"{image['tag']!r} is not an image tag (set a tag or a digest)"))
    if image["pullPolicy"] not in PULL_POLICIES:
        problems.append(error("FieldValueNotSupported", "manager.image.pullPolicy", "expected Always, IfNotPresent or Never"))
    for index, secret in enumerate(manager["imagePullSecrets"]):
        if not isinstance(secret, str) or not _DNS_SUBDOMAIN.fullmatch(secret):
            problems.append(error("FieldValueInvalid", f"manager.imagePullSecrets[{index}]", "expected a Secret name"))
    return problems


def _manager_rules(manager: dict[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    for key, low in MINIMUMS.items():
        if manager[key] < low:
            problems.append(error("FieldValueInvalid", f"manager.{key}", f"must be at least {low}"))
    if manager["replicas"] > 1 and not manager["leaderElection"]:
        problems.append(error("FieldValueInvalid", "manager.replicas", "more than one replica needs manager.leaderElection"))
    if manager["logLevel"] not in LOG_LEVELS:
        problems.append(error("FieldValueNotSupported", "manager.logLevel", "expected debug, info, warning or error"))
    for key in ("namespaceAccessTimeout", "neverSchedulableTimeout", "computeDomainTimeout"):
        if not _DURATION.fullmatch(manager[key]):
            problems.append(error("FieldValueInvalid", f"manager.{key}", "expected a duration such as 10m or 90s"))
    return problems


def _metrics_rules(metrics: dict[str, Any]) -> list[Diagnostic]:
    secret = metrics["certSecret"]
    if secret and not _DNS_SUBDOMAIN.fullmatch(secret):
        return [error("FieldValueInvalid", "metrics.certSecret", f"{secret!r} is not a Secret name")]
    return []


def _label_problems(values: dict[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    for path in LABEL_MAPS:
        labels: Any = values
        for key in path:
            labels = labels[key]
        for key, value in labels.items():
            where = ".".join((*path, str(key)))
            if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key):
                problems.append(error("FieldValueInvalid", where, f"{key!r} is not a label key"))
            elif not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
                problems.append(error("FieldValueInvalid", where, f"{value!r} is not a label value (a string of up to 63 characters)"))
    return problems


def _fill_defaults(values: Mapping[str, Any], defaults: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``values`` with every key of the model it lacks taken from ``defaults``; pass-through values kept as given."""
    out = copy.deepcopy(dict(values))
    for key, default in defaults.items():
        if key not in out:
            out[key] = copy.deepcopy(default)
        elif (*path, key) not in FREE_FORM and isinstance(default, Mapping) and isinstance(out[key], Mapping):
            out[key] = _fill_defaults(out[key], default, (*path, key))
    return out


def resolve_values(*layers: Mapping[str, Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Defaults, then each layer in order; checked. Returns the values and any warnings."""
    values: dict[str, Any] = copy.deepcopy(DEFAULT_VALUES)
    for layer in layers:
        values = merge_values(values, layer)
    problems: list[Diagnostic] = []
    _shape(values, DEFAULT_VALUES, (), problems)
    # a removed key of the model falls back to its default; inside a pass-through value a null
    # removes the entry for good, as Helm does (that is how a default limit is dropped)
    values = _fill_defaults(values, DEFAULT_VALUES, ())
    if not any(d.is_error for d in problems):
        problems.extend(_rules(values))
    if any(d.is_error for d in problems):
        raise CompileError(problems)
    return values, problems
