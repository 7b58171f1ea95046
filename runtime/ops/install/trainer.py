"""The ``deps`` phase of ``setup init | reset``: Kubeflow Trainer 2.2.1 and the JobSet it brings.

The objects come from the Kubeflow Trainer Helm chart, rendered with ``helm template``: from
``--trainer-chart-ref`` when given (an OCI reference or a chart directory, pulled at the pinned
chart version), else from the chart inside the pinned Trainer Go module on this machine, with
the JobSet chart of the pinned JobSet module in place of its remote dependency, so nothing is
downloaded. nvcrectl applies them itself (server-side apply, CRDs first and waited for) and
marks each one with the :data:`INSTALLED_BY` label and the vocabulary's
``ANNOTATION_INSTALLED_VERSION`` annotation. ``setup reset`` deletes only objects that carry
the label, and of those not the ones others depend on (:mod:`.holdings`): a Trainer CRD
holding objects nvcrectl did not create keeps the whole Trainer install (unless the CRD is
named with ``--delete-crd``), the JobSet CRD stays while JobSets exist, and the namespace
stays while it holds anything nvcrectl did not create.

A JobSet CRD that is on the cluster without our label belongs to someone else: Trainer is then
installed without its bundled JobSet (``jobset.install=false``) and that JobSet is never touched.
A Trainer already on the cluster without our label is left as it is; ours at the pinned version
is skipped, so running ``setup init`` again changes nothing.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_INSTALLED_VERSION, LABEL_INSTALLED_BY

from ...kube.client import Kube
from ...kube.errors import ApiError, ApiNotServed, NotFound
from ...kube.resources import Resource
from .deps import CRDS, JOBSET_CRD, TRAINER_CRDS, wait_established
from .helm import HelmError, helm_template
from .holdings import foreign_in_namespace, foreign_instances, summary

__all__ = [
    "INSTALLED_BY",
    "NVCRE_CHART_OCI",
    "TRAINER_CHART_OCI",
    "TRAINER_NAMESPACE",
    "TRAINER_VERSION",
    "TrainerInstallError",
    "install_trainer",
    "remove_trainer",
    "render_trainer",
]

Say = Callable[[str], object]
TRAINER_VERSION = "v2.2.1"
JOBSET_VERSION = "v0.11.1"
TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
JOBSET_MODULE = "sigs.k8s.io/jobset"
TRAINER_NAMESPACE = "kubeflow-system"
TRAINER_RELEASE = "kubeflow-trainer"
#: NVCRE's defaults for ``--trainer-chart-ref`` and ``--chart-ref`` (the published charts).
TRAINER_CHART_OCI = "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
NVCRE_CHART_OCI = "oci://ghcr.io/nvidia/cluster-readiness-engine"
#: The label (key, value) on every object the deps phase applied; the vocabulary's
#: ``ANNOTATION_INSTALLED_VERSION`` beside it names the Trainer version.
INSTALLED_BY = (LABEL_INSTALLED_BY, "nvcrectl-setup-deps")
_NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def _r(group: str, plural: str, kind: str, namespaced: bool = True, version: str = "v1") -> Resource:
    return Resource(group, version, plural, kind, namespaced=namespaced)


#: What a Trainer install holds, in the order reset deletes it: webhooks first (so nothing is
#: refused by a webhook whose service is going), then workloads and RBAC, the CRDs, the namespace.
REMOVAL_ORDER = (
    _r("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
    _r("admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False),
    _r("apps", "deployments", "Deployment"),
    _r("", "services", "Service"),
    _r("", "configmaps", "ConfigMap"),
    _r("", "secrets", "Secret"),
    _r("", "serviceaccounts", "ServiceAccount"),
    _r("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _r("rbac.authorization.k8s.io", "roles", "Role"),
    _r("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False),
    CRDS,
    _NAMESPACES,
)


class TrainerInstallError(Exception):
    """The deps phase could not install Kubeflow Trainer; nothing of it was applied."""


def _marked(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(INSTALLED_BY[0]) == INSTALLED_BY[1]


def _live(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return kube.get(resource, name, namespace)
    except NotFound:
        return None


def owner_of(kube: Kube, crd_name: str) -> str:
    """``absent``, ``ours`` (the CRD carries our label) or ``foreign``."""
    live = _live(kube, CRDS, crd_name)
    if live is None:
        return "absent"
    return "ours" if _marked(live) else "foreign"


def _module_caches() -> list[Path]:
    """Where Go keeps downloaded modules: ``GOMODCACHE``, ``GOPATH``'s, then the default one."""
    roots = [os.environ.get("GOMODCACHE", "")]
    roots += [str(Path(p) / "pkg" / "mod") for p in os.environ.get("GOPATH", "").split(os.pathsep) if p]
    roots.append(str(Path.home() / "go" / "pkg" / "mod"))
    return [Path(r) for r in dict.fromkeys(roots) if r]


