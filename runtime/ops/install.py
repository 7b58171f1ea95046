"""``setup init | status | reset`` against a live cluster: apply, inspect and remove the install.

The objects come from :func:`nvcre.compiler.install.render_install`; this module only applies
them (server-side apply, in the order given, CRDs first and waited for), reads what is there, and
deletes what is ours. It never touches Kubeflow Trainer or the JobSet CRD, which other workloads
share: when they are missing it says so and prints the manual install path. The Prometheus
Operator's kinds (the ServiceMonitor and the PrometheusRule) are applied only where the cluster
serves them; elsewhere they are skipped with a note, as the values that leave them out would.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nvcre.compiler.vocabulary import ANNOTATION_CLEANUP_RETRY

from ..kube.client import Kube
from ..kube.errors import ApiError, ApiNotServed, NotFound
from ..kube.resources import CERTIFICATIONS, CONFIGMAPS, NODES, WORKFLOWS, WORKLOADRUNS, Resource
from .ownership import ForeignObjects, describe, foreign_objects, install_namespaces, is_ours, marked

if TYPE_CHECKING:
    from nvcre.compiler.install import Installed

__all__ = [
    "INIT_PHASES",
    "RESET_PHASES",
    "TRAINER_INSTALL",
    "Component",
    "apply_install",
    "DependenciesMissing",
    "ForeignObjects",
    "OPTIONAL_GROUPS",
    "check_phases",
    "controller_values",
    "dependencies",
    "image_values",
    "install_status",
    "install_namespaces",
    "installed_objects",
    "missing_dependencies",
    "namespace_of",
    "read_kept_values",
    "render_over_kept",
    "reset_install",
    "setup_init",
    "setup_reset",
    "split_unserved",
    "with_kept_values",
]

Say = Callable[[str], object]
INIT_PHASES = ("deps", "helm")
RESET_PHASES = ("cr", "helm", "deps")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
_SERVICES = Resource("", "v1", "services", "Service")
_NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
_MUTATING = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", namespaced=False
)
_VALIDATING = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", namespaced=False
)
#: API groups of install objects applied only when the cluster serves them (the Prometheus Operator's).
OPTIONAL_GROUPS = ("monitoring.coreos.com",)
TRAINER_CRDS = ("trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org")
JOBSET_CRD = "jobsets.jobset.x-k8s.io"
TRAINER_INSTALL = (
    "Install Kubeflow Trainer 2.2.1 (it brings JobSet unless one is already installed):\n"
    '  kubectl apply --server-side -k "https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.2.1"\n'
    "then re-run: nvcrectl setup init --skip-phases=deps"
)


def check_phases(skip: Sequence[str], accepted: Sequence[str], command: str) -> tuple[str, ...]:
    """The ``--skip-phases`` words, refusing any the command does not have."""
    words = tuple(dict.fromkeys(w.strip() for value in skip for w in value.split(",") if w.strip()))
    unknown = [w for w in words if w not in accepted]
    if unknown:
        raise ValueError(f"--skip-phases: unknown phase(s) {', '.join(unknown)} for setup {command}; accepted: {', '.join(accepted)}")
    return words


@dataclass(frozen=True)
class Component:
    """One thing the install needs, and whether the cluster has it."""

    name: str
    present: bool
    detail: str = ""


def _exists(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        kube.get(resource, name, namespace)
        return True
    except NotFound:
        return False


def _webhook_groups(kube: Kube) -> set[str]:
    """The API groups admission webhooks serve (from their rules), plus every configuration and hook name."""
    found: set[str] = set()
    for resource in (_MUTATING, _VALIDATING):
        try:
            configurations = kube.list(resource).items
        except ApiError:
            continue
        for configuration in configurations:
            found.add(str((configuration.get("metadata") or {}).get("name") or ""))
            for hook in configuration.get("webhooks") or []:
                found.add(str(hook.get("name") or ""))
                for rule in hook.get("rules") or []:
                    found.update(str(group) for group in rule.get("apiGroups") or [])
    return found


def _serves(found: set[str], group: str) -> bool:
    return any(entry == group or entry.endswith("." + group) for entry in found)


def dependencies(kube: Kube) -> list[Component]:
    """Kubeflow Trainer and JobSet: their CRDs and a sign of their controllers (their webhooks)."""
    webhooks = _webhook_groups(kube)
    trainer_crds = [name for name in TRAINER_CRDS if not _exists(kube, CRDS, name)]
    jobset_crd = _exists(kube, CRDS, JOBSET_CRD)
    trainer_hooks = _serves(webhooks, "trainer.kubeflow.org")
    jobset_hooks = _serves(webhooks, "jobset.x-k8s.io")
    return [
        Component(
            "Kubeflow Trainer CRDs",
            not trainer_crds,
            "missing: " + ", ".join(trainer_crds) if trainer_crds else "trainjobs, trainingruntimes, clustertrainingruntimes",
        ),
        Component(
            "Kubeflow Trainer webhooks",
            trainer_hooks,
            "" if trainer_hooks else "no admission webhook of trainer.kubeflow.org: is its controller running?",
        ),
        Component("JobSet CRD", jobset_crd, JOBSET_CRD if jobset_crd else f"missing: {JOBSET_CRD}"),
        Component("JobSet webhooks", jobset_hooks, "" if jobset_hooks else "no JobSet admission webhook: is its controller running?"),
    ]


def read_kept_values(kube: Kube, namespace: str) -> dict[str, Any]:
    """The values the last ``setup init`` kept, or {} (first run, or nothing readable)."""
    from nvcre.compiler.install.keep import KEPT_VALUES_KEY, KEPT_VALUES_NAME
    from nvcre.compiler.yamlio import load_documents

    try:
        configmap = kube.get(CONFIGMAPS, KEPT_VALUES_NAME, namespace)
    except NotFound:
        return {}
    text = (configmap.get("data") or {}).get(KEPT_VALUES_KEY) or ""
    docs = load_documents(text, f"configmap/{KEPT_VALUES_NAME}")
    return docs[0] if docs and isinstance(docs[0], dict) else {}


def _wait_established(kube: Kube, names: Sequence[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            try:
                crd = kube.get(CRDS, name)
            except NotFound:
                continue
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                pending.discard(name)
        if pending:
            time.sleep(0.2)
    if pending:
        raise TimeoutError(f"CRDs not established after {timeout:.0f}s: {', '.join(sorted(pending))}")


def _wait_terminated(kube: Kube, objects: Sequence[Mapping[str, Any]], say: Say, timeout: float = 120.0) -> None:
    """A namespace of the install still terminating (a reset just before) refuses new objects: wait."""
    for obj in objects:
        if obj.get("kind") != "Namespace":
            continue
        name = str(obj["metadata"]["name"])
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                live = kube.get(_NAMESPACES, name)
            except NotFound:
                break
            if not (live.get("metadata") or {}).get("deletionTimestamp"):
                break
            if not told:
                say(f"Waiting for namespace {name} to finish terminating...")
                told = True
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespace {name} is still terminating after {timeout:.0f}s")
            time.sleep(0.5)


def _unserved_note(obj: Mapping[str, Any]) -> str:
    value = {"ServiceMonitor": "metrics.serviceMonitor.enabled", "PrometheusRule": "metrics.prometheusRule.enabled"}.get(
        str(obj.get("kind")), "its value"
    )
    return f"the cluster does not serve {obj.get('apiVersion')} (no Prometheus Operator CRDs); set {value}=false to leave it out"


def split_unserved(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(The objects to apply, the optional ones whose API the cluster does not serve.)"""
    served: list[Mapping[str, Any]] = []
    unserved: list[Mapping[str, Any]] = []
    for obj in objects:
        if str(obj.get("apiVersion") or "").split("/", 1)[0] in OPTIONAL_GROUPS:
            try:
                kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
            except ApiNotServed:
                unserved.append(obj)
                continue
        served.append(obj)
    return served, unserved


