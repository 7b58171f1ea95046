"""Values ``setup init`` keeps on the cluster between runs, and what ``--reset-values`` keeps of them.

A later ``setup init`` starts from the values the last one applied, so a memory limit raised for a
large cluster survives an automated re-run. The controller image (repository, tag, digest) is the
exception: it is worked out on every run, so a pinned digest cannot hold the controller on an old
image after an upgrade. ``--reset-values`` drops everything but ``rbac.scope`` and
``rbac.runNamespaces``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..emit import dump_yaml

__all__ = [
    "KEPT_VALUES_KEY",
    "KEPT_VALUES_NAME",
    "after_reset",
    "changed_paths",
    "kept_values",
    "kept_values_configmap",
]

KEPT_VALUES_NAME = "nvcre-setup-values"
KEPT_VALUES_KEY = "values.yaml"
_IMAGE_KEYS = ("repository", "tag", "digest")


def kept_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values to keep: everything the run applied except the controller image's identity."""
    out = copy.deepcopy(dict(values))
    image = ((out.get("manager") or {}).get("image")) or {}
    for key in _IMAGE_KEYS:
        image.pop(key, None)
    return out


def after_reset(kept: Mapping[str, Any]) -> dict[str, Any]:
    """What ``--reset-values`` keeps of the kept values."""
    rbac = kept.get("rbac") or {}
    out: dict[str, Any] = {}
    kept_rbac = {key: copy.deepcopy(rbac[key]) for key in ("scope", "runNamespaces") if key in rbac}
    if kept_rbac:
        out["rbac"] = kept_rbac
    return out


def changed_paths(values: Mapping[str, Any], defaults: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths that ``values`` sets to something other than ``defaults`` (printed instead of the values)."""
    paths: list[str] = []
    for key in sorted(values):
        path = f"{prefix}{key}"
        mine, theirs = values.get(key), defaults.get(key)
        if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
            paths.extend(changed_paths(mine, theirs, path + "."))
        elif mine != theirs:
            paths.append(path)
    return paths


def kept_values_configmap(values: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The ConfigMap that carries the kept values in the controller's namespace."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": KEPT_VALUES_NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "nvcrectl", "app.kubernetes.io/part-of": "nvcre"},
        },
        "data": {KEPT_VALUES_KEY: dump_yaml(kept_values(values))},
    }