def pinned_module(module: str, version: str) -> Path | None:
    """The pinned module's source directory in a Go module cache, or None."""
    for root in _module_caches():
        candidate = root / f"{module}@{version}"
        if candidate.is_dir():
            return candidate
    return None


def pinned_chart(workdir: Path) -> Path:
    """A copy of the pinned Trainer module's chart whose JobSet dependency is the pinned JobSet module's chart.

    The chart names its dependencies by remote repository; with the JobSet chart already under
    ``charts/`` and the (disabled) data-cache dependency dropped, helm fetches nothing."""
    import yaml

    trainer = pinned_module(TRAINER_MODULE, TRAINER_VERSION)
    jobset = pinned_module(JOBSET_MODULE, JOBSET_VERSION)
    if trainer is None or jobset is None:
        missing = f"{TRAINER_MODULE}@{TRAINER_VERSION}" if trainer is None else f"{JOBSET_MODULE}@{JOBSET_VERSION}"
        raise TrainerInstallError(
            f"the Go module {missing} is not on this machine (looked in {', '.join(map(str, _module_caches()))}); "
            f"pass --trainer-chart-ref {TRAINER_CHART_OCI} (or a mirror of it), or fetch the module with go mod download"
        )
    chart = workdir / "kubeflow-trainer"
    shutil.copytree(trainer / "charts" / "kubeflow-trainer", chart)
    shutil.copytree(jobset / "charts" / "jobset", chart / "charts" / "jobset")
    for path in [chart, *chart.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # module caches are read-only
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    vendored = yaml.safe_load((chart / "charts" / "jobset" / "Chart.yaml").read_text())
    meta["dependencies"] = [
        {"name": "jobset", "version": str(vendored["version"]), "condition": "jobset.install"}
        for dep in meta.get("dependencies") or []
        if dep.get("name") == "jobset"
    ]
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return chart


def render_trainer(chart_ref: str | None, *, install_jobset: bool, token: str | None = None) -> list[dict[str, Any]]:
    """The objects of the Trainer chart (``chart_ref`` at the pinned version, else the pinned module's), CRDs included."""
    sets = ["manager.tolerations[0].operator=Exists", "jobset.controller.tolerations[0].operator=Exists"]
    if not install_jobset:
        sets.append("jobset.install=false")
    try:
        if chart_ref is not None:
            version = TRAINER_VERSION.removeprefix("v")
            return helm_template(chart_ref, TRAINER_RELEASE, TRAINER_NAMESPACE, version=version, sets=sets, token=token)
        with tempfile.TemporaryDirectory(prefix="nvcre-trainer-") as tmp:
            return helm_template(pinned_chart(Path(tmp)), TRAINER_RELEASE, TRAINER_NAMESPACE, sets=sets)
    except HelmError as exc:
        raise TrainerInstallError(f"{exc}; or pass --skip-phases=deps and install Kubeflow Trainer yourself") from None


def _marked_copy(kube: Kube, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with our label and version annotation, and the Trainer namespace when it is namespaced and has none."""
    out = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    meta.setdefault("labels", {})[INSTALLED_BY[0]] = INSTALLED_BY[1]
    meta.setdefault("annotations", {})[ANNOTATION_INSTALLED_VERSION] = TRAINER_VERSION
    if out.get("kind") != "CustomResourceDefinition" and not meta.get("namespace"):
        if kube.resource_for(str(out["apiVersion"]), str(out["kind"])).namespaced:
            meta["namespace"] = TRAINER_NAMESPACE
    return out


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')} {meta['namespace'] + '/' if meta.get('namespace') else ''}{meta.get('name')}"


def _foreign(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Objects of the rendered install that exist without our label."""
    found = []
    for obj in objects:
        meta = obj["metadata"]
        resource = CRDS if obj["kind"] == "CustomResourceDefinition" else kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
        live = _live(kube, resource, str(meta["name"]), meta.get("namespace"))
        if live is not None and not _marked(live):
            found.append(_describe(obj))
    return found


def _ensure_namespace(kube: Kube, say: Say, timeout: float = 120.0) -> None:
    """Create the Trainer namespace (marked), after waiting out a reset's deletion of it."""
    live = _live(kube, _NAMESPACES, TRAINER_NAMESPACE)
    deadline = time.monotonic() + timeout
    while live is not None and (live.get("metadata") or {}).get("deletionTimestamp"):
        if time.monotonic() > deadline:
            raise TrainerInstallError(f"namespace {TRAINER_NAMESPACE} is still terminating after {timeout:.0f}s")
        time.sleep(0.5)
        live = _live(kube, _NAMESPACES, TRAINER_NAMESPACE)
    if live is None:
        labels = {INSTALLED_BY[0]: INSTALLED_BY[1]}
        kube.create(
            {"metadata": {"name": TRAINER_NAMESPACE, "labels": labels, "annotations": {ANNOTATION_INSTALLED_VERSION: TRAINER_VERSION}}},
            _NAMESPACES,
        )
    elif not _marked(live):
        say(f"Namespace {TRAINER_NAMESPACE} already exists and was not created by nvcrectl: it is used as it is and reset keeps it.")


def install_trainer(
    kube: Kube,
    *,
    chart_ref: str | None = None,
    token: str | None = None,
    say: Say = lambda line: None,
    on_apply: Callable[[], object] = lambda: None,
) -> int:
    """Install Kubeflow Trainer when it is absent; returns the number of objects applied (0: nothing to do).

    ``on_apply`` is called just before the first write; a :class:`TrainerInstallError` comes before it."""
    trainer = {name: owner_of(kube, name) for name in TRAINER_CRDS}
    if "foreign" in trainer.values():
        say("Kubeflow Trainer is already installed (not by nvcrectl): it is left as it is.")
        return 0
    if set(trainer.values()) == {"ours"}:
        live = _live(kube, CRDS, TRAINER_CRDS[0]) or {}
        if ((live.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_INSTALLED_VERSION) == TRAINER_VERSION:
            say(f"Kubeflow Trainer {TRAINER_VERSION} (installed by nvcrectl) is already there; skipping.")
            return 0
    jobset = owner_of(kube, JOBSET_CRD)
    if jobset == "foreign":
        say(
            f"JobSet is installed and was not installed by nvcrectl: it is left alone (Trainer {TRAINER_VERSION} goes in without its bundled JobSet)."
        )
    source = chart_ref or f"the pinned module {TRAINER_MODULE}@{TRAINER_VERSION}"
    say(f"Installing Kubeflow Trainer {TRAINER_VERSION} from {source}...")
    rendered = render_trainer(chart_ref, install_jobset=jobset != "foreign", token=token)
    if jobset == "foreign":  # a chart that renders the JobSet CRD anyway must not take it over
        rendered = [o for o in rendered if (o.get("metadata") or {}).get("name") != JOBSET_CRD]
    objects = [_marked_copy(kube, o) for o in rendered]
    conflicts = _foreign(kube, objects)
    if conflicts:
        raise TrainerInstallError(
            "these objects of the Trainer install exist and were not installed by nvcrectl, so nothing was applied: " + ", ".join(conflicts)
        )
    on_apply()
    _ensure_namespace(kube, say)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    for obj in crds:
        kube.apply(obj)
    wait_established(kube, [str(o["metadata"]["name"]) for o in crds])
    for obj in objects:
        if obj["kind"] != "CustomResourceDefinition":
            kube.apply(obj)
    say(f"Applied {len(objects)} Kubeflow Trainer objects ({len(crds)} CRDs), each labelled {INSTALLED_BY[0]}={INSTALLED_BY[1]}.")
    return len(objects)


def _wait_gone(kube: Kube, pending: list[tuple[Resource, str]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pending:
        pending = [(r, n) for r, n in pending if _live(kube, r, n) is not None]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"still being deleted after {timeout:.0f}s: {', '.join(f'{r.kind} {n}' for r, n in pending)}")
        time.sleep(0.5)


def _in_use(kube: Kube, crd_names: Sequence[str]) -> dict[str, list[str]]:
    """For each CRD of ``crd_names`` that holds objects nvcrectl did not install: those objects."""
    found = {name: foreign_instances(kube, name, _marked) for name in crd_names}
    return {name: objects for name, objects in found.items() if objects}


def _kept_crd_line(name: str, objects: Sequence[str]) -> str:
    return (
        f"Kept CustomResourceDefinition {name}: it holds {len(objects)} object(s) nvcrectl did not create "
        f"({summary(objects)}), and deleting it would delete them in every namespace; "
        f"pass --delete-crd {name} to delete it anyway."
    )


def remove_trainer(kube: Kube, say: Say = lambda line: None, timeout: float = 180.0, *, delete_crds: Sequence[str] = ()) -> int:
    """Delete every object the deps phase installed (our label), except what others depend on.

    While a Trainer CRD holds objects nvcrectl did not create (another team's TrainJobs or
    TrainingRuntimes), the whole Trainer install stays (its CRDs, controller and webhooks), unless
    every such CRD is named in ``delete_crds``. The JobSet CRD stays while JobSets exist, unless
    named. The Trainer namespace is deleted only when it holds nothing nvcrectl did not create.
    Each thing kept is said, with why."""
    forced = set(delete_crds)
    blocking = {name: objs for name, objs in _in_use(kube, TRAINER_CRDS).items() if name not in forced}
    if blocking:
        for name, objects in blocking.items():
            say(_kept_crd_line(name, objects))
        say("Kept the whole Kubeflow Trainer install (its controller and webhooks too): those objects still need it.")
        return 0
    keep_jobset = {} if JOBSET_CRD in forced else _in_use(kube, (JOBSET_CRD,))
    foreign_content = _kept_namespaces(kube)
    selector = f"{INSTALLED_BY[0]}={INSTALLED_BY[1]}"
    removed = 0
    cluster_scoped: list[tuple[Resource, str]] = []
    for resource in REMOVAL_ORDER:
        try:
            items = kube.list(resource, label_selector=selector).items
        except (NotFound, ApiNotServed, ApiError):
            continue
        for obj in items:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name"))
            if resource is CRDS and name in keep_jobset:
                say(_kept_crd_line(name, keep_jobset[name]))
                continue
            if resource is _NAMESPACES and name in foreign_content:
                say(
                    f"Kept Namespace {name}: it holds objects nvcrectl did not create ({summary(foreign_content[name])}); "
                    "only what setup init installed there was removed."
                )
                continue
            if kube.delete(resource, name, meta.get("namespace"), uid=meta.get("uid")):
                removed += 1
            if not resource.namespaced:
                cluster_scoped.append((resource, name))
    _wait_gone(kube, [(r, n) for r, n in cluster_scoped if r in (CRDS, _NAMESPACES)], timeout)
    say(
        f"Removed {removed} Kubeflow Trainer object(s) that setup init installed."
        if removed
        else "No Kubeflow Trainer objects installed by nvcrectl were found."
    )
    return removed


def _kept_namespaces(kube: Kube) -> dict[str, list[str]]:
    """Our labelled namespaces that hold something nvcrectl did not create, with those objects."""
    try:
        namespaces = kube.list(_NAMESPACES, label_selector=f"{INSTALLED_BY[0]}={INSTALLED_BY[1]}").items
    except (NotFound, ApiNotServed, ApiError):
        return {}
    found = {}
    for namespace in namespaces:
        name = str((namespace.get("metadata") or {}).get("name"))
        foreign = foreign_in_namespace(kube, name, _marked)
        if foreign:
            found[name] = foreign
    return found
