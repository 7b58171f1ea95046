"""Python equivalents of CEL rules, so that validating a document seldom needs cel-python.

Two reasons to have one. The first is cost: some rules grow with the square of a list.

cel-python interprets a rule by walking its syntax tree, about a third of a millisecond per
inner step. The duplicate-category rule compares every category with every other (4,096
steps at 64 categories) and the merged env cap every category's variables with the global
ones (65,536 steps at 64 x 32 x 32), so at the caps the CRD's own rules take seconds. The
functions here decide the same rules in linear time for the offline validator; the API server
keeps running the CEL text, which stays the definition. Each function returns None when the
value is not of the shape it expects, and the validator then falls back to cel-python, so a
native rule can only be faster, never different. A test checks every function against
cel-python on generated values.

The second is start-up: loading cel-python costs a cold render more than all its rules, so
the simple string, key and quantity rules of the API (label keys, queue label key, NIC
resource name, source repository, threshold metrics, non-negative quantities, requests within
limits) have equivalents too, written with the same RE2 matching cel-python uses, as does
the ``valueFrom`` ban, which a model decides in ``validate`` and the render's shortcut here.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Callable

from ..vocabulary import RESERVED_PREFIX
from .cel_rules import (
    _RESERVED_KEY,
    _RESERVED_SUBDOMAIN,
    LABEL_KEY_RULES,
    MERGED_ENV_CAP,
    MERGED_LABEL_CAP,
    NIC_RESOURCE_NAME_RULES,
    NON_NEGATIVE_QUANTITY,
    QUEUE_LABEL_KEY_RULES,
    SOURCE_REPO_HOST,
    SOURCE_REPO_SCHEME,
    THRESHOLD_KEYS,
    THRESHOLD_KEYS_RULE,
    UNIQUE_CATEGORIES,
    VALUE_FROM_FORBIDDEN,
    requests_within_limits,
)
from .patterns import LABEL_KEY, MAX_ENV, MAX_LABELS, QUANTITY

__all__ = ["NATIVE_RULES"]


def _canonical(value: Any) -> str:
    """A key equal for two values exactly when CEL finds them equal (whole floats as integers,
    as the API server decodes them in integer fields)."""

    def plain(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, dict):
            return {k: plain(v) for k, v in item.items()}
        if isinstance(item, list):
            return [plain(v) for v in item]
        return item

    return json.dumps(plain(value), sort_keys=True)


def unique_categories(value: Any) -> bool | None:
    """``self.all(c, self.exists_one(d, d.variant == c.variant ? d == c : false))``."""
    if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("variant"), str) for c in value):
        return None
    keys = [_canonical(c) for c in value]
    return len(set(keys)) == len(keys)


def _options(category: Any) -> dict[str, Any] | None:
    if not isinstance(category, dict):
        return None
    options = category.get("options", {})
    return options if isinstance(options, dict) else None


def merged_env_cap(value: Any) -> bool | None:
    """Spec env plus one category's env, merged by name, at most ``MAX_ENV`` variables."""
    if not isinstance(value, dict):
        return None
    if "categories" not in value:
        return True
    categories, spec_env = value["categories"], value.get("env")
    if not isinstance(categories, list) or (spec_env is not None and not isinstance(spec_env, list)):
        return None
    names = set()
    for item in spec_env or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        names.add(item["name"])
    for category in categories:
        options = _options(category)
        if options is None:
            return None
        if "env" not in options:
            continue
        env = options["env"]
        if not isinstance(env, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in env):
            return None
        if spec_env is None:
            total = len(env)
        else:
            total = len(spec_env) + sum(1 for e in env if e["name"] not in names)
        if total > MAX_ENV:
            return False
    return True


def merged_label_cap(value: Any) -> bool | None:
    """Spec workload labels plus one category's, merged by key, at most ``MAX_LABELS``."""
    if not isinstance(value, dict):
        return None
    if "categories" not in value:
        return True
    categories = value["categories"]
    meta = value.get("workloadMetadata", {})
    if not isinstance(categories, list) or not isinstance(meta, dict):
        return None
    spec_labels = meta.get("labels")
    if spec_labels is not None and not isinstance(spec_labels, dict):
        return None
    for category in categories:
        options = _options(category)
        if options is None:
            return None
        if "workloadMetadata" not in options:
            continue
        own_meta = options["workloadMetadata"]
        if not isinstance(own_meta, dict):
            return None
        if "labels" not in own_meta:
            continue
        labels = own_meta["labels"]
        if not isinstance(labels, dict):
            return None
        if spec_labels is None:
            total = len(labels)
        else:
            total = len(spec_labels) + sum(1 for k in labels if k not in spec_labels)
        if total > MAX_LABELS:
            return False
    return True


#: RE2 patterns by name, compiled on first use (a render of a document without these fields
#: never loads the RE2 module)
_RE2_PATTERNS = {
    "reserved": _RESERVED_SUBDOMAIN,
    "label key": LABEL_KEY,
    "prefix length": "^[^/]{1,253}/",
    "source repo": "^[a-z]+://([A-Za-z0-9][A-Za-z0-9._~%+:-]*@)?[A-Za-z0-9][A-Za-z0-9._~%+:-]*(/.*)?$",
}


