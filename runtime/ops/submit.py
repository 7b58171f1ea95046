"""Submit a run: its namespace, the controller's access there, a pull Secret, then the run object.

The order follows what a user can undo: nothing is created in a namespace that existed before
unless the controller can work there; the run object is created last, so a failure earlier leaves
no half-started run. Progress lines go to a callback (the CLI prints them on stderr); secret values
never reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nvcre.compiler import compose
from nvcre.compiler.vocabulary import RUN_BINDING, RUN_ROLE

from ..kube.client import Kube
from ..kube.errors import AlreadyExists, ApiError, Forbidden, NotFound
from ..kube.resources import CERTIFICATIONS, WORKFLOWS, WORKLOADRUNS, Resource
from .install.ownership import is_ours

__all__ = [
    "AccessMissing",
    "Registry",
    "SecretTaken",
    "SubmitResult",
    "delete_object",
    "delete_run",
    "rbac_scope",
    "resource_for_kind",
    "submit_run",
]

Say = Callable[[str], object]
_NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
_SECRETS = Resource("", "v1", "secrets", "Secret")
_ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
_CLUSTERROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False)


class SecretTaken(Exception):
    """A Secret with the pull Secret's name exists and nvcrectl did not create it: it is left alone."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f"Secret {namespace}/{name} already exists and was not created by nvcrectl; it was left untouched and "
            "nothing was submitted. Choose another run name (--name), or delete that Secret if it is not needed"
        )


class AccessMissing(Exception):
    """The controller may not write in an existing namespace and the user did not grant it."""

    def __init__(self, namespace: str, binding: Mapping[str, Any]) -> None:
        self.namespace = namespace
        self.binding = dict(binding)
        super().__init__(
            f"the nvcre controller has no write access in namespace {namespace!r} (rbac.scope: namespaced). "
            "Run in a namespace nvcrectl creates (omit -n), pass --grant-run-access, or apply this RoleBinding "
            "first (nvcrectl rbac print --namespace " + namespace + ")"
        )


@dataclass(frozen=True)
class Registry:
    """A workload registry and its credentials (``--workload-registry*``)."""

    server: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class SubmitResult:
    """What a submission created; the CLI's cleanup undoes exactly this."""

    name: str
    namespace: str
    kind: str
    created_namespace: bool
    created_binding: bool
    pull_secret: str | None
    object: dict[str, Any]


def rbac_scope(kube: Kube) -> str:
    """``cluster`` when a ClusterRoleBinding grants the run role everywhere, else ``namespaced``."""
    try:
        bindings = kube.list(_CLUSTERROLEBINDINGS).items
    except (Forbidden, NotFound):
        return "namespaced"
    for binding in bindings:
        role = binding.get("roleRef") or {}
        if role.get("kind") == "ClusterRole" and role.get("name") == RUN_ROLE:
            return "cluster"
    return "namespaced"


def _ensure_namespace(kube: Kube, namespace: str) -> bool:
    """Create the namespace if absent; True when this call created it."""
    try:
        kube.get(_NAMESPACES, namespace)
        return False
    except NotFound:
        pass
    try:
        kube.create(compose.run_namespace(namespace))
        return True
    except AlreadyExists:
        return False


def submit_run(
    kube: Kube,
    document: Mapping[str, Any],
    *,
    grant_run_access: bool = False,
    registry: Registry | None = None,
    say: Say = lambda line: None,
) -> SubmitResult:
    """Create the namespace if needed, grant access, add a pull Secret, create the run object."""
    meta = document.get("metadata") or {}
    name, namespace, kind = str(meta["name"]), str(meta["namespace"]), str(document["kind"])

    created_namespace = _ensure_namespace(kube, namespace)
    created_binding = False
    if rbac_scope(kube) == "namespaced":
        binding = compose.run_access_binding(namespace)
        try:
            kube.get(_ROLEBINDINGS, RUN_BINDING, namespace)
        except NotFound:
            if not (created_namespace or grant_run_access):
                raise AccessMissing(namespace, binding) from None
            kube.create(binding)
            created_binding = True
            if not created_namespace:
                say(
                    f"Granted the nvcre controller write access in namespace {namespace} "
                    f"(RoleBinding {RUN_BINDING}); it stays after the run."
                )

    secret_name = None
    submitted = dict(document)
    if registry is not None:
        secret = compose.registry_pull_secret(name, namespace, registry.server, registry.username, registry.password)
        secret_name = compose.pull_secret_name(name)
        try:
            kube.create(secret)
        except AlreadyExists:
            # an earlier run of the same name made it (it carries our label): renew it; else leave it
            try:
                ours = is_ours(kube, secret) is True
            except ApiError:  # not readable by this user: not known to be ours
                ours = False
            if not ours:
                raise SecretTaken(namespace, secret_name) from None
            kube.replace(_SECRETS, secret)
        say(f'Created image pull secret "{secret_name}" in namespace {namespace}.')
        spec = dict(submitted.get("spec") or {})
        secrets = [s for s in spec.get("imagePullSecrets") or [] if s.get("name") != secret_name]
        spec["imagePullSecrets"] = [*secrets, {"name": secret_name}]
        submitted["spec"] = spec

    live = kube.create(submitted)
    if secret_name is not None:
        owned = compose.owned_by(kube.get(_SECRETS, secret_name, namespace), live)
        kube.replace(_SECRETS, owned)
    say(f"{kind} {name} created in namespace {namespace}.")
    return SubmitResult(name, namespace, kind, created_namespace, created_binding, secret_name, live)


