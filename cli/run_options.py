"""The options of the two ``run`` commands as types: the flags they share, and what each kind adds.

``certification run`` and ``workloadrun run`` declare their parameters with the ``Annotated``
aliases below and pack them into frozen values: :class:`RunOptions` (waiting, the report files,
the workload registry, ``--setup``, ``--cleanup``, the cluster), :class:`CertificationChoice`
(which categories, with which run flags) and :class:`WorkloadRunChoice` (the file and NVCRE's
target flags). :mod:`nvcre.cli.running` turns them into a run plan. Nothing here checks a value
or touches a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from .common import ContextOption, KubeconfigOption
from .reporting import EvidenceOption, SignKeyOption

__all__ = [
    "CertificationChoice",
    "ContextOption",
    "ControllerPullSecretOption",
    "EvidenceOption",
    "GrantRunAccessOption",
    "ImageOption",
    "JunitOption",
    "KubeconfigOption",
    "NvcreStreamsOption",
    "ResultsFileOption",
    "RunOptions",
    "SetupOption",
    "SignKeyOption",
    "WaitOption",
    "WorkloadRegistryOption",
    "WorkloadRegistryPasswordOption",
    "WorkloadRegistryUsernameOption",
    "WorkloadRunChoice",
    "cleanup_help",
]

# ------------------------------------------------------------------ the flags both run commands take

WaitOption = Annotated[bool, typer.Option("--wait", help="Watch to the end, then print the report.")]
NvcreStreamsOption = Annotated[
    bool,
    typer.Option(
        "--nvcre-streams",
        help="With --wait: print the report where NVCRE's nvcrectl does (stdout only for a passed Certification, "
        "otherwise stderr) instead of stdout whatever the verdict.",
    ),
]
ResultsFileOption = Annotated[Path | None, typer.Option("--results-file", help="With --wait: write the JSON report here.")]
JunitOption = Annotated[Path | None, typer.Option("--junit", help="With --wait: write the report as JUnit XML here.")]
WorkloadRegistryOption = Annotated[str | None, typer.Option("--workload-registry")]
WorkloadRegistryUsernameOption = Annotated[str | None, typer.Option("--workload-registry-username")]
WorkloadRegistryPasswordOption = Annotated[
    str | None,
    typer.Option(
        "--workload-registry-password",
        help="Registry password: '-' reads it from the first line of stdin; the environment variable keeps it out of "
        "the process list and shell history, where a value given here is visible.",
        envvar="NVCRE_WORKLOAD_REGISTRY_PASSWORD",
        show_envvar=True,
    ),
]
GrantRunAccessOption = Annotated[
    bool, typer.Option("--grant-run-access", help="Grant the controller write access in an existing namespace.")
]
SetupOption = Annotated[bool, typer.Option("--setup", help="Run `setup init --auto-approve` first (idempotent).")]
ImageOption = Annotated[str | None, typer.Option("--image", help="With --setup: the controller image (repo:tag or repo@sha256:...).")]
ControllerPullSecretOption = Annotated[
    str | None,
    typer.Option("--controller-pull-secret", help="With --setup: an image pull Secret in the controller's namespace for its image."),
]


def cleanup_help(kind: str) -> str:
    """The help of ``--cleanup``, which names the run kind it deletes."""
    return f"With --wait: afterwards delete the {kind}, the namespace this run created and, with --setup, the installed components."


@dataclass(frozen=True)
class RunOptions:
    """What both run commands were told, as typed values (checked later, by :mod:`nvcre.cli.running`)."""

    name: str | None = None
    namespace: str | None = None
    wait: bool = False
    timeout: str | None = None
    nvcre_streams: bool = False
    results_file: Path | None = None
    junit: Path | None = None
    evidence: Path | None = None
    sign_key: Path | None = None
    workload_registry: str | None = None
    workload_registry_username: str | None = None
    workload_registry_password: str | None = None
    grant_run_access: bool = False
    setup: bool = False
    image: str | None = None
    controller_pull_secret: str | None = None
    cleanup: bool = False
    kubeconfig: Path | None = None
    context: str | None = None


@dataclass(frozen=True)
class CertificationChoice:
    """What ``certification run`` runs: catalog categories (with the run flags) or a Certification file."""

    categories: tuple[str, ...] = ()
    cert_file: Path | None = None
    nodes_per_job: int = 0
    placement: str = ""
    gpus_per_node: int = 0
    enable_checkpoint: bool | None = None
    enable_mnnvl: bool | None = None
    max_steps: int = 0
    exit_duration_mins: int = 0
    #: None when the flag was not given (it may not be given with ``--cert-file``)
    startup_stall_timeout_seconds: int | None = None
    repeat_count: int = 0
    max_restarts: int = 0
    storage_class: str = ""


@dataclass(frozen=True)
class WorkloadRunChoice:
    """What ``workloadrun run`` runs: its file, and NVCRE's target flags (empty when not given)."""

    file: Path
    node_list: str = ""
    topology_domain: str = ""
    topology_key: str = ""
    test_scale: str = ""
