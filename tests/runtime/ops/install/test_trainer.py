"""The deps phase of setup init / reset against an in-memory cluster: what it installs, marks, skips and removes.

The chart is replaced by a fixed list of objects (the Trainer chart's kinds), so these run without
helm; the real chart is rendered in tests/integration/test_setup_cluster.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler.vocabulary import ANNOTATION_INSTALLED_VERSION
from nvcre.runtime.kube.resources import Resource, split_api_version
from nvcre.runtime.ops.install import deps, lifecycle, trainer
from nvcre.testing.fakekube import MemoryKube

#: what the in-memory cluster serves (the Trainer chart's kinds); any other kind is not served
KINDS = {
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "Namespace": ("v1", "namespaces", False),
    "Deployment": ("apps/v1", "deployments", True),
    "ServiceAccount": ("v1", "serviceaccounts", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "ConfigMap": ("v1", "configmaps", True),
    "TrainJob": ("trainer.kubeflow.org/v1alpha1", "trainjobs", True),
    "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1", "trainingruntimes", True),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1", "clustertrainingruntimes", False),
    "JobSet": ("jobset.x-k8s.io/v1alpha2", "jobsets", True),
}
_WRITES = ("create", "apply", "update", "patch", "delete")


def _cluster() -> MemoryKube:
    served = [Resource(*split_api_version(v), plural, kind, namespaced) for kind, (v, plural, namespaced) in KINDS.items()]
    return MemoryKube(resources=served, open_discovery=False)


def _writes(kube: MemoryKube) -> int:
    return sum(1 for call in kube.calls if call.verb in _WRITES)


def crd(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    plural, _, group = name.partition(".")
    kind = next(k for k, (_, p, _) in KINDS.items() if p == plural)
    spec = {
        "group": group,
        "names": {"plural": plural, "kind": kind},
        "scope": "Cluster" if kind.startswith("Cluster") else "Namespaced",
        "versions": [{"name": "v1alpha1", "storage": True}],
    }
    meta = {"name": name, "labels": labels or {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta, "spec": spec}


def chart(install_jobset: bool) -> list[dict[str, Any]]:
    objects = [crd(name) for name in deps.TRAINER_CRDS]
    objects += [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kubeflow-trainer-controller-manager"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeflow-trainer-controller-manager"}},
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validator.trainer.kubeflow.org"},
            "webhooks": [{"name": "validate.trainjob.trainer.kubeflow.org", "rules": [{"apiGroups": ["trainer.kubeflow.org"]}]}],
        },
    ]
    if install_jobset:
        objects += [
            crd(deps.JOBSET_CRD),
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "jobset-controller-manager"}},
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "jobset-mutating-webhook-configuration"},
                "webhooks": [{"name": "mjobset.kb.io", "rules": [{"apiGroups": ["jobset.x-k8s.io"]}]}],
            },
        ]
    return objects


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Replaces the helm render; records the install_jobset of every call."""
    calls: list[bool] = []

    def render(chart_ref: str | None, *, install_jobset: bool, token: str | None = None) -> list[dict[str, Any]]:
        calls.append(install_jobset)
        return chart(install_jobset)

    monkeypatch.setattr(trainer, "render_trainer", render)
    return calls


def _labelled(kube: MemoryKube) -> set[str]:
    return {o["metadata"]["name"] for o in kube.objects_of() if (o["metadata"].get("labels") or {}).get(trainer.INSTALLED_BY[0])}


def test_a_bare_cluster_gets_trainer_and_jobset_marked_and_a_rerun_changes_nothing(rendered: list[bool]) -> None:
    kube = _cluster()
    said: list[str] = []
    assert lifecycle.ensure_dependencies(kube, say=said.append) == 9
    assert rendered == [True]
    assert {*deps.TRAINER_CRDS, deps.JOBSET_CRD, "kubeflow-trainer-controller-manager", "kubeflow-system"} <= _labelled(kube)
    deployment = kube.get(Resource("apps", "v1", "deployments", "Deployment"), "kubeflow-trainer-controller-manager", "kubeflow-system")
    assert deployment["metadata"]["annotations"][ANNOTATION_INSTALLED_VERSION] == "v2.2.1"
    assert not lifecycle.missing_dependencies(kube)

    writes = _writes(kube)
    assert lifecycle.ensure_dependencies(kube, say=said.append) == 0
    assert _writes(kube) == writes and rendered == [True]
    assert said[-1] == "Kubeflow Trainer and JobSet are present."


def test_a_trainer_of_ours_at_the_pinned_version_is_not_rendered_again(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    said: list[str] = []
    assert trainer.install_trainer(kube, say=said.append) == 0
    assert rendered == [True] and "already there; skipping" in said[-1]


def test_a_jobset_someone_else_installed_is_left_alone(rendered: list[bool]) -> None:
    kube = _cluster()
    foreign = kube.put(crd(deps.JOBSET_CRD, {"app": "theirs"}))
    said: list[str] = []
    trainer.install_trainer(kube, say=said.append)
    assert rendered == [False]
    assert any("JobSet is installed and was not installed by nvcrectl" in line for line in said)
    assert kube.get(deps.CRDS, deps.JOBSET_CRD) == foreign  # not even rewritten
    trainer.remove_trainer(kube)
    assert kube.get(deps.CRDS, deps.JOBSET_CRD) == foreign
    assert not _labelled(kube)


def test_a_trainer_someone_else_installed_is_left_alone(rendered: list[bool]) -> None:
    kube = _cluster()
    for name in deps.TRAINER_CRDS:
        kube.put(crd(name))
    said: list[str] = []
    assert trainer.install_trainer(kube, say=said.append) == 0
    assert rendered == [] and "not by nvcrectl" in said[0]
    assert trainer.remove_trainer(kube) == 0
    assert len(kube.objects_of()) == 3


def test_an_unmarked_object_of_the_install_stops_it_before_anything_is_written(rendered: list[bool]) -> None:
    kube = _cluster()
    kube.put(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeflow-trainer-controller-manager"}}
    )
    with pytest.raises(trainer.TrainerInstallError, match="ClusterRole kubeflow-trainer-controller-manager"):
        trainer.install_trainer(kube)
    assert _writes(kube) == 0


def test_reset_removes_what_init_installed(rendered: list[bool]) -> None:
    kube = _cluster()
    kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "users"}})
    trainer.install_trainer(kube)
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append) == 10
    assert [(o["kind"], o["metadata"]["name"]) for o in kube.objects_of()] == [("Namespace", "users")]
    assert said == ["Removed 10 Kubeflow Trainer object(s) that setup init installed."]


