"""Golden cases for the second lowering (plan + expand): ``golden/expand/<case>/``.

A case holds the source of its Workflows: ``workflow.yaml`` (a Workflow as the renderer printed
it), or ``certification.yaml`` / ``workloadrun.yaml`` (expanded to Workflows first), plus
``facts.yaml`` (the live cluster objects) and optionally ``params.yaml``: ``namespace``, the
``uids`` the API server would have assigned (``source``, ``workflow``, ``job`` prefixes),
``iteration``, ``groups`` (which planned groups to expand; all when unset) and the node lists
``succeeded`` / ``failed`` for the node-results ConfigMaps.

It expects ``plan.yaml`` (every plan decision) and ``expected.yaml``: every object the controller
would create, in this order: the Workflows (for a Certification or WorkloadRun source), then per
Workflow its workflow-scoped dependencies, per group the Job, the Job's dependencies, the TrainJob
and measurements, and last the node-results ConfigMaps. A planning or expansion failure expects
``error.txt`` instead. Every expansion runs with the pass purity check.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.goldenharness import cases, check, diagnostics_text

CASES = cases("expand")
NAMESPACE = "certification"


def _load(path: Path) -> Any:
    from nvcre.compiler.yamlio import load_file

    return load_file(path)[0]


def _stored(obj: dict[str, Any], uid: str, namespace: str | None = None) -> dict[str, Any]:
    """``obj`` as the API server returns it after a create: with a uid (and a namespace)."""
    out = copy.deepcopy(obj)
    meta = dict(out.get("metadata") or {})
    meta["uid"] = uid
    if namespace is not None:
        meta.setdefault("namespace", namespace)
    out["metadata"] = meta
    return out


def expand_case(case: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the case; return (objects, plans) or raise CompileError / PlanError."""
    from nvcre.compiler.expand import (
        expand_certification,
        expand_job,
        expand_job_dependencies,
        expand_node_results,
        expand_workflow_dependencies,
        expand_workload,
        expand_workloadrun,
    )
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.plan import plan_workflow

    params = _load(case / "params.yaml") if (case / "params.yaml").exists() else {}
    namespace = params.get("namespace", NAMESPACE)
    uids = params.get("uids") or {}
    facts = load_facts(case / "facts.yaml")
    objects: list[dict[str, Any]] = []
    if (case / "workflow.yaml").exists():
        workflows = [_stored(_load(case / "workflow.yaml"), "", namespace)]
    elif (case / "certification.yaml").exists():
        source = _stored(_load(case / "certification.yaml"), uids.get("source", "c0ffee00-0000-4000-8000-000000000001"), namespace)
        workflows = expand_certification(source, facts, check_purity=True)
        objects += workflows
    else:
        source = _stored(_load(case / "workloadrun.yaml"), uids.get("source", "c0ffee00-0000-4000-8000-000000000002"), namespace)
        workflows = [expand_workloadrun(source, facts, check_purity=True)]
        objects += workflows

    plans = []
    iteration = int(params.get("iteration", 1))
    for w_index, rendered in enumerate(workflows):
        workflow = _stored(rendered, f"{uids.get('workflow', 'f1ee7000-0000-4000-8000')}-{w_index:012d}")
        plan = plan_workflow(workflow, facts)
        plans.append(plan.as_dict())
        objects += expand_workflow_dependencies(workflow, plan)
        wanted = params.get("groups")
        for g_index, group in enumerate(plan.groups):
            if wanted is not None and group.name not in wanted:
                continue
            job = expand_job(workflow, plan, group, iteration, check_purity=True)
            stored_job = _stored(job, f"{uids.get('job', 'j0b00000-0000-4000-8000')}-{g_index:012d}")
            objects.append(job)
            objects += expand_job_dependencies(workflow, plan, group, iteration, stored_job)
            objects += expand_workload(stored_job, workflow, check_purity=True)
        if "succeeded" in params or "failed" in params:
            objects += expand_node_results(workflow, params.get("succeeded") or [], params.get("failed") or [])
    return objects, plans


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 13
    assert sum(1 for case in CASES if (case / "error.txt").exists()) >= 2


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_expand_case(case: Path, update_golden: bool) -> None:
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.emit import dump_yaml, dump_yaml_stream
    from nvcre.compiler.plan import PlanError
    from nvcre.compiler.yamlio import load_documents

    try:
        objects, plans = expand_case(case)
    except PlanError as exc:
        assert not (case / "expected.yaml").exists() or update_golden, f"{case.name}: planning failed: {exc}"
        check(case / "error.txt", f"{exc.reason}: {exc.message}\n", update_golden)
        return
    except CompileError as exc:
        assert not (case / "expected.yaml").exists() or update_golden, (
            f"{case.name}: expansion failed:\n{diagnostics_text(exc.diagnostics)}"
        )
        check(case / "error.txt", diagnostics_text(exc.diagnostics), update_golden)
        return
    assert not (case / "error.txt").exists() or update_golden, f"{case.name}: expected an error, expansion succeeded"
    check(case / "plan.yaml", dump_yaml(plans if len(plans) != 1 else plans[0]), update_golden, parse=lambda t: load_documents(t))
    check(case / "expected.yaml", dump_yaml_stream(objects), update_golden, parse=lambda t: load_documents(t))
