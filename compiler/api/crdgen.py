"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``) generated from the API models.

One CRD per kind: the structural schema from ``schemagen``, the status subresource for kinds
that have a status, printer columns (each kind's own plus Age), and the names and scope.
The generated files live in ``crds/`` beside this module, one per kind, named
``<plural>.<group>.yaml``, written with the project's canonical YAML emitter so the bytes
depend on the models alone. A test regenerates them in memory and fails on any drift;
``scripts/gen_crds.py`` rewrites them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..emit import dump_yaml
from ..vocabulary import GROUP, VERSION
from .common import ApiObject
from .crdfiles import CRD_DIR, crd_file_name
from .kinds import KINDS
from .schemagen import model_schema, type_schema

__all__ = ["CRD_DIR", "CATEGORY", "crd_file_name", "openapi_schema", "build_crd", "render_crds", "write_crds"]

#: ``kubectl get nvcre`` lists every kind of the API.
CATEGORY = "nvcre"

_AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def openapi_schema(cls: type[ApiObject]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one kind: apiVersion, kind, metadata, spec and status."""
    properties: dict[str, Any] = {
        "apiVersion": {
            "type": "string",
            "description": "Versioned schema of this representation of the object.",
        },
        "kind": {"type": "string", "description": "The REST resource this object represents."},
        "metadata": {"type": "object"},
    }
    for part in ("spec", "status"):
        field = cls.model_fields.get(part)
        if field is not None:
            properties[part] = type_schema(field.annotation, list(field.metadata))
    root = model_schema(cls)  # for the description only
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": ["spec"]}
    if "description" in root:
        schema["description"] = root["description"]
    return schema


def build_crd(cls: type[ApiObject]) -> dict[str, Any]:
    """The CustomResourceDefinition object of one kind."""
    kind = cls.kind_name()
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi_schema(cls)},
        "additionalPrinterColumns": [column.as_schema() for column in cls.printer_columns] + [_AGE_COLUMN],
    }
    if cls.has_status():
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{cls.plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": cls.plural,
                "singular": kind.lower(),
                "categories": [CATEGORY],
            },
            "scope": "Namespaced" if cls.namespaced else "Cluster",
            "versions": [version],
        },
    }


def render_crds() -> dict[str, str]:
    """File name to canonical YAML text, for every kind."""
    return {crd_file_name(cls): dump_yaml(build_crd(cls)) for cls in KINDS}


def write_crds(directory: Path = CRD_DIR) -> list[Path]:
    """Write every CRD file into ``directory`` and remove stale ``*.yaml`` files there."""
    directory.mkdir(parents=True, exist_ok=True)
    rendered = render_crds()
    for stale in sorted(directory.glob("*.yaml")):
        if stale.name not in rendered:
            stale.unlink()
    written = []
    for name, text in sorted(rendered.items()):
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
