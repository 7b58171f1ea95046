"""Compose the Certification that ``nvcrectl certification run`` submits, and the wait budget.

``certification run --category ...`` turns command-line flags into a Certification document; this
module does that turn, purely: the caller supplies the name, namespace and flag values (the clock
that names a run lives in the CLI), and gets back a plain document or a :class:`CompileError`
listing every problem with the flag it came from. The same module derives how long ``--wait``
waits when ``--timeout`` is not given: for each category its effective ``timeoutPerJob`` times its
iterations, the largest of those times 1.5, and never less than 30 minutes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .catalog import Catalog
from .diagnostics import CompileError, Diagnostic, error
from .durations import parse_duration
from .vocabulary import API_VERSION, CONTROLLER_SERVICE_ACCOUNT, RUN_BINDING, RUN_ROLE

__all__ = [
    "MIN_WAIT_SECONDS",
    "RunFlags",
    "compose_certification",
    "derived_wait_seconds",
    "parse_categories",
]

#: ``--wait`` never waits less than this when the budget is derived from the categories.
MIN_WAIT_SECONDS = 30 * 60
_DIAGNOSE_TIMEOUT = "15m"
_DIAGNOSE_ITERATIONS = 5


@dataclass(frozen=True)
class RunFlags:
    """The ``certification run`` flags that shape the submitted Certification (0 / None = unset)."""

    categories: tuple[str, ...] = ()
    nodes_per_job: int = 0
    placement: str = ""
    gpus_per_node: int = 0
    enable_checkpoint: bool | None = None
    enable_mnnvl: bool | None = None
    max_steps: int = 0
    exit_duration_mins: int = 0
    startup_stall_timeout_seconds: int = 0
    repeat_count: int = 0
    max_restarts: int = 0
    storage_class: str = ""
    image_pull_secrets: tuple[str, ...] = field(default=())


def parse_categories(values: Sequence[str], catalog: Catalog) -> tuple[list[tuple[str, str]], list[Diagnostic]]:
    """``domain/variant`` words (repeatable, comma-separated allowed) checked against the catalog."""
    found: list[tuple[str, str]] = []
    diags: list[Diagnostic] = []
    known = sorted(entry.key for entry in catalog.entries)
    for index, raw in enumerate(word.strip() for value in values for word in value.split(",")):
        if not raw:
            continue
        path = f"--category[{index}]"
        domain, sep, variant = raw.partition("/")
        if not sep or not domain or not variant or "/" in variant:
            diags.append(error("InvalidCategory", path, f'invalid category format "{raw}": expected domain/variant'))
            continue
        if catalog.lookup(domain, variant) is None:
            listing = "\n".join(f"  {key}" for key in known)
            diags.append(error("CategoryNotFound", path, f'unknown category "{raw}"\n\nAvailable categories:\n{listing}'))
            continue
        if (domain, variant) not in found:
            found.append((domain, variant))
    return found, diags


# Long: checks every run flag and collects all errors before building the one Certification.
def compose_certification(name: str, namespace: str, flags: RunFlags, catalog: Catalog) -> dict[str, Any]:
    """The Certification ``certification run --category`` submits; raises :class:`CompileError`."""
    categories, diags = parse_categories(flags.categories, catalog)
    if not flags.categories:
        diags.append(
            error(
                "MissingCategory",
                "--category",
                "either --cert-file or at least one --category is required\n\n"
                "Use 'nvcrectl certification list-categories' to see available categories",
            )
        )
    if flags.placement not in ("", "Pinned", "Unpinned"):
        diags.append(error("InvalidPlacement", "--placement", f'--placement must be Pinned or Unpinned, got "{flags.placement}"'))
    if flags.placement == "Unpinned" and flags.nodes_per_job < 1:
        diags.append(
            error(
                "InvalidPlacement",
                "--placement",
                "--placement Unpinned requires --nodes-per-job: Unpinned runs exactly one job of the size you ask "
                "for and will not fall back to running across all matching nodes",
            )
        )
    if flags.startup_stall_timeout_seconds < 0:
        diags.append(
            error(
                "InvalidValue",
                "--startup-stall-timeout-seconds",
                f"--startup-stall-timeout-seconds must not be negative (got {flags.startup_stall_timeout_seconds}); "
                "use 0 for the catalog entry's default",
            )
        )
    for flag, value in (
        ("--nodes-per-job", flags.nodes_per_job),
        ("--gpus-per-node", flags.gpus_per_node),
        ("--max-steps", flags.max_steps),
        ("--exit-duration-mins", flags.exit_duration_mins),
        ("--repeat-count", flags.repeat_count),
        ("--max-restarts", flags.max_restarts),
    ):
        if value < 0:
            diags.append(error("InvalidValue", flag, f"{flag} must not be negative (got {value})"))
    if diags:
        raise CompileError(diags)

    spec: dict[str, Any] = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}
    for key, value in (
        ("nodesPerJob", flags.nodes_per_job),
        ("gpusPerNode", flags.gpus_per_node),
        ("maxSteps", flags.max_steps),
        ("exitDurationMins", flags.exit_duration_mins),
        ("startupStallTimeoutSeconds", flags.startup_stall_timeout_seconds),
        ("repeatCount", flags.repeat_count),
        ("maxRestarts", flags.max_restarts),
    ):
        if value > 0:
            spec[key] = value
    if flags.placement:
        spec["placement"] = flags.placement
    if flags.enable_checkpoint is not None:
        spec["enableCheckpoint"] = flags.enable_checkpoint
    if flags.enable_mnnvl is not None:
        spec["enableMNNVL"] = flags.enable_mnnvl
    if flags.storage_class:
        spec["storageClassName"] = flags.storage_class
    if flags.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": secret} for secret in flags.image_pull_secrets]
    spec["categories"] = [{"domain": domain, "variant": variant} for domain, variant in categories]
    return {
        "apiVersion": API_VERSION,
        "kind": "Certification",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "nvcre", "app.kubernetes.io/created-by": "nvcrectl"},
        },
        "spec": spec,
    }


def _option(spec: Mapping[str, Any], category: Mapping[str, Any], key: str) -> Any:
    options = category.get("options") or {}
    if options.get(key) is not None:
        return options[key]
    return spec.get(key)


def derived_wait_seconds(certification: Mapping[str, Any], catalog: Catalog) -> tuple[float, bool]:
    """How long ``--wait`` waits without ``--timeout``: ``(seconds, derived)``.

    ``derived`` is False when the 30-minute floor won (the CLI then prints no "derived" note).
    Unknown categories are skipped here; submission reports them.
    """
    spec = certification.get("spec") or {}
    longest = 0.0
    for category in spec.get("categories") or []:
        entry = catalog.lookup(str(category.get("domain")), str(category.get("variant")))
        if entry is None:
            continue
        diagnose = _option(spec, category, "testScale") == "diagnose"
        timeout = _option(spec, category, "timeoutPerJob") or (_DIAGNOSE_TIMEOUT if diagnose else entry.timeout_per_job)
        repeat = _option(spec, category, "repeatCount")
        iterations = int(repeat) if isinstance(repeat, int) and repeat > 0 else (_DIAGNOSE_ITERATIONS if diagnose else 1)
        longest = max(longest, parse_duration(str(timeout)) * max(iterations, 1))
    budget = longest * 1.5
    if budget <= MIN_WAIT_SECONDS:
        return float(MIN_WAIT_SECONDS), False
    return budget, True


#: Where ``setup init`` installs the controller (its ServiceAccount is the vocabulary's
#: ``CONTROLLER_SERVICE_ACCOUNT``).
CONTROLLER_NAMESPACE = "nvcre"


def run_namespace(name: str) -> dict[str, Any]:
    """The namespace ``certification run`` creates for one run."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}},
    }


