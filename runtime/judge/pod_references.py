"""What the pods a Workflow runs may refer to: only what admission checked against the author's rights.

The install's ValidatingAdmissionPolicy (``compiler/install/admission.py``) checks, when a user
creates or changes a Workflow, an nvcre Job or a WorkloadRun, that the user may use every
ServiceAccount, Secret, ConfigMap and PersistentVolumeClaim the object's pod templates name. It
can only look at fixed places (:func:`admitted`): the pod templates of the Workflow's
TrainingRuntime dependencies and of the runtime patches, in the shapes Kubernetes pods spell
them. The controller is the one that turns an object into pods, so it finishes the check:
before it creates a TrainingRuntime or a TrainJob it collects every reference the object makes,
wherever it sits (:func:`references`), and refuses the ones admission never saw
(:func:`unadmitted`): a reference that arrives through ``spec.overrides``, a field of the
TrainJob other than its runtime patches, or a shape the policy does not read.

References to the Workflow's own dependencies (a ConfigMap or claim it creates, whose creation
admission checked) are always allowed, and so is the ``default`` ServiceAccount, which every pod
runs as unless told otherwise. ``imagePullSecrets`` are not references here: the kubelet uses
them, the pod never sees them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["REASON_NOT_ADMITTED", "Reference", "admitted", "describe", "references", "refusal", "unadmitted"]

#: the reason a Workflow or Job fails with when its pods would use what admission did not check
REASON_NOT_ADMITTED = "PodReferencesNotAdmitted"

#: (kind, name): ``ServiceAccount``, ``Secret``, ``ConfigMap`` or ``PersistentVolumeClaim``
Reference = tuple[str, str]

SERVICE_ACCOUNT, SECRET, CONFIG_MAP, CLAIM = "ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim"
DEFAULT_ACCOUNT = "default"
_MAX_DEPTH = 64

#: key -> (kind, the key of the name inside it) for references held in a mapping
_NAMED = {
    "secret": (SECRET, ("secretName", "name")),
    "secretKeyRef": (SECRET, ("name",)),
    "secretRef": (SECRET, ("name",)),
    "configMap": (CONFIG_MAP, ("name",)),
    "configMapKeyRef": (CONFIG_MAP, ("name",)),
    "configMapRef": (CONFIG_MAP, ("name",)),
    "persistentVolumeClaim": (CLAIM, ("claimName",)),
}


def _named(kind: str, keys: tuple[str, ...], value: Mapping[str, Any]) -> Reference | None:
    for key in keys:
        name = value.get(key)
        if isinstance(name, str) and name:
            return kind, name
    return None


def _walk(node: Any, depth: int) -> Iterator[Reference]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            yield from _walk(item, depth + 1)
        return
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        if key in ("serviceAccountName", "serviceAccount") and isinstance(value, str) and value and value != DEFAULT_ACCOUNT:
            yield SERVICE_ACCOUNT, value
        elif key in _NAMED and isinstance(value, Mapping):
            kind, names = _NAMED[key]
            found = _named(kind, names, value)
            if found is not None:
                yield found
        yield from _walk(value, depth + 1)


def references(obj: Any) -> set[Reference]:
    """Every ServiceAccount, Secret, ConfigMap and claim ``obj`` names, wherever it names it."""
    return set(_walk(obj, 0))


def _at(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _list(node: Any) -> list[Any]:
    return node if isinstance(node, list) else []


def _pod_specs(templates: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """The pod specs of JobSet templates (``spec.replicatedJobs[].template.spec.template.spec``)."""
    for template in templates:
        for job in _list(_at(template, "spec", "replicatedJobs")):
            spec = _at(job, "template", "spec", "template", "spec")
            if isinstance(spec, Mapping):
                yield spec


def _names_at(shapes: Iterable[Any], paths: tuple[tuple[str, str, str], ...]) -> Iterator[Reference]:
    """``(kind, name)`` for every ``shape`` holding a non-empty name at ``shape[key][field]``,
    for each ``(key, kind, field)`` of ``paths``."""
    for shape in shapes:
        for key, kind, field in paths:
            name = _at(shape, key, field)
            if isinstance(name, str) and name:
                yield kind, name


_VOLUMES = (("secret", SECRET, "secretName"), ("configMap", CONFIG_MAP, "name"), ("persistentVolumeClaim", CLAIM, "claimName"))
_PROJECTED = (("secret", SECRET, "name"), ("configMap", CONFIG_MAP, "name"))
_ENV_VALUES = (("secretKeyRef", SECRET, "name"), ("configMapKeyRef", CONFIG_MAP, "name"))
_ENV_SOURCES = (("secretRef", SECRET, "name"), ("configMapRef", CONFIG_MAP, "name"))


def _checked_in(pod: Mapping[str, Any]) -> Iterator[Reference]:
    """The references of one pod spec in exactly the shapes the admission policy reads."""
    for key in ("serviceAccountName", "serviceAccount"):
        name = pod.get(key)
        if isinstance(name, str) and name and name != DEFAULT_ACCOUNT:
            yield SERVICE_ACCOUNT, name
    volumes = [volume for volume in _list(pod.get("volumes")) if isinstance(volume, Mapping)]
    yield from _names_at(volumes, _VOLUMES)
    yield from _names_at((source for volume in volumes for source in _list(_at(volume, "projected", "sources"))), _PROJECTED)
    containers = [*_list(pod.get("containers")), *_list(pod.get("initContainers"))]
    yield from _names_at((_at(env, "valueFrom") for c in containers for env in _list(_at(c, "env"))), _ENV_VALUES)
    yield from _names_at((source for c in containers for source in _list(_at(c, "envFrom"))), _ENV_SOURCES)


def _runtime_templates(job_spec: Any) -> Iterator[Any]:
    for patch in _list(_at(job_spec, "workload", "trainJob", "runtimePatches")):
        template = _at(patch, "trainingRuntimeSpec", "template")
        if template is not None:
            yield template


def admitted(obj: Mapping[str, Any]) -> set[Reference]:
    """The references admission checked on ``obj`` as written (a Workflow or an nvcre Job): the
    pod templates of its TrainingRuntime dependencies and of its runtime patches; plus, for a
    Workflow, its own ConfigMap and claim dependencies."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    templates: list[Any] = []
    own: set[Reference] = set()
    if obj.get("kind") == "Workflow":
        for dep in _list(_at(spec, "dependencies")):
            kind, name = _at(dep, "kind"), _at(dep, "metadata", "name")
            if kind == "TrainingRuntime":
                templates.append(_at(dep, "spec", "template"))
            elif kind in (CONFIG_MAP, CLAIM) and isinstance(name, str):
                own.add((str(kind), name))
        job_spec = _at(spec, "jobTemplate", "spec")
    else:
        job_spec = spec
    templates.extend(_runtime_templates(job_spec))
    return own | {ref for pod in _pod_specs(templates) for ref in _checked_in(pod)}


def unadmitted(objects: Iterable[Mapping[str, Any]], allowed: set[Reference]) -> list[Reference]:
    """The references of the TrainingRuntimes and TrainJobs among ``objects`` that are not in
    ``allowed`` (what admission saw, and the dependencies the controller creates), sorted."""
    found: set[Reference] = set()
    for obj in objects:
        if obj.get("kind") in ("TrainingRuntime", "TrainJob"):
            found |= references(obj)
    return sorted(found - allowed)


def describe(refs: Iterable[Reference]) -> str:
    return ", ".join(f"{kind} {name}" for kind, name in refs)


def refusal(kind: str, refs: Iterable[Reference]) -> str:
    """The message a refused object carries: what, and why nothing was run."""
    return (
        f"The {kind}'s pods would use {describe(refs)}, which admission did not check against the author's rights: "
        "such references are accepted only in the pod templates of TrainingRuntime dependencies and of "
        "runtimePatches (volumes, projected sources, env valueFrom, envFrom, serviceAccountName), never through "
        "spec.overrides or other fields; no pod was created"
    )
