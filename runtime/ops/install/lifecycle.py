"""``setup init | status | reset`` against a live cluster: apply, inspect and remove the install.

The objects come from :func:`nvcre.compiler.install.render_install`; this module only applies
them (server-side apply, in the order given, CRDs first and waited for), reads what is there, and
deletes what is ours. Kubeflow Trainer and JobSet (the ``deps`` phase) are checked in
:mod:`.deps` and installed or removed by :mod:`.trainer`, which touches only what it
marked; a JobSet someone else installed is never changed. The Prometheus
Operator's kinds (the ServiceMonitor and the PrometheusRule) are applied only where the cluster
serves them; elsewhere they are skipped with a note, as the values that leave them out would.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nvcre.compiler.vocabulary import ANNOTATION_CLEANUP_RETRY

from ...kube.client import Kube
from ...kube.errors import ApiError, ApiNotServed, NotFound
from ...kube.resources import CERTIFICATIONS, CONFIGMAPS, NODES, WORKFLOWS, WORKLOADRUNS, Resource
from .chart import PULL_SECRET, PullSecretTaken, chart_objects, controller_values, ensure_pull_secret, image_values
from .deps import (
    CRDS,
    JOBSET_CRD,
    TRAINER_INSTALL,
    Component,
    DependenciesMissing,
    dependencies,
    exists,
    missing_dependencies,
    wait_established,
)
from .holdings import crd_resource, summary
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
    "PULL_SECRET",
    "PullSecretTaken",
    "chart_objects",
    "check_phases",
    "ensure_pull_secret",
    "controller_values",
    "dependencies",
    "ensure_dependencies",
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

_SERVICES = Resource("", "v1", "services", "Service")
_NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
#: API groups of install objects applied only when the cluster serves them (the Prometheus Operator's).
OPTIONAL_GROUPS = ("monitoring.coreos.com",)


def check_phases(skip: Sequence[str], accepted: Sequence[str], command: str) -> tuple[str, ...]:
    """The ``--skip-phases`` words, refusing any the command does not have."""
    words = tuple(dict.fromkeys(w.strip() for value in skip for w in value.split(",") if w.strip()))
    unknown = [w for w in words if w not in accepted]
    if unknown:
        raise ValueError(f"--skip-phases: unknown phase(s) {', '.join(unknown)} for setup {command}; accepted: {', '.join(accepted)}")
    return words


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
        wait_established(kube, [str(o["metadata"]["name"]) for o in crds])
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
        if not exists(kube, resource, str(meta["name"]), meta.get("namespace")):
            by_kind.setdefault(str(obj["kind"]), []).append(str(meta["name"]))
        else:
            by_kind.setdefault(str(obj["kind"]), [])
    for kind, missing in by_kind.items():
        total = sum(1 for o in objects if o.get("kind") == kind)
        found.append(Component(f"{kind} ({total})", not missing, "missing: " + ", ".join(missing) if missing else "all present"))
    found.extend(dependencies(kube))
    dcgm = exists(kube, _SERVICES, "nvidia-dcgm", "gpu-operator")
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
    resource = crd_resource(crd)
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


def _namespaces_in_use(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The install's own Namespaces (ours on the cluster) that hold objects nvcrectl did not create."""
    from .holdings import foreign_in_namespace

    found = {}
    for obj in objects:
        if obj.get("kind") != "Namespace" or not marked(obj) or not is_ours(kube, obj):
            continue
        name = str((obj.get("metadata") or {}).get("name"))
        foreign = foreign_in_namespace(kube, name, marked)
        if foreign:
            found[name] = foreign
    return found


