"""The API version, object-name prefixes and RBAC names of the vocabulary are the ones on the wire.

``nvcre.compiler.vocabulary`` is where the runtime reads these names; each test here takes the
objects the compiler actually renders (a Certification's Workflows, the CRDs, a Workflow's
node-results ConfigMaps, the install's RBAC, a run namespace's RoleBinding) and checks they
carry exactly the vocabulary's spelling, so the two sides cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path

from nvcre.compiler import vocabulary
from nvcre.compiler.compose import run_access_binding
from nvcre.compiler.install import render_install
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_file
from nvcre.runtime import compile as lowering
from nvcre.runtime.kube import resources

REPO = Path(__file__).resolve().parents[2]
NVCRE_RESOURCES = (
    resources.CERTIFICATIONS,
    resources.WORKLOADRUNS,
    resources.WORKFLOWS,
    resources.JOBS,
    resources.BANDWIDTH_MEASUREMENTS,
    resources.GOODPUT_MEASUREMENTS,
    resources.LOGPROFILES,
)


def test_the_api_version_is_the_group_and_version() -> None:
    assert vocabulary.API_VERSION == "nvcre.nvidia.com/v1alpha1"
    assert vocabulary.API_VERSION == f"{vocabulary.GROUP}/{vocabulary.VERSION}"


def test_rendered_workflows_and_the_runtime_resources_use_the_vocabulary_api_version() -> None:
    (doc,) = load_file(REPO / "examples" / "certification.yaml")
    workflows = render_certification(doc, platform="onprem", gpu_arch="gb300").workflows
    assert workflows and {w["apiVersion"] for w in workflows} == {vocabulary.API_VERSION}
    assert {r.api_version for r in NVCRE_RESOURCES} == {vocabulary.API_VERSION}
    assert all(r.path().startswith(f"/apis/{vocabulary.GROUP}/{vocabulary.VERSION}/") for r in NVCRE_RESOURCES)


def test_the_installed_crds_serve_the_vocabulary_group_and_version() -> None:
    crds = [o for o in render_install().objects if o["kind"] == "CustomResourceDefinition"]
    ours = [c for c in crds if c["spec"]["group"] == vocabulary.GROUP]
    assert {c["spec"]["names"]["plural"] for c in ours} == {r.plural for r in NVCRE_RESOURCES}
    assert all([v["name"] for v in c["spec"]["versions"]] == [vocabulary.VERSION] for c in ours)


def test_node_results_configmaps_are_named_by_the_vocabulary_prefixes() -> None:
    workflow = {"metadata": {"name": "wf", "namespace": "burn", "uid": "0123abcd-aaaa-bbbb-cccc-dddddddddddd"}, "spec": {}}
    failed = [{"name": "n2", "reason": "WorkloadFailed", "message": "m"}]
    names = [c["metadata"]["name"] for c in lowering.expand_node_results(workflow, ["n1"], failed)]
    assert names == [f"{vocabulary.SUCCEEDED_NODES_PREFIX}0123abcd", f"{vocabulary.FAILED_NODES_PREFIX}0123abcd"]


def test_the_install_uses_the_vocabulary_rbac_names() -> None:
    objects = render_install([{"rbac": {"scope": "namespaced", "runNamespaces": ["team-a"]}}]).objects
    named = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("ServiceAccount", vocabulary.CONTROLLER_SERVICE_ACCOUNT) in named
    assert {("ClusterRole", vocabulary.MANAGER_ROLE), ("ClusterRole", vocabulary.RUN_ROLE), ("Role", vocabulary.LEADER_ROLE)} <= named
    (run_binding,) = [o for o in objects if o["kind"] == "RoleBinding" and o["metadata"].get("namespace") == "team-a"]
    assert run_binding["metadata"]["name"] == vocabulary.RUN_BINDING
    assert run_binding["roleRef"]["name"] == vocabulary.RUN_ROLE
    assert [s["name"] for s in run_binding["subjects"]] == [vocabulary.CONTROLLER_SERVICE_ACCOUNT]


def test_a_run_namespace_binding_uses_the_vocabulary_rbac_names() -> None:
    binding = run_access_binding("team-b")
    assert binding["metadata"]["name"] == vocabulary.RUN_BINDING
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": vocabulary.RUN_ROLE}
    assert binding["subjects"][0]["name"] == vocabulary.CONTROLLER_SERVICE_ACCOUNT