def run_access_binding(
    namespace: str,
    *,
    controller_namespace: str = CONTROLLER_NAMESPACE,
    service_account: str = CONTROLLER_SERVICE_ACCOUNT,
    managed_by: str | None = "nvcrectl",
) -> dict[str, Any]:
    """The RoleBinding that grants the controller its write access in one run namespace."""
    metadata: dict[str, Any] = {"name": RUN_BINDING, "namespace": namespace}
    if managed_by:
        metadata["labels"] = {"app.kubernetes.io/managed-by": managed_by}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RUN_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": controller_namespace}],
    }


def pull_secret_name(certification: str) -> str:
    """The name of the pull Secret ``--workload-registry`` creates for a run."""
    return f"nvcrectl-pull-{certification}"[:253]


def registry_pull_secret(certification: str, namespace: str, registry: str, username: str, password: str) -> dict[str, Any]:
    """A ``kubernetes.io/dockerconfigjson`` Secret for the workload registry.

    The password only ever lives in this object's data; nothing here or in the callers prints it.
    """
    import base64
    import json

    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    config = {"auths": {registry: {"username": username, "password": password, "auth": auth}}}
    payload = base64.b64encode(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {
            "name": pull_secret_name(certification),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "nvcrectl"},
        },
        "data": {".dockerconfigjson": payload},
    }


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any], *, controller: bool = False) -> dict[str, Any]:
    """A copy of ``obj`` with an ownerReference to ``owner`` (a live object with a uid)."""
    import copy

    meta = owner.get("metadata") or {}
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    out = copy.deepcopy(dict(obj))
    refs = [r for r in out.setdefault("metadata", {}).get("ownerReferences") or [] if r.get("uid") != ref["uid"]]
    out["metadata"]["ownerReferences"] = [*refs, ref]
    return out
