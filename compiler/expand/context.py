"""The context the expansion passes read, and the runner call they share with the render passes.

Expansion reuses the render's machinery: each step is a named pure pass ``(unit, ctx) -> (unit,
diagnostics)`` run by :func:`nvcre.compiler.pipeline.run_passes`, with the same purity check. The
document being built rides in ``Unit.workflow`` (a Job or a TrainJob manifest here); the
:class:`ExpandContext` adds what the passes need beyond a render's context: the Workflow, its
plan, the group and the iteration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import CompileError, error
from ..pipeline import Pass, run_passes
from ..plan.model import Plan, PlannedGroup
from ..unit import ClusterView, Context, EntryInfo, Unit
from ..vocabulary import LABEL_CATEGORY_DOMAIN, LABEL_CATEGORY_VARIANT

__all__ = ["ExpandContext", "effective_workflow", "expand_context", "run_expansion"]


@dataclass(frozen=True)
class ExpandContext(Context):
    """A render context plus the Workflow, plan, group and iteration one expansion is for."""

    workflow: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    plan: Plan | None = None
    group: PlannedGroup | None = None
    iteration: int = 1
    #: the Job an expansion builds from (the TrainJob and measurements), as the API server returned it
    job: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def need_plan(self) -> tuple[Plan, PlannedGroup]:
        if self.plan is None or self.group is None:
            raise AssertionError("this pass needs a plan and a group")
        return self.plan, self.group


def expand_context(
    workflow: Mapping[str, Any],
    *,
    launch: str,
    plan: Plan | None = None,
    group: PlannedGroup | None = None,
    iteration: int = 1,
    job: Mapping[str, Any] | None = None,
) -> ExpandContext:
    metadata = workflow.get("metadata") or {}
    labels = metadata.get("labels") or {}
    name = str(metadata.get("name") or "")
    cluster = ClusterView(
        platform=plan.platform if plan else "",
        gpu_arch=plan.gpu_architecture if plan else "",
        gpu_products=plan.gpu_products if plan else (),
        target_nodes=plan.target_nodes if plan else (),
    )
    return ExpandContext(
        source_kind="Workflow",
        source_name=name,
        spec=workflow.get("spec") or {},
        entry=EntryInfo(
            domain=str(labels.get(LABEL_CATEGORY_DOMAIN) or "workflow"),
            variant=str(labels.get(LABEL_CATEGORY_VARIANT) or name),
            launch=launch,
        ),
        cluster=cluster,
        path="spec.jobTemplate",
        workflow=workflow,
        plan=plan,
        group=group,
        iteration=iteration,
        job=job or {},
    )


def run_expansion(passes: tuple[Pass, ...], ctx: ExpandContext, *, check_purity: bool = False) -> dict[str, Any]:
    """Run ``passes`` from an empty unit; return the document they built or raise CompileError."""
    unit, diagnostics = run_passes(Unit(category={}), ctx, passes, check_purity=check_purity)
    if any(d.is_error for d in diagnostics):
        raise CompileError(diagnostics)
    if unit.workflow is None:
        raise AssertionError("the expansion passes built no document")
    return dict(unit.workflow)


def effective_workflow(workflow: Mapping[str, Any], plan: Plan | None) -> Mapping[str, Any]:
    """The Workflow the objects are built from: its spec as the plan left it (overrides applied).

    A Workflow without overrides is its own effective form. One with overrides needs the plan
    that applied them; expanding it without is an error rather than a build from the raw spec.
    """
    if plan is not None and plan.workflow_spec is not None:
        return {**workflow, "spec": plan.workflow_spec}
    spec = workflow.get("spec") if isinstance(workflow, Mapping) else None
    if isinstance(spec, Mapping) and spec.get("overrides"):
        raise CompileError(
            [error("OverridesNotApplied", "spec.overrides", "the Workflow has overrides: expand it with the plan that applied them")]
        )
    return workflow
