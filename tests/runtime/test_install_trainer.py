"""The deps phase of setup init / reset against an in-memory cluster: what it installs, marks, skips and removes.

The chart is replaced by a fixed list of objects (the Trainer chart's kinds), so these run without
helm; the real chart is rendered in tests/integration/test_setup_cluster.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nvcre.runtime.kube.client import ObjectList
from nvcre.runtime.kube.errors import ApiNotServed, NotFound
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.ops import install, trainer
from nvcre.runtime.ops import install_deps as deps

KINDS = {
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "Namespace": ("namespaces", False),
    "Deployment": ("deployments", True),
    "ServiceAccount": ("serviceaccounts", True),
    "ClusterRole": ("clusterroles", False),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
    "ConfigMap": ("configmaps", True),
    "TrainJob": ("trainjobs", True),
    "TrainingRuntime": ("trainingruntimes", True),
    "ClusterTrainingRuntime": ("clustertrainingruntimes", False),
    "JobSet": ("jobsets", True),
}


class MemoryKube:
    """Objects keyed by (plural, namespace, name); label selectors of the form key=value."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.writes = 0

    def resource_for(self, api_version: str, kind: str) -> Resource:
        if kind not in KINDS:
            raise ApiNotServed(404, "NotFound", kind)
        plural, namespaced = KINDS[kind]
        group, _, version = api_version.rpartition("/")
        return Resource(group, version, plural, kind, namespaced=namespaced)

    def _key(self, resource: Resource, name: str, namespace: str | None) -> tuple[str, str | None, str]:
        return (resource.plural, namespace if resource.namespaced else None, name)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return copy.deepcopy(self.objects[self._key(resource, name, namespace)])
        except KeyError:
            raise NotFound(404, "NotFound", name) from None

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None, **_: Any) -> ObjectList:
        key, _, value = (label_selector or "").partition("=")
        items = [
            copy.deepcopy(o)
            for (plural, _ns, _n), o in self.objects.items()
            if plural == resource.plural and (not key or (o["metadata"].get("labels") or {}).get(key) == value)
        ]
        return ObjectList(items=tuple(items), resource_version="1")

    def put(self, obj: dict[str, Any]) -> None:
        resource = self.resource_for(str(obj.get("apiVersion") or "v1"), obj["kind"])
        meta = obj["metadata"]
        self.objects[self._key(resource, meta["name"], meta.get("namespace"))] = copy.deepcopy(obj)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        live = copy.deepcopy(obj)
        if obj["kind"] == "CustomResourceDefinition":
            live["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        self.put(live)
        return live

    def create(self, obj: dict[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        self.writes += 1
        assert resource is not None
        self.objects[self._key(resource, obj["metadata"]["name"], None)] = {"kind": resource.kind, **copy.deepcopy(obj)}
        return obj

    def delete(self, resource: Resource, name: str, namespace: str | None = None, **_: Any) -> bool:
        return self.objects.pop(self._key(resource, name, namespace), None) is not None


def crd(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    plural, _, group = name.partition(".")
    kind = next(k for k, (p, _) in KINDS.items() if p == plural)
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
    return {name for (_p, _ns, name), o in kube.objects.items() if (o["metadata"].get("labels") or {}).get(trainer.INSTALLED_BY[0])}


def test_a_bare_cluster_gets_trainer_and_jobset_marked_and_a_rerun_changes_nothing(rendered: list[bool]) -> None:
    kube = MemoryKube()
    said: list[str] = []
    assert install.ensure_dependencies(kube, say=said.append) == 9  # type: ignore[arg-type]
    assert rendered == [True]
    assert {*deps.TRAINER_CRDS, deps.JOBSET_CRD, "kubeflow-trainer-controller-manager", "kubeflow-system"} <= _labelled(kube)
    deployment = kube.get(Resource("apps", "v1", "deployments", "Deployment"), "kubeflow-trainer-controller-manager", "kubeflow-system")
    assert deployment["metadata"]["annotations"][trainer.INSTALLED_VERSION] == "v2.2.1"
    assert not install.missing_dependencies(kube)  # type: ignore[arg-type]

    writes = kube.writes
    assert install.ensure_dependencies(kube, say=said.append) == 0  # type: ignore[arg-type]
    assert kube.writes == writes and rendered == [True]
    assert said[-1] == "Kubeflow Trainer and JobSet are present."


def test_a_trainer_of_ours_at_the_pinned_version_is_not_rendered_again(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    said: list[str] = []
    assert trainer.install_trainer(kube, say=said.append) == 0  # type: ignore[arg-type]
    assert rendered == [True] and "already there; skipping" in said[-1]


def test_a_jobset_someone_else_installed_is_left_alone(rendered: list[bool]) -> None:
    kube = MemoryKube()
    foreign = crd(deps.JOBSET_CRD, {"app": "theirs"})
    kube.put(foreign)
    said: list[str] = []
    trainer.install_trainer(kube, say=said.append)  # type: ignore[arg-type]
    assert rendered == [False]
    assert any("JobSet is installed and was not installed by nvcrectl" in line for line in said)
    assert kube.objects[("customresourcedefinitions", None, deps.JOBSET_CRD)] == foreign
    trainer.remove_trainer(kube)  # type: ignore[arg-type]
    assert kube.objects[("customresourcedefinitions", None, deps.JOBSET_CRD)] == foreign
    assert not _labelled(kube)


def test_a_trainer_someone_else_installed_is_left_alone(rendered: list[bool]) -> None:
    kube = MemoryKube()
    for name in deps.TRAINER_CRDS:
        kube.put(crd(name))
    said: list[str] = []
    assert trainer.install_trainer(kube, say=said.append) == 0  # type: ignore[arg-type]
    assert rendered == [] and "not by nvcrectl" in said[0]
    assert trainer.remove_trainer(kube) == 0  # type: ignore[arg-type]
    assert len(kube.objects) == 3


def test_an_unmarked_object_of_the_install_stops_it_before_anything_is_written(rendered: list[bool]) -> None:
    kube = MemoryKube()
    kube.put(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeflow-trainer-controller-manager"}}
    )
    with pytest.raises(trainer.TrainerInstallError, match="ClusterRole kubeflow-trainer-controller-manager"):
        trainer.install_trainer(kube)  # type: ignore[arg-type]
    assert kube.writes == 0


def test_reset_removes_what_init_installed(rendered: list[bool]) -> None:
    kube = MemoryKube()
    kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "users"}})
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append) == 10  # type: ignore[arg-type]
    assert list(kube.objects) == [("namespaces", None, "users")]
    assert said == ["Removed 10 Kubeflow Trainer object(s) that setup init installed."]


def test_the_pinned_chart_is_missing_with_a_way_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    monkeypatch.setenv("GOPATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(trainer.TrainerInstallError, match="--trainer-chart-ref"):
        trainer.pinned_chart(tmp_path)


def test_when_trainer_cannot_be_rendered_nothing_is_written_and_the_way_by_hand_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVCRE_HELM", "/nonexistent/helm")
    kube = MemoryKube()
    applied: list[bool] = []
    with pytest.raises(install.DependenciesMissing) as missing:
        install.ensure_dependencies(kube, chart_ref="oci://mirror.example.com/kubeflow-trainer", on_apply=lambda: applied.append(True))  # type: ignore[arg-type]
    names = [c.name for c in missing.value.missing]
    assert "Kubeflow Trainer CRDs" in names and "JobSet CRD" in names
    assert "NVCRE_HELM='/nonexistent/helm' is not an executable file" in missing.value.missing[-1].detail
    assert kube.writes == 0 and applied == []


def _other_team(kube: MemoryKube) -> None:
    """The audit's other team: objects in the shared Trainer namespace and a TrainJob of its own."""
    kube.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-team-config", "namespace": "kubeflow-system"}})
    kube.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "katib-controller", "namespace": "kubeflow-system"}})
    kube.put({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "userjob", "namespace": "ml-team"}})
    kube.put(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": {"name": "userrt", "namespace": "ml-team"}}
    )


