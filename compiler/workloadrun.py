"""Render a WorkloadRun into its one Workflow: validate, decide the cluster facts, lower the spec.

A WorkloadRun bypasses the catalog's checks but not its machinery. Its framework (``mpi``,
``torch`` or ``exec``) is described like a catalog entry (``catalog/_lib/workloadrun/
entries.yaml``), so the unit runs through the same later passes as a Certification category:
overlays match it as ``workloadrun/<framework>``, the user's env wins over them, gang
scheduling, pull secrets and workload labels apply the same way, and the same validator checks
the result. Only the first passes are its own: build checks on the spec, options from the spec,
the GPU defaults (with advice naming the WorkloadRun's fields), sizing from ``numNodes``, and
the framework template.

The render is pure: the same document, facts and flags always give the same Workflow and the
same diagnostics, and every error found is reported together.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .catalog import Catalog, CatalogEntry, load_catalog, parse_entry
from .diagnostics import CompileError, error
from .overlays import OverlaySet, load_overlays
from .passes.apply_workloadrun_gpu_defaults import apply_workloadrun_gpu_defaults
from .passes.check_workloadrun import check_workloadrun
from .passes.instantiate_workloadrun import framework_of, instantiate_workloadrun
from .passes.resolve_workloadrun import resolve_workloadrun
from .passes.size_workloadrun import size_workloadrun
from .pipeline import WORKFLOW_PASSES, Pass, run_passes
from .render import Rendered, decide_cluster, dedupe, gang_spec, validate_kind
from .unit import Context, Unit
from .yamlio import load_file

__all__ = [
    "render_workloadrun",
    "workloadrun_catalog",
    "WORKLOADRUN_PASSES",
    "DEFAULT_TARGET",
    "ENTRIES_FILE",
    "DOMAIN",
]

DOMAIN = "workloadrun"
ENTRIES_FILE = "_lib/workloadrun/entries.yaml"
#: the nodes a WorkloadRun runs on when ``spec.target`` is unset
DEFAULT_TARGET: Mapping[str, Any] = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}

WORKLOADRUN_PASSES: tuple[Pass, ...] = (
    Pass("check_workloadrun", check_workloadrun, validator=True),
    Pass("resolve_workloadrun", resolve_workloadrun),
    Pass("apply_workloadrun_gpu_defaults", apply_workloadrun_gpu_defaults),
    Pass("size_workloadrun", size_workloadrun),
    Pass("instantiate_workloadrun", instantiate_workloadrun),
) + WORKFLOW_PASSES


@lru_cache(maxsize=None)
def _framework_entries(root: str) -> tuple[CatalogEntry, ...]:
    path = Path(root) / ENTRIES_FILE
    (data,) = load_file(path)
    entries = []
    for index, item in enumerate((data or {}).get("entries") or []):
        entry = parse_entry(item, f"{ENTRIES_FILE}: entries[{index}].")
        if entry.domain != DOMAIN or not (Path(root) / entry.template).is_file():
            raise CompileError(
                [
                    error(
                        "CatalogInvalid",
                        f"{ENTRIES_FILE}: entries[{index}]",
                        f"{entry.key}: not a {DOMAIN} entry with an existing template",
                    )
                ]
            )
        entries.append(entry)
    return tuple(entries)


def workloadrun_catalog(catalog: Catalog) -> Catalog:
    """``catalog`` plus the framework entries, for this render only (a Certification cannot name them)."""
    if catalog.lookup(DOMAIN, "mpi") is not None:
        return catalog
    return Catalog(
        root=catalog.root,
        entries=catalog.entries + _framework_entries(str(catalog.root)),
        gpu_defaults=catalog.gpu_defaults,
    )


def render_workloadrun(
    document: Mapping[str, Any],
    *,
    facts: Any = None,
    platform: str | None = None,
    gpu_arch: str | None = None,
    catalog: Catalog | None = None,
    overlays: OverlaySet | None = None,
    check_purity: bool = False,
) -> Rendered:
    """Lower ``document`` to one Workflow; raise CompileError with every error found."""
    document, problems = validate_kind(document, "WorkloadRun")
    catalog = workloadrun_catalog(catalog or load_catalog())
    overlays = overlays or load_overlays()
    name = document["metadata"]["name"]
    spec = dict(document["spec"])
    if not spec.get("target"):
        spec["target"] = {key: dict(value) for key, value in DEFAULT_TARGET.items()}
    framework = framework_of(spec)
    entry = catalog.lookup(DOMAIN, framework)
    if entry is None:
        raise CompileError([error("FrameworkInvalid", "spec.framework", f"no {DOMAIN}/{framework} entry in the catalog")])

    try:
        view, found = decide_cluster(facts, spec["target"], platform, gpu_arch)
    except CompileError as exc:
        raise CompileError(problems + exc.diagnostics) from None
    diagnostics = problems + found
    ctx = Context(
        source_kind="WorkloadRun",
        source_name=name,
        spec=spec,
        entry=entry.info(),
        cluster=view,
        path="spec",
        gang=gang_spec(spec),
        catalog=catalog,
        overlays=overlays,
    )
    unit, found = run_passes(Unit(category={"domain": DOMAIN, "variant": framework}), ctx, WORKLOADRUN_PASSES, check_purity=check_purity)
    diagnostics.extend(found)
    if any(d.is_error for d in diagnostics) or unit.workflow is None:
        raise CompileError(dedupe(diagnostics))
    return Rendered(
        workflows=[dict(unit.workflow)],
        diagnostics=dedupe(diagnostics),
        provenance=[tuple(dict(r) for r in unit.provenance)],
        cluster=view,
    )
