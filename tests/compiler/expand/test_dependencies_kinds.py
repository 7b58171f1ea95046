"""A Workflow's dependencies are limited to the kinds the controller creates for a run."""

from __future__ import annotations

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand.dependencies import ALLOWED_DEPENDENCY_KINDS, workflow_dependencies


def workflow(*deps: dict) -> dict:
    return {"metadata": {"name": "wf", "namespace": "team-a", "uid": "u"}, "spec": {"dependencies": list(deps)}}


@pytest.mark.parametrize(
    ("api_version", "kind"), sorted((f"{group}/v1" if group else "v1", kind) for group, kind in ALLOWED_DEPENDENCY_KINDS)
)
def test_the_kinds_the_catalog_renders_are_allowed(api_version: str, kind: str) -> None:
    assert workflow_dependencies(workflow({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}))


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("v1", "ServiceAccount"),
        ("v1", "Secret"),
        ("v1", "Pod"),
        ("apps/v1", "DaemonSet"),
        ("example.com/v1", "ConfigMap"),  # the right kind in another group is another kind
    ],
)
def test_anything_else_is_refused_at_its_path(api_version: str, kind: str) -> None:
    ok = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}}
    with pytest.raises(CompileError) as raised:
        workflow_dependencies(workflow(ok, {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}))
    (problem,) = raised.value.diagnostics
    assert (problem.code, problem.path) == ("DependencyKindNotAllowed", "spec.dependencies[1].kind")
    assert kind in problem.message and "allowed: " in problem.message
