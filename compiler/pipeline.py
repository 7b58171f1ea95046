"""The ordered pass list, and the runner that lowers one unit through it.

Each pass is a named pure function ``(unit, ctx) -> (unit, diagnostics)``. A Certification
category runs, in this order (``PASSES``):

 1. resolve_options        spec-level options, then the category's own
 2. apply_gpu_defaults     gpusPerNode / mlnxPerNode from the GPU defaults table
 3. size_workload          nodesPerJob and the catalog's numeric defaults
 4. instantiate_catalog    the entry's template becomes the Workflow
 5. apply_overlays         every platform x architecture overlay that matches
 6. merge_env              user env after catalog and overlays
 7. rewrite_gang           gang scheduler name and queue label
 8. override_image         spec or category image
 9. inject_pull_secrets    imagePullSecrets on node pods and the launcher
10. merge_workload_labels  catalog, global, category, then the gang queue label
11. stamp_provenance       overlays applied and the source of each cluster fact
12. validate_workflow      a validator: invariants of the finished Workflow

A WorkloadRun replaces passes 1-4 with its own five (``nvcre.compiler.workloadrun``) and runs
5-12 (``WORKFLOW_PASSES``) unchanged. The runner stops a unit at the first pass that reports
an error (later passes would only report consequences), but callers render every category,
so all independent errors are collected. Every diagnostic leaves the runner with the name of
the pass that reported it (``Diagnostic.pass_name``). With ``check_purity`` the runner also
proves that no pass changed the unit it was given.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, NamedTuple

from .diagnostics import Diagnostic, attributed
from .passes.apply_gpu_defaults import apply_gpu_defaults
from .passes.apply_overlays import apply_overlays
from .passes.inject_pull_secrets import inject_pull_secrets
from .passes.instantiate_catalog import instantiate_catalog
from .passes.merge_env import merge_env
from .passes.merge_workload_labels import merge_workload_labels
from .passes.override_image import override_image
from .passes.resolve_options import resolve_options
from .passes.rewrite_gang import rewrite_gang
from .passes.size_workload import size_workload
from .passes.stamp_provenance import stamp_provenance
from .passes.validate_workflow import validate_workflow
from .unit import Context, Unit

__all__ = ["Pass", "PASSES", "WORKFLOW_PASSES", "run_passes", "PassPurityError"]

PassFn = Callable[[Unit, Context], "tuple[Unit, list[Diagnostic]]"]


class Pass(NamedTuple):
    name: str
    run: PassFn
    #: validators may report problems but must return the unit they were given
    validator: bool = False


#: The passes that work on an instantiated Workflow; a Certification category and a WorkloadRun share them.
WORKFLOW_PASSES: tuple[Pass, ...] = (
    Pass("apply_overlays", apply_overlays),
    Pass("merge_env", merge_env),
    Pass("rewrite_gang", rewrite_gang),
    Pass("override_image", override_image),
    Pass("inject_pull_secrets", inject_pull_secrets),
    Pass("merge_workload_labels", merge_workload_labels),
    Pass("stamp_provenance", stamp_provenance),
    Pass("validate_workflow", validate_workflow, validator=True),
)

#: A Certification category: options and sizing, the catalog entry, then the shared Workflow passes.
PASSES: tuple[Pass, ...] = (
    Pass("resolve_options", resolve_options),
    Pass("apply_gpu_defaults", apply_gpu_defaults),
    Pass("size_workload", size_workload),
    Pass("instantiate_catalog", instantiate_catalog),
) + WORKFLOW_PASSES


class PassPurityError(AssertionError):
    """A pass changed its input, or a validator changed the document."""


def _snapshot(unit: Unit) -> tuple[Any, ...]:
    return (
        copy.deepcopy(dict(unit.category)),
        copy.deepcopy(dict(unit.options)),
        copy.deepcopy(unit.workflow),
        copy.deepcopy(unit.provenance),
    )


def run_passes(unit: Unit, ctx: Context, passes: tuple[Pass, ...] = PASSES, *, check_purity: bool = False) -> tuple[Unit, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    for step in passes:
        before = _snapshot(unit) if check_purity else None
        result, found = step.run(unit, ctx)
        if check_purity:
            if _snapshot(unit) != before:
                raise PassPurityError(f"pass {step.name} changed its input")
            if step.validator and result is not unit:
                raise PassPurityError(f"validator {step.name} returned a different document")
        found = attributed(found, step.name)
        diagnostics.extend(found)
        if any(d.is_error for d in found):
            return unit, diagnostics
        unit = result
    return unit, diagnostics