def test_the_pinned_chart_is_missing_with_a_way_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    monkeypatch.setenv("GOPATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(trainer.TrainerInstallError, match="--trainer-chart-ref"):
        trainer.pinned_chart(tmp_path)


def test_when_trainer_cannot_be_rendered_nothing_is_written_and_the_way_by_hand_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVCRE_HELM", "/nonexistent/helm")
    kube = _cluster()
    applied: list[bool] = []
    with pytest.raises(lifecycle.DependenciesMissing) as missing:
        lifecycle.ensure_dependencies(kube, chart_ref="oci://mirror.example.com/kubeflow-trainer", on_apply=lambda: applied.append(True))
    names = [c.name for c in missing.value.missing]
    assert "Kubeflow Trainer CRDs" in names and "JobSet CRD" in names
    assert "NVCRE_HELM='/nonexistent/helm' is not an executable file" in missing.value.missing[-1].detail
    assert _writes(kube) == 0 and applied == []


def _other_team(kube: MemoryKube) -> None:
    """The audit's other team: objects in the shared Trainer namespace and a TrainJob of its own."""
    kube.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-team-config", "namespace": "kubeflow-system"}})
    kube.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "katib-controller", "namespace": "kubeflow-system"}})
    kube.put({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "userjob", "namespace": "ml-team"}})
    kube.put(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": {"name": "userrt", "namespace": "ml-team"}}
    )


def _has(kube: MemoryKube, plural: str, name: str) -> bool:
    kind = next(k for k, (_, p, _) in KINDS.items() if p == plural)
    return any(o["kind"] == kind and o["metadata"]["name"] == name for o in kube.objects_of())


def test_reset_keeps_the_whole_trainer_while_another_teams_trainjobs_exist(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    _other_team(kube)
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append) == 0
    assert all(_has(kube, "customresourcedefinitions", name) for name in deps.TRAINER_CRDS)
    assert _has(kube, "trainjobs", "userjob") and _has(kube, "deployments", "kubeflow-trainer-controller-manager")
    assert _has(kube, "namespaces", "kubeflow-system")
    kept = [line for line in said if line.startswith("Kept CustomResourceDefinition trainjobs.trainer.kubeflow.org")]
    assert kept and "TrainJob ml-team/userjob" in kept[0] and "--delete-crd trainjobs.trainer.kubeflow.org" in kept[0]
    assert any("TrainingRuntime ml-team/userrt" in line for line in said)


def test_reset_keeps_the_trainer_namespace_that_holds_another_teams_objects(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    _other_team(kube)
    said: list[str] = []
    named = ("trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org")
    assert trainer.remove_trainer(kube, say=said.append, delete_crds=named) > 0
    assert not any(_has(kube, "customresourcedefinitions", name) for name in deps.TRAINER_CRDS)  # asked for by name
    assert _has(kube, "namespaces", "kubeflow-system")
    assert _has(kube, "configmaps", "other-team-config") and _has(kube, "deployments", "katib-controller")
    assert not _has(kube, "deployments", "kubeflow-trainer-controller-manager")
    (line,) = [s for s in said if s.startswith("Kept Namespace kubeflow-system")]
    assert "ConfigMap kubeflow-system/other-team-config" in line and "Deployment kubeflow-system/katib-controller" in line


def test_naming_only_one_crd_in_use_still_keeps_the_trainer(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    _other_team(kube)
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append, delete_crds=["trainjobs.trainer.kubeflow.org"]) == 0
    assert _has(kube, "customresourcedefinitions", "trainjobs.trainer.kubeflow.org")
    assert [line.split(":")[0] for line in said if line.startswith("Kept Custom")] == [
        "Kept CustomResourceDefinition trainingruntimes.trainer.kubeflow.org"
    ]


def test_runtimes_the_chart_installed_do_not_hold_the_trainer_back(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    label = {trainer.INSTALLED_BY[0]: trainer.INSTALLED_BY[1]}
    kube.put(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "torch", "labels": label}}
    )
    assert trainer.remove_trainer(kube) == 10
    assert not _has(kube, "namespaces", "kubeflow-system")


def test_the_jobset_crd_is_kept_while_jobsets_exist_unless_named(rendered: list[bool]) -> None:
    kube = _cluster()
    trainer.install_trainer(kube)
    kube.put({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "theirs", "namespace": "ml-team"}})
    said: list[str] = []
    trainer.remove_trainer(kube, say=said.append)
    assert _has(kube, "customresourcedefinitions", deps.JOBSET_CRD)
    assert any(line.startswith(f"Kept CustomResourceDefinition {deps.JOBSET_CRD}") and "JobSet ml-team/theirs" in line for line in said)
    trainer.remove_trainer(kube, delete_crds=[deps.JOBSET_CRD])
    assert not _has(kube, "customresourcedefinitions", deps.JOBSET_CRD)
