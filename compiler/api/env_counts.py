"""Refuses training counts that are not whole numbers, where the user wrote them.

The training entries' script computes with some variables (``TRAIN_SCRIPT_COUNTS``); a value for
one of them that is not plain decimal digits could reach shell arithmetic, so it is refused. The
render's env pass refuses it too, but only for the merged list of a category; here a
Certification is checked as written, so ``validate`` and ``render`` agree and the error points at
the entry the user wrote: ``spec.env[k].value`` when the value comes from the spec-wide env,
``spec.categories[i].options.env[j].value`` when the category sets it.
"""

from __future__ import annotations

from typing import Any

from ..diagnostics import Diagnostic, error

__all__ = ["TRAIN_SCRIPT_COUNTS", "count_error", "is_count", "training_count_problems"]

#: variables the training script (catalog/_lib/scripts/train.sh.j2) reads as whole numbers
TRAIN_SCRIPT_COUNTS = frozenset(
    {
        "TENSOR_PARALLELISM",
        "PIPELINE_PARALLELISM",
        "MICRO_BATCH_SIZE",
        "GLOBAL_BATCH_SIZE",
        "SEQ_LENGTH",
        "TRAIN_ITERS",
        "EXIT_DURATION_MINS",
        "SAVE_INTERVAL",
        "SAVE_RETAIN_INTERVAL",
    }
)


def is_count(value: Any) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit()


def count_error(path: str, name: str) -> Diagnostic:
    return error("EnvValueInvalid", path, f"{name} is a count the training script computes with; give decimal digits only")


def _entries(env: Any) -> list[tuple[int, str, Any]]:
    if not isinstance(env, list):
        return []
    return [
        (i, e["name"], e.get("value", ""))
        for i, e in enumerate(env)
        if isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"] in TRAIN_SCRIPT_COUNTS
    ]


def training_count_problems(data: Any) -> list[Diagnostic]:
    """One error per count a training category of a Certification would receive as non-digits."""
    if not isinstance(data, dict) or data.get("kind") != "Certification" or not isinstance(data.get("spec"), dict):
        return []
    spec = data["spec"]
    categories = spec.get("categories") if isinstance(spec.get("categories"), list) else []
    spec_wide = _entries(spec.get("env"))
    found: dict[str, Diagnostic] = {}
    for c, category in enumerate(categories):
        if not isinstance(category, dict) or category.get("domain") != "training":
            continue
        options = category.get("options")
        own = _entries(options.get("env") if isinstance(options, dict) else None)
        for j, name, value in own:
            if not is_count(value):
                path = f"spec.categories[{c}].options.env[{j}].value"
                found[path] = count_error(path, name)
        overridden = {name for _, name, _ in own}
        for k, name, value in spec_wide:
            if name not in overridden and not is_count(value):
                path = f"spec.env[{k}].value"
                found[path] = count_error(path, name)
    return list(found.values())
