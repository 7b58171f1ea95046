"""Python equivalents of the CEL rules whose cost grows with the square of a list.

cel-python interprets a rule by walking its syntax tree, about a third of a millisecond per
inner step. The duplicate-category rule compares every category with every other (4,096
steps at 64 categories) and the merged env cap every category's variables with the global
ones (65,536 steps at 64 x 32 x 32), so at the caps the CRD's own rules take seconds. The
functions here decide the same rules in linear time for the offline validator; the API server
keeps running the CEL text, which stays the definition. Each function returns None when the
value is not of the shape it expects, and the validator then falls back to cel-python, so a
native rule can only be faster, never different. A test checks every function against
cel-python on generated values.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .cel_rules import MERGED_ENV_CAP, MERGED_LABEL_CAP, UNIQUE_CATEGORIES
from .patterns import MAX_ENV, MAX_LABELS

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


#: Rule text -> a function deciding it for ``self`` (None: let cel-python decide).
NATIVE_RULES: dict[str, Callable[[Any], bool | None]] = {
    UNIQUE_CATEGORIES.rule: unique_categories,
    MERGED_ENV_CAP.rule: merged_env_cap,
    MERGED_LABEL_CAP.rule: merged_label_cap,
}