@cache
def _re2(name: str) -> Any:
    import re2

    return re2.compile(_RE2_PATTERNS[name])


@cache
def _quantity_pattern() -> re.Pattern[str]:
    return re.compile(QUANTITY)  # cel_eval's isQuantity and quantity test the text with this


def _keys(value: Any) -> list[str] | None:
    if not isinstance(value, dict) or not all(type(k) is str for k in value):
        return None
    return list(value)


def _not_reserved(key: str) -> bool:
    return key != _RESERVED_KEY and not key.startswith(RESERVED_PREFIX) and _re2("reserved").search(key) is None


def _prefix_fits(key: str) -> bool:
    return "/" not in key or _re2("prefix length").search(key) is not None


def _over_keys(test: Callable[[str], bool]) -> Callable[[Any], bool | None]:
    def decide(value: Any) -> bool | None:
        keys = _keys(value)
        return None if keys is None else all(test(k) for k in keys)

    return decide


def _over_text(test: Callable[[str], bool]) -> Callable[[Any], bool | None]:
    def decide(value: Any) -> bool | None:
        return test(value) if type(value) is str else None

    return decide


def _nic_domain_allowed(name: str) -> bool:
    return "kubernetes.io/" not in name and not name.startswith("k8s.io/") and ".k8s.io/" not in name


def _https_or_ssh(url: str) -> bool:
    return url.startswith("https://") or url.startswith("ssh://")


def _source_repo_host(url: str) -> bool:
    return not _https_or_ssh(url) or _re2("source repo").search(url) is not None


_NOT_A_QUANTITY = object()


def _quantity(value: Any) -> Any:
    """``quantity(string(value))`` when ``isQuantity`` holds, ``_NOT_A_QUANTITY`` when it does not,
    None when this module cannot be sure of cel_eval's answer (then cel-python decides)."""
    if type(value) is int:
        text = str(value)
    elif type(value) is str:
        text = value
    else:
        return None
    if not _quantity_pattern().fullmatch(text):
        return _NOT_A_QUANTITY
    from ..facts import parse_quantity

    try:
        return parse_quantity(text)
    except ValueError:
        return None  # cel_eval reports the rule as not evaluable


def non_negative_quantity(value: Any) -> bool | None:
    """``!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity('0')) >= 0``."""
    amount = _quantity(value)
    if amount is None:
        return None
    return amount is _NOT_A_QUANTITY or amount >= 0


def _within_limits(resource: str) -> Callable[[Any], bool | None]:
    def decide(value: Any) -> bool | None:
        """A request no larger than its limit (see ``cel_rules.requests_within_limits``)."""
        if not isinstance(value, dict):
            return None
        requests, limits = value.get("requests", _ABSENT), value.get("limits", _ABSENT)
        if requests is _ABSENT or limits is _ABSENT:
            return True
        if not isinstance(requests, dict) or not isinstance(limits, dict):
            return None
        request, limit = requests.get(resource, _ABSENT), limits.get(resource, _ABSENT)
        if request is _ABSENT or limit is _ABSENT:
            return True
        low, high = _quantity(request), _quantity(limit)
        if low is None or high is None:
            return None
        if low is _NOT_A_QUANTITY or high is _NOT_A_QUANTITY:
            return True
        from fractions import Fraction

        return bool(Fraction(low) <= Fraction(high))

    return decide


_ABSENT = object()


def value_from_absent(value: Any) -> bool | None:
    """``!has(self.valueFrom)`` (a model decides it in ``validate``; the render's shortcut, which
    builds no model, decides it here)."""
    return "valueFrom" not in value if isinstance(value, dict) else None


#: Rule text -> a function deciding it for ``self`` (None: let cel-python decide).
NATIVE_RULES: dict[str, Callable[[Any], bool | None]] = {
    UNIQUE_CATEGORIES.rule: unique_categories,
    MERGED_ENV_CAP.rule: merged_env_cap,
    MERGED_LABEL_CAP.rule: merged_label_cap,
    VALUE_FROM_FORBIDDEN.rule: value_from_absent,
    LABEL_KEY_RULES[0].rule: _over_keys(_not_reserved),
    LABEL_KEY_RULES[1].rule: _over_keys(lambda key: _re2("label key").search(key) is not None),
    LABEL_KEY_RULES[2].rule: _over_keys(_prefix_fits),
    QUEUE_LABEL_KEY_RULES[0].rule: _over_text(_prefix_fits),
    QUEUE_LABEL_KEY_RULES[1].rule: _over_text(_not_reserved),
    NIC_RESOURCE_NAME_RULES[0].rule: _over_text(_nic_domain_allowed),
    SOURCE_REPO_SCHEME.rule: _over_text(_https_or_ssh),
    SOURCE_REPO_HOST.rule: _over_text(_source_repo_host),
    THRESHOLD_KEYS_RULE.rule: _over_keys(lambda key: key in THRESHOLD_KEYS),
    NON_NEGATIVE_QUANTITY.rule: non_negative_quantity,
    requests_within_limits("cpu").rule: _within_limits("cpu"),
    requests_within_limits("memory").rule: _within_limits("memory"),
}
