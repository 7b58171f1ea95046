"""One factory for the ``run`` command of both run kinds: ``certification run`` and ``workloadrun run``.

:func:`run_command_for` builds the command from the options the two kinds share (waiting, the
report files, the workload registry, ``--setup``, ``--cleanup``, the cluster) and those of its own
kind (what to run, and how long to wait by default). Its one body hands the parsed values to the
kind's plan builder in :mod:`.running` and the plan to the runtime; nothing here touches a cluster.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import ContextOption, KubeconfigOption
from .output import guarded
from .reporting import EvidenceOption, SignKeyOption

__all__ = ["run_command_for"]


def _option(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _opt(flags: tuple[str, ...], kind: Any, help_text: str | None = None, **extra: Any) -> Any:
    return Annotated[kind, typer.Option(*flags, help=help_text, **extra)]


_WAIT = _option("wait", _opt(("--wait",), bool, "Watch to the end, then print the report."), False)
_NVCRE_STREAMS = _option(
    "nvcre_streams",
    _opt(
        ("--nvcre-streams",),
        bool,
        "With --wait: print the report where NVCRE's nvcrectl does (stdout only for a passed Certification, "
        "otherwise stderr) instead of stdout whatever the verdict.",
    ),
    False,
)
_REPORT_FILES = (
    _option("results_file", _opt(("--results-file",), Path | None, "With --wait: write the JSON report here.")),
    _option("junit", _opt(("--junit",), Path | None, "With --wait: write the report as JUnit XML here.")),
    _option("evidence", EvidenceOption),
    _option("sign_key", SignKeyOption),
)
_REGISTRY_AND_SETUP = (
    _option("workload_registry", _opt(("--workload-registry",), str | None)),
    _option("workload_registry_username", _opt(("--workload-registry-username",), str | None)),
    _option(
        "workload_registry_password",
        _opt(
            ("--workload-registry-password",),
            str | None,
            "Registry password: '-' reads it from the first line of stdin; the environment variable keeps it out of "
            "the process list and shell history, where a value given here is visible.",
            envvar="NVCRE_WORKLOAD_REGISTRY_PASSWORD",
            show_envvar=True,
        ),
    ),
    _option("grant_run_access", _opt(("--grant-run-access",), bool, "Grant the controller write access in an existing namespace."), False),
    _option("setup", _opt(("--setup",), bool, "Run `setup init --auto-approve` first (idempotent)."), False),
    _option("image", _opt(("--image",), str | None, "With --setup: the controller image (repo:tag or repo@sha256:...).")),
    _option(
        "controller_pull_secret",
        _opt(("--controller-pull-secret",), str | None, "With --setup: an image pull Secret in the controller's namespace for its image."),
    ),
)
_CLUSTER = (_option("kubeconfig", KubeconfigOption), _option("context", ContextOption))


def _cleanup(kind: str) -> inspect.Parameter:
    text = f"With --wait: afterwards delete the {kind}, the namespace this run created and, with --setup, the installed components."
    return _option("cleanup", _opt(("--cleanup",), bool, text), False)


_CERTIFICATION_HEAD = (
    _option("category", _opt(("--category",), list[str] | None, "domain/variant; repeatable, comma-separated allowed.")),
    _option("cert_file", _opt(("--cert-file",), Path | None, "A Certification YAML (instead of --category).")),
    _option("name", _opt(("--name",), str | None, "Certification name (default nvcrectl-<timestamp>).")),
    _option("namespace", _opt(("--namespace", "-n"), str | None, "Run namespace (default: a new nvcrectl-<timestamp>).")),
)
_CERTIFICATION_TIMEOUT = _option(
    "timeout",
    _opt(("--timeout",), str | None, "With --wait: how long to wait (Go duration); derived from the categories when omitted."),
)
_CERTIFICATION_OPTIONS = (
    _option("nodes_per_job", _opt(("--nodes-per-job",), int, "0 = automatic."), 0),
    _option("placement", _opt(("--placement",), str, "Pinned (default) or Unpinned."), ""),
    _option("gpus_per_node", _opt(("--gpus-per-node",), int, "0 = from the GPU architecture."), 0),
    _option("enable_checkpoint", _opt(("--enable-checkpoint/--no-enable-checkpoint",), bool | None)),
    _option("enable_mnnvl", _opt(("--enable-mnnvl/--no-enable-mnnvl",), bool | None)),
    _option("max_steps", _opt(("--max-steps",), int), 0),
    _option("exit_duration_mins", _opt(("--exit-duration-mins",), int), 0),
    _option("startup_stall_timeout_seconds", _opt(("--startup-stall-timeout-seconds",), int | None)),
    _option("repeat_count", _opt(("--repeat-count",), int), 0),
    _option("max_restarts", _opt(("--max-restarts",), int), 0),
    _option("storage_class", _opt(("--storage-class",), str), ""),
)

_WORKLOADRUN_HEAD = (
    inspect.Parameter(
        "file",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Annotated[Path, typer.Argument(help="A WorkloadRun YAML.")],
    ),
    _option("name", _opt(("--name",), str | None, "Overrides metadata.name.")),
    _option("namespace", _opt(("--namespace", "-n"), str | None, "Default: metadata.namespace, else default.")),
)
_WORKLOADRUN_TIMEOUT = _option("timeout", _opt(("--timeout",), str, "With --wait: how long to wait (Go duration)."), "30m")
_WORKLOADRUN_OPTIONS = (
    _option(
        "node_list",
        _opt(("--node-list",), str | None, "Comma-separated node names (sets spec.target.nodeNames; numNodes is lowered to fit)."),
    ),
    _option(
        "topology_domain",
        _opt(
            ("--topology-domain",),
            str | None,
            "Run on the nodes of this topology domain only (a '<key> In domain' requirement in spec.target.matchExpressions).",
        ),
    ),
    _option(
        "topology_key",
        _opt(("--topology-key",), str | None, "The node label of --topology-domain (default: the detected platform's topology label)."),
    ),
    _option(
        "test_scale", _opt(("--test-scale",), str | None, "Override spec.orchestration.testScale: intra-node, intra-rack or full-scale.")
    ),
)


@dataclass(frozen=True)
class _Kind:
    """What a run kind adds to the shared options, and how its values become a plan."""

    head: tuple[inspect.Parameter, ...]
    timeout: inspect.Parameter
    options: tuple[inspect.Parameter, ...]
    plan: str  # the builder's name in .running (looked up when the command runs)
    doc: str


_KINDS = {
    "Certification": _Kind(
        _CERTIFICATION_HEAD,
        _CERTIFICATION_TIMEOUT,
        _CERTIFICATION_OPTIONS,
        "certification_plan",
        "Run catalog categories (or a Certification file) on the cluster.",
    ),
    "WorkloadRun": _Kind(
        _WORKLOADRUN_HEAD,
        _WORKLOADRUN_TIMEOUT,
        _WORKLOADRUN_OPTIONS,
        "workloadrun_plan",
        "Submit a WorkloadRun and optionally wait for its verdict.",
    ),
}


def run_command_for(kind: str) -> Callable[..., None]:
    """The ``run`` command of one run kind (Certification or WorkloadRun), ready to mount."""
    spec = _KINDS[kind]
    parameters = [
        *spec.head,
        _WAIT,
        spec.timeout,
        _NVCRE_STREAMS,
        *_REPORT_FILES,
        *spec.options,
        *_REGISTRY_AND_SETUP,
        _cleanup(kind),
        *_CLUSTER,
    ]

    def run(*args: Any, **values: Any) -> None:
        from . import running

        bound = signature.bind(*args, **values)
        bound.apply_defaults()
        options = dict(bound.arguments)
        prepared = getattr(running, spec.plan)(options)
        running.execute(prepared, options["kubeconfig"], options["context"])

    signature = inspect.Signature(parameters, return_annotation=None)
    run.__signature__ = signature  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    run.__doc__ = spec.doc
    run.__name__ = run.__qualname__ = f"{kind.lower()}_run_command"
    return guarded(run)