def resource_for_kind(kind: str) -> Resource:
    """The resource of a run kind (Certification or WorkloadRun)."""
    return CERTIFICATIONS if kind == "Certification" else WORKLOADRUNS


def delete_object(
    kube: Kube,
    kind: str,
    name: str,
    namespace: str,
    *,
    wait: bool = True,
    timeout: float = 300.0,
    say: Say = lambda line: None,
) -> bool:
    """Delete a run object; with ``wait``, until the API server no longer has it (finalizers done)."""
    resource = resource_for_kind(kind)
    try:
        live = kube.get(resource, name, namespace)
    except NotFound:
        say(f'{kind} "{name}" not found in namespace "{namespace}"')
        return False
    kube.delete(resource, name, namespace, uid=(live.get("metadata") or {}).get("uid"))
    say(f"Deleting {kind.lower()} {name}...")
    if not wait:
        return True
    if _wait_gone(kube, resource, name, namespace, timeout, 2.0):
        say(f"{kind} {name} deleted.")
        return True
    say("Timed out waiting for deletion.")
    return False


def _wait_gone(kube: Kube, resource: Resource, name: str, namespace: str | None, timeout: float, poll: float) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.get(resource, name, namespace)
        except NotFound:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def delete_run(
    kube: Kube,
    result: SubmitResult,
    *,
    say: Say = lambda line: None,
    timeout: float = 300.0,
    poll: float = 2.0,
) -> list[str]:
    """Undo a submission and wait for each step: the run object (its finalizer frees the workloads
    first), a RoleBinding granted in an existing namespace once the run is gone, then the
    namespace if this submission created it. Returns the warnings; it never raises an ApiError."""
    warnings: list[str] = []
    kind = result.kind.lower()
    resource = resource_for_kind(result.kind)
    run_gone = False
    say(f"Deleting {kind}...")
    try:
        live = kube.get(resource, result.name, result.namespace)
        kube.delete(resource, result.name, result.namespace, uid=(live.get("metadata") or {}).get("uid"))
        run_gone = _wait_gone(kube, resource, result.name, result.namespace, timeout, poll)
        if run_gone and result.kind == "WorkloadRun":  # its Workflow carries the same name
            run_gone = _wait_gone(kube, WORKFLOWS, result.name, result.namespace, timeout, poll)
        if not run_gone:
            say("Timed out waiting for deletion.")
            warnings.append(f"{kind} {result.name} still present after {timeout:.0f}s")
    except NotFound:
        run_gone = True
    except ApiError as exc:  # cleanup reports and goes on
        say(f"Warning: failed to delete {kind} {result.name}: {exc}")
        warnings.append(str(exc))
    if result.created_binding and not result.created_namespace:
        if run_gone:
            say(f"Deleting RoleBinding {RUN_BINDING} in namespace {result.namespace}...")
            try:
                kube.delete(_ROLEBINDINGS, RUN_BINDING, result.namespace)
            except NotFound:
                pass
            except ApiError as exc:
                say(f"Warning: failed to delete RoleBinding {RUN_BINDING}: {exc}")
                warnings.append(str(exc))
        else:
            say(f"Warning: RoleBinding {RUN_BINDING} kept in namespace {result.namespace}: the {kind} is not gone")
            warnings.append("run binding kept")
    if result.created_namespace:
        say(f"Deleting namespace {result.namespace}...")
        try:
            kube.delete(_NAMESPACES, result.namespace)
            if not _wait_gone(kube, _NAMESPACES, result.namespace, None, timeout, poll):
                say("Timed out waiting for deletion.")
                warnings.append(f"namespace {result.namespace} still terminating after {timeout:.0f}s")
        except NotFound:
            pass
        except ApiError as exc:
            say(f"Warning: failed to delete namespace {result.namespace}: {exc}")
            warnings.append(str(exc))
    return warnings