def _has(kube: MemoryKube, plural: str, name: str) -> bool:
    return any(p == plural and n == name for p, _ns, n in kube.objects)


def test_reset_keeps_the_whole_trainer_while_another_teams_trainjobs_exist(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    _other_team(kube)
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append) == 0  # type: ignore[arg-type]
    assert all(_has(kube, "customresourcedefinitions", name) for name in deps.TRAINER_CRDS)
    assert _has(kube, "trainjobs", "userjob") and _has(kube, "deployments", "kubeflow-trainer-controller-manager")
    assert _has(kube, "namespaces", "kubeflow-system")
    kept = [line for line in said if line.startswith("Kept CustomResourceDefinition trainjobs.trainer.kubeflow.org")]
    assert kept and "TrainJob ml-team/userjob" in kept[0] and "--delete-crd trainjobs.trainer.kubeflow.org" in kept[0]
    assert any("TrainingRuntime ml-team/userrt" in line for line in said)


def test_reset_keeps_the_trainer_namespace_that_holds_another_teams_objects(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    _other_team(kube)
    said: list[str] = []
    named = ("trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org")
    assert trainer.remove_trainer(kube, say=said.append, delete_crds=named) > 0  # type: ignore[arg-type]
    assert not any(_has(kube, "customresourcedefinitions", name) for name in deps.TRAINER_CRDS)  # asked for by name
    assert _has(kube, "namespaces", "kubeflow-system")
    assert _has(kube, "configmaps", "other-team-config") and _has(kube, "deployments", "katib-controller")
    assert not _has(kube, "deployments", "kubeflow-trainer-controller-manager")
    (line,) = [s for s in said if s.startswith("Kept Namespace kubeflow-system")]
    assert "ConfigMap kubeflow-system/other-team-config" in line and "Deployment kubeflow-system/katib-controller" in line


def test_naming_only_one_crd_in_use_still_keeps_the_trainer(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    _other_team(kube)
    said: list[str] = []
    assert trainer.remove_trainer(kube, say=said.append, delete_crds=["trainjobs.trainer.kubeflow.org"]) == 0  # type: ignore[arg-type]
    assert _has(kube, "customresourcedefinitions", "trainjobs.trainer.kubeflow.org")
    assert [line.split(":")[0] for line in said if line.startswith("Kept Custom")] == [
        "Kept CustomResourceDefinition trainingruntimes.trainer.kubeflow.org"
    ]


def test_runtimes_the_chart_installed_do_not_hold_the_trainer_back(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    label = {trainer.INSTALLED_BY[0]: trainer.INSTALLED_BY[1]}
    kube.put(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "torch", "labels": label}}
    )
    assert trainer.remove_trainer(kube) == 10  # type: ignore[arg-type]
    assert not _has(kube, "namespaces", "kubeflow-system")


def test_the_jobset_crd_is_kept_while_jobsets_exist_unless_named(rendered: list[bool]) -> None:
    kube = MemoryKube()
    trainer.install_trainer(kube)  # type: ignore[arg-type]
    kube.put({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "theirs", "namespace": "ml-team"}})
    said: list[str] = []
    trainer.remove_trainer(kube, say=said.append)  # type: ignore[arg-type]
    assert _has(kube, "customresourcedefinitions", deps.JOBSET_CRD)
    assert any(line.startswith(f"Kept CustomResourceDefinition {deps.JOBSET_CRD}") and "JobSet ml-team/theirs" in line for line in said)
    trainer.remove_trainer(kube, delete_crds=[deps.JOBSET_CRD])  # type: ignore[arg-type]
    assert not _has(kube, "customresourcedefinitions", deps.JOBSET_CRD)