def reset_install(
    kube: Kube,
    objects: Sequence[Mapping[str, Any]],
    skip: Sequence[str],
    say: Say = lambda line: None,
    *,
    delete_crds: Sequence[str] = (),
) -> None:
    """``cr``: delete every run (the controller frees its GPUs first); ``helm``: remove our install;
    ``deps``: remove what ``setup init`` installed of Kubeflow Trainer and JobSet (only objects it
    marked, and not what others depend on: see :func:`.trainer.remove_trainer`; ``delete_crds``
    names CRDs to delete even so). A JobSet CRD the install renders is never removed by ``helm``.
    The install's Namespace is deleted only when it holds nothing nvcrectl did not create.
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
        in_use = _namespaces_in_use(kube, objects)
        removed = 0
        for obj in reversed(list(objects)):
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "CustomResourceDefinition" and str(meta.get("name")) == JOBSET_CRD:
                continue
            if marked(obj) and is_ours(kube, obj) is False:
                say(f"Kept {describe(obj)}: it was not created by nvcrectl.")
                continue
            if obj.get("kind") == "Namespace" and str(meta.get("name")) in in_use:
                held = summary(in_use[str(meta.get("name"))])
                say(f"Kept {describe(obj)}: it holds objects nvcrectl did not create ({held}); only the install was removed from it.")
                continue
            resource = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
            try:
                kube.delete(resource, str(meta["name"]), meta.get("namespace"))
                removed += 1
            except NotFound:
                continue
        _wait_crds_gone(kube, [str(o["metadata"]["name"]) for o in ours])
        say(f"Removed {removed} install object(s).")
    if "deps" not in skip:
        from .trainer import remove_trainer

        remove_trainer(kube, say, delete_crds=delete_crds)


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
    server-side applied, so running it again changes nothing. Kubeflow Trainer is installed when
    absent (:func:`ensure_dependencies`); raises :class:`DependenciesMissing` when a Trainer or JobSet
    it did not install lacks its controller, and ``CompileError`` for bad values.
    ``on_apply`` is called just before the first object is applied (from then on there is
    something a cleanup would have to remove). Returns the number of objects applied.
    """
    from nvcre.compiler.diagnostics import raise_if_errors

    installed = render_over_kept(kube, layers)
    raise_if_errors(installed.diagnostics)
    if "deps" not in skip:
        ensure_dependencies(kube, say=say, on_apply=on_apply)
    if "helm" in skip:
        return 0
    on_apply()
    return apply_install(kube, with_kept_values(installed), say=say)


def ensure_dependencies(
    kube: Kube,
    *,
    chart_ref: str | None = None,
    token: str | None = None,
    say: Say = lambda line: None,
    on_apply: Callable[[], object] = lambda: None,
) -> int:
    """The ``deps`` phase: install Kubeflow Trainer (and JobSet unless someone else's is there) when
    missing; raises :class:`DependenciesMissing` when parts are still missing afterwards (a Trainer
    or JobSet nvcrectl did not install, without its controller). Returns the objects applied."""
    from .trainer import TrainerInstallError, install_trainer

    if not missing_dependencies(kube):
        say("Kubeflow Trainer and JobSet are present.")
        return 0
    try:
        applied = install_trainer(kube, chart_ref=chart_ref, token=token, say=say, on_apply=on_apply)
    except TrainerInstallError as exc:  # nothing was applied: say what is missing, why, and the way by hand
        reason = Component("Kubeflow Trainer install by setup init", False, str(exc))
        raise DependenciesMissing([*missing_dependencies(kube), reason]) from None
    still = missing_dependencies(kube)
    if still:
        raise DependenciesMissing(still)
    return applied


def installed_objects(kube: Kube, namespace: str | None = None) -> list[dict[str, Any]]:
    """The install as the last ``setup init`` left it (its kept values over the defaults), for the
    install whose controller lives in ``namespace`` (the default namespace when None)."""
    layers = [{"namespace": {"name": namespace}}] if namespace else []
    return with_kept_values(render_over_kept(kube, layers))


def setup_reset(kube: Kube, *, skip: Sequence[str] = (), say: Say = lambda line: None, delete_crds: Sequence[str] = ()) -> None:
    """What ``setup reset --auto-approve`` does: every run (``cr``), then our install (``helm``),
    wherever ``setup init`` put it (every namespace holding its kept values; the default one when
    none does), then what ``setup init`` installed of Kubeflow Trainer (``deps``, see
    :func:`reset_install` for what is kept and ``delete_crds``)."""
    namespaces: list[str | None] = [*install_namespaces(kube)] or [None]
    for index, namespace in enumerate(namespaces):
        if namespace is not None:
            say(f"Removing the install in namespace {namespace}.")
        later = ["cr", "deps"] if index else []  # runs and the Trainer are cluster-wide: once
        reset_install(kube, installed_objects(kube, namespace), [*skip, *later], say=say, delete_crds=delete_crds)