def apply_install(kube: Kube, objects: Sequence[Mapping[str, Any]], say: Say = lambda line: None) -> int:
    """Server-side apply every object in order; CRDs are waited for before anything that uses them,
    and a namespace of the install that is still terminating before anything at all.

    An existing Namespace nvcrectl did not create is used as it is (not labelled, so a reset keeps
    it); any other existing object it did not create raises :class:`ForeignObjects` first. An
    object of an optional API the cluster does not serve is skipped with a note."""
    objects, unserved = split_unserved(kube, objects)
    for obj in unserved:
        say(f"Skipped {describe(obj)}: {_unserved_note(obj)}.")
    _wait_terminated(kube, objects, say)
    found_namespaces, conflicts = foreign_objects(kube, objects)
    if conflicts:
        raise ForeignObjects(conflicts)
    for namespace in found_namespaces:
        say(
            f"{describe(namespace)} already exists and was not created by nvcrectl: it is used as it is, "
            "and setup reset will leave it and everything in it that is not ours."
        )
    used_as_found = {id(n) for n in found_namespaces}
    objects = [o for o in objects if id(o) not in used_as_found]
    crds = [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    rest = [o for o in objects if o.get("kind") != "CustomResourceDefinition"]
    for obj in crds:
        kube.apply(obj)
    if crds:
        _wait_established(kube, [str(o["metadata"]["name"]) for o in crds])
        say(f"Applied {len(crds)} CRDs.")
    for obj in rest:
        kube.apply(obj)
    say(
        f"Applied {len(rest)} objects (namespace, LogProfiles, RBAC, ServiceAccount, Deployment, metrics Service and monitoring, kept values)."
    )
    return len(objects)


def _deployment_ready(kube: Kube, obj: Mapping[str, Any]) -> Component:
    meta = obj.get("metadata") or {}
    resource = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
    try:
        live = kube.get(resource, str(meta["name"]), meta.get("namespace"))
    except NotFound:
        return Component(f"controller Deployment {meta.get('namespace')}/{meta['name']}", False, "not installed")
    status = live.get("status") or {}
    want = int((live.get("spec") or {}).get("replicas") or 1)
    ready = int(status.get("readyReplicas") or 0)
    return Component(f"controller Deployment {meta.get('namespace')}/{meta['name']}", ready >= want, f"{ready}/{want} replicas ready")


def install_status(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> list[Component]:
    """Every install object, the dependencies, DCGM and GPU nodes: present or exactly what is missing."""
    found: list[Component] = []
    by_kind: dict[str, list[str]] = {}
    objects, unserved = split_unserved(kube, objects)
    for obj in unserved:
        found.append(Component(f"{describe(obj)} (optional)", True, f"not installed: {_unserved_note(obj)}"))
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Deployment":
            found.append(_deployment_ready(kube, obj))
            continue
        resource = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
        if not _exists(kube, resource, str(meta["name"]), meta.get("namespace")):
            by_kind.setdefault(str(obj["kind"]), []).append(str(meta["name"]))
        else:
            by_kind.setdefault(str(obj["kind"]), [])
    for kind, missing in by_kind.items():
        total = sum(1 for o in objects if o.get("kind") == kind)
        found.append(Component(f"{kind} ({total})", not missing, "missing: " + ", ".join(missing) if missing else "all present"))
    found.extend(dependencies(kube))
    dcgm = _exists(kube, _SERVICES, "nvidia-dcgm", "gpu-operator")
    found.append(
        Component(
            "DCGM Service gpu-operator/nvidia-dcgm", dcgm, "" if dcgm else "needed by diagnostics/dcgm-level4 unless it sets dcgmHost"
        )
    )
    try:
        gpu_nodes = kube.list(NODES, label_selector="nvidia.com/gpu.present=true").items
    except ApiError:
        gpu_nodes = ()
    found.append(Component("GPU nodes (nvidia.com/gpu.present=true)", bool(gpu_nodes), f"{len(gpu_nodes)} node(s)"))
    return found


def _delete_all(kube: Kube, resource: Resource, say: Say, timeout: float = 300.0) -> None:
    items = kube.list(resource).items
    for obj in items:
        meta = obj["metadata"]
        kube.delete(resource, meta["name"], meta.get("namespace"), uid=meta.get("uid"))
    if items:
        say(f"Deleting {len(items)} {resource.kind}(s)...")
    deadline = time.monotonic() + timeout
    while kube.list(resource).items:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{resource.kind} objects still present after {timeout:.0f}s (is the controller running?)")
        time.sleep(1.0)


def _served_resource(crd: Mapping[str, Any]) -> Resource:
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or [{}]
    stored = next((v for v in versions if v.get("storage")), versions[0])
    names = spec.get("names") or {}
    return Resource(
        str(spec.get("group") or ""),
        str(stored.get("name") or "v1"),
        str(names.get("plural") or ""),
        str(names.get("kind") or ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
    )


def _list_when_ready(kube: Kube, resource: Resource, timeout: float = 60.0) -> list[dict[str, Any]]:
    """List a custom resource, waiting while the server's watch cache for it is still starting
    (it answers 429 "storage is (re)initializing" until then)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return list(kube.list(resource).items)
        except NotFound:
            return []
        except ApiError as error:
            if error.status != 429 or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _empty_custom_resource(kube: Kube, crd: Mapping[str, Any]) -> None:
    """Delete every object of one of our CRDs before the CRD itself.

    Listing first also brings the server's storage for the kind up, so the API server's own
    cleanup of the CRD finds it ready: without that, a CRD nobody has read yet can sit in
    ``Terminating`` with "could not list instances: storage is (re)initializing" for minutes
    while the server's retry backs off.
    """
    resource = _served_resource(crd)
    for obj in _list_when_ready(kube, resource):
        meta = obj.get("metadata") or {}
        try:
            kube.delete(resource, str(meta.get("name")), meta.get("namespace"), uid=meta.get("uid"))
        except NotFound:
            continue


def _cleanup_stalled(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Terminating" and c.get("reason") == "InstanceDeletionFailed" for c in conditions)


def _wait_crds_gone(kube: Kube, names: Sequence[str], timeout: float = 180.0) -> None:
    """Wait until the API server has removed our CRDs.

    When its cleanup of a CRD failed once (``InstanceDeletionFailed``), the server retries with a
    growing back-off; touching an annotation on the CRD puts it back in the server's queue at once.
    """
    deadline = time.monotonic() + timeout
    nudged: dict[str, float] = {}
    pending = list(names)
    while pending:
        still: list[str] = []
        for name in pending:
            try:
                live = kube.get(CRDS, name)
            except NotFound:
                continue
            still.append(name)
            now = time.monotonic()
            if _cleanup_stalled(live) and now - nudged.get(name, 0.0) >= 5.0:
                nudged[name] = now
                with contextlib.suppress(ApiError):  # best effort: the server's own retry still runs
                    kube.merge_patch(CRDS, name, None, {"metadata": {"annotations": {ANNOTATION_CLEANUP_RETRY: str(int(now))}}})
        pending = still
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"our CRDs are still being deleted after {timeout:.0f}s: {', '.join(pending)}")
        time.sleep(0.5)


def reset_install(kube: Kube, objects: Sequence[Mapping[str, Any]], skip: Sequence[str], say: Say = lambda line: None) -> None:
    """``cr``: delete every run (the controller frees its GPUs first); ``helm``: remove our install.

    ``deps`` is accepted for compatibility: nvcrectl never installs Kubeflow Trainer, so there is
    nothing of it to remove; the JobSet CRD is never removed.
    """
    if "cr" not in skip:
        for resource in (CERTIFICATIONS, WORKLOADRUNS, WORKFLOWS):
            try:
                _delete_all(kube, resource, say)
            except NotFound:
                continue
    if "helm" not in skip:
        objects, _ = split_unserved(kube, objects)  # nothing of an API the cluster does not serve can be there
        ours = [
            o for o in objects if o.get("kind") == "CustomResourceDefinition" and str((o.get("metadata") or {}).get("name")) != JOBSET_CRD
        ]
        for crd in ours:
            _empty_custom_resource(kube, crd)
        removed = 0
        for obj in reversed(list(objects)):
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "CustomResourceDefinition" and str(meta.get("name")) == JOBSET_CRD:
                continue
            if marked(obj) and is_ours(kube, obj) is False:
                say(f"Kept {describe(obj)}: it was not created by nvcrectl.")
                continue
            resource = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
            try:
                kube.delete(resource, str(meta["name"]), meta.get("namespace"))
                removed += 1
            except NotFound:
                continue
        _wait_crds_gone(kube, [str(o["metadata"]["name"]) for o in ours])
        say(f"Removed {removed} install object(s); the JobSet CRD and Kubeflow Trainer stay.")
    if "deps" not in skip:
        say("Kubeflow Trainer was not installed by nvcrectl and is left in place.")


class DependenciesMissing(Exception):
    """Kubeflow Trainer or JobSet (or their controllers) are not on the cluster."""

    def __init__(self, missing: Sequence[Component]) -> None:
        self.missing = tuple(missing)
        super().__init__("missing: " + "; ".join(f"{c.name}: {c.detail}" for c in self.missing))


def image_values(image: str) -> dict[str, Any]:
    """The values layer for a controller image: ``repo``, ``repo:tag`` or ``repo@sha256:...``."""
    if "@" in image:
        repository, digest = image.split("@", 1)
        fields = {"repository": repository, "digest": digest}
    else:
        head, sep, tag = image.rpartition(":")
        fields = {"repository": head, "tag": tag} if sep and "/" not in tag else {"repository": image}
    return {"manager": {"image": fields}}


def controller_values(image: str | None = None, pull_secret: str | None = None) -> list[dict[str, Any]]:
    """Values layers for a run's ``--image`` (see :func:`image_values`) and ``--controller-pull-secret``
    (the name of an image pull Secret in the controller's namespace)."""
    layers: list[dict[str, Any]] = []
    if image:
        layers.append(image_values(image))
    if pull_secret:
        layers.append({"manager": {"imagePullSecrets": [pull_secret]}})
    return layers


def namespace_of(layers: Sequence[Mapping[str, Any]]) -> str:
    """The controller's namespace the values layers name (the last one that sets it), else the default."""
    from nvcre.compiler.install import DEFAULT_VALUES

    namespace = str(DEFAULT_VALUES["namespace"]["name"])
    for layer in layers:
        namespace = str((layer.get("namespace") or {}).get("name") or namespace)
    return namespace


def with_kept_values(installed: Installed) -> list[dict[str, Any]]:
    """The install's objects plus the ConfigMap that keeps its values for the next ``setup init``."""
    from nvcre.compiler.install.keep import kept_values_configmap

    values = installed.values
    return [*(dict(o) for o in installed.objects), kept_values_configmap(values, str(values["namespace"]["name"]))]


def render_over_kept(kube: Kube, layers: Sequence[Mapping[str, Any]] = ()) -> Installed:
    """The install for the values the last ``setup init`` kept with ``layers`` on top (with no
    layers: the install as that init left it)."""
    from nvcre.compiler.install import render_install

    return render_install([read_kept_values(kube, namespace_of(layers)), *layers])


def missing_dependencies(kube: Kube) -> list[Component]:
    """The parts of Kubeflow Trainer and JobSet the cluster lacks (empty when all are there)."""
    return [c for c in dependencies(kube) if not c.present]


def setup_init(
    kube: Kube,
    layers: Sequence[Mapping[str, Any]] = (),
    *,
    skip: Sequence[str] = (),
    say: Say = lambda line: None,
    on_apply: Callable[[], object] = lambda: None,
) -> int:
    """What ``setup init --auto-approve`` does, for the run commands' ``--setup``.

    Values are the ones the last init kept on the cluster with ``layers`` on top; the objects are
    server-side applied, so running it again changes nothing. Raises :class:`DependenciesMissing`
    before applying anything when Trainer or JobSet is absent, and ``CompileError`` for bad values.
    ``on_apply`` is called just before the first object is applied (from then on there is
    something a cleanup would have to remove). Returns the number of objects applied.
    """
    from nvcre.compiler.diagnostics import raise_if_errors

    installed = render_over_kept(kube, layers)
    raise_if_errors(installed.diagnostics)
    if "deps" not in skip:
        missing = missing_dependencies(kube)
        if missing:
            raise DependenciesMissing(missing)
    if "helm" in skip:
        return 0
    on_apply()
    return apply_install(kube, with_kept_values(installed), say=say)


def installed_objects(kube: Kube, namespace: str | None = None) -> list[dict[str, Any]]:
    """The install as the last ``setup init`` left it (its kept values over the defaults), for the
    install whose controller lives in ``namespace`` (the default namespace when None)."""
    layers = [{"namespace": {"name": namespace}}] if namespace else []
    return with_kept_values(render_over_kept(kube, layers))


def setup_reset(kube: Kube, *, skip: Sequence[str] = (), say: Say = lambda line: None) -> None:
    """What ``setup reset --auto-approve`` does: every run (``cr``), then our install (``helm``),
    wherever ``setup init`` put it (every namespace holding its kept values; the default one when
    none does)."""
    namespaces: list[str | None] = [*install_namespaces(kube)] or [None]
    for index, namespace in enumerate(namespaces):
        if namespace is not None:
            say(f"Removing the install in namespace {namespace}.")
        # runs are cluster-wide: delete them once
        reset_install(kube, installed_objects(kube, namespace), [*skip, *(["cr"] if index else [])], say=say)
