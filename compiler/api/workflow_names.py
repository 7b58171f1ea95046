"""Checks that a Certification's categories become Workflows the controller can tell apart.

Each category is rendered to a Workflow named ``<certification>-<domain>-<variant>`` plus a
suffix made from some of its options, shortened to 31 characters (``nvcre.compiler.naming``).
Two categories that differ only in options outside that suffix (env, thresholds, timeout,
image...) or whose long names shorten to the same hash would get one name: the controller
would then run one Workflow and report its result for both, so a category that never ran
could read PASSED. Such a document is refused here, at the later category's path.

The certification's name is also written as a label value on every Workflow, so it must fit
in 63 characters: a longer name would validate and render, then fail on the cluster.
"""

from __future__ import annotations

import json
from typing import Any

from ..diagnostics import Diagnostic, error
from ..naming import workflow_name

__all__ = ["certification_name_problems", "MAX_LABEL_VALUE"]

#: The API server's limit on a label value.
MAX_LABEL_VALUE = 63


def certification_name_problems(data: Any) -> list[Diagnostic]:
    """Workflow-name collisions between categories, and a name too long for its label."""
    if not isinstance(data, dict) or data.get("kind") != "Certification":
        return []
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return []
    found: list[Diagnostic] = []
    if len(name) > MAX_LABEL_VALUE:
        found.append(
            error(
                "NameTooLongForLabel",
                "metadata.name",
                f"must be no more than {MAX_LABEL_VALUE} characters: the name is the value of the "
                f"nvcre.nvidia.com/certification label on every Workflow it renders ({len(name)} characters given)",
            )
        )
    spec = data.get("spec")
    categories = spec.get("categories") if isinstance(spec, dict) else None
    if isinstance(categories, list):
        found += _collisions(name, categories)
    return found


def _collisions(name: str, categories: list[Any]) -> list[Diagnostic]:
    #: Workflow name -> (index, canonical text) of the first category that renders it
    first: dict[str, tuple[int, str]] = {}
    found: list[Diagnostic] = []
    for index, category in enumerate(categories):
        named = _workflow_name_of(name, category)
        if named is None:
            continue
        canonical = json.dumps(category, sort_keys=True, default=str)
        if named in first:
            earlier, earlier_canonical = first[named]
            if earlier_canonical == canonical:
                continue  # an identical entry: the duplicate-category rule reports it
            found.append(
                error(
                    "WorkflowNameCollision",
                    f"spec.categories[{index}]",
                    f'renders to the Workflow "{named}" like spec.categories[{earlier}]: one Workflow would '
                    "run and its result would be reported for both. Categories of one domain and variant must "
                    "differ in an option that names the Workflow (nodesPerJob, enableMNNVL, testScale, "
                    "enableCheckpoint, maxSteps, exitDurationMins, gpusPerNode, rdmaDeviceAccess), or go in "
                    "separate Certifications",
                )
            )
            continue
        first[named] = (index, canonical)
    return found


def _workflow_name_of(name: str, category: Any) -> str | None:
    if not isinstance(category, dict):
        return None
    domain, variant, options = category.get("domain"), category.get("variant"), category.get("options")
    if not isinstance(domain, str) or not isinstance(variant, str):
        return None
    if options is not None and not isinstance(options, dict):
        return None
    try:
        return workflow_name(name, domain, variant, options)
    except (TypeError, ValueError):  # options of the wrong shape: the schema checks report them
        return None
