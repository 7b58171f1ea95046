"""From the flags of a ``run`` command to a run plan, and from the plan to the exit code.

``certification_plan`` and ``workloadrun_plan`` check the flags (exit 2 before anything touches a
cluster) and build the :class:`~nvcre.runtime.ops.run.RunPlan`; :func:`execute` hands it to
:func:`nvcre.runtime.ops.run.execute_run` with this command line's streams: the report of a run
that ended on stdout whatever the verdict (``--nvcre-streams``: where NVCRE prints it), progress,
messages and the partial report of an unfinished wait on stderr. Exit codes: 0 PASSED, 1 FAILED, 2 invalid input, 3 the wait
timed out, 130 interrupted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from . import common
from .output import EXIT_FAILURE, fail_invalid

from .progress import progress_view
from .reporting import ReportFiles, run_report_files

#: The most a password read from stdin may be (a token of a few KiB at most).
MAX_PASSWORD_CHARS = 8192


def dependencies_missing(missing: Any) -> typer.Exit:
    """Say which parts of Kubeflow Trainer and JobSet are missing and how to install them; exit 1."""
    from nvcre.runtime.ops.install import TRAINER_INSTALL

    for component in missing:
        sys.stderr.write(f"missing: {component.name}: {component.detail}\n")
    sys.stderr.write(TRAINER_INSTALL + "\n")
    return typer.Exit(EXIT_FAILURE)


def _timestamp_name() -> str:
    return "nvcrectl-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def registry_credentials(registry: str | None, username: str | None, password: str | None) -> Any:
    values = [registry, username, password]
    if not any(values):
        return None
    if not all(values):
        raise fail_invalid(
            "--workload-registry, --workload-registry-username, and --workload-registry-password must all be set together and non-empty"
        )
    if password == "-":
        password = sys.stdin.readline(MAX_PASSWORD_CHARS + 1).rstrip("\r\n")
        if not password or len(password) > MAX_PASSWORD_CHARS:
            raise fail_invalid(
                f"--workload-registry-password -: stdin gave no password on its first line (or one over {MAX_PASSWORD_CHARS} characters)"
            )
    from nvcre.runtime.ops.submit import Registry

    return Registry(str(registry), str(username), str(password))


def wait_budget(timeout: str) -> float:
    """``--timeout`` in seconds; exit 2 unless it is a Go duration of at least 1s."""
    from nvcre.compiler.durations import parse_duration

    try:
        budget = parse_duration(timeout)
    except ValueError as exc:
        raise fail_invalid(f"--timeout: {exc}") from None
    if budget < 1:
        raise fail_invalid(f"--timeout must be at least 1s when --wait is set, got {timeout}")
    return budget


def load_run_file(path: Path, kind: str) -> dict[str, Any]:
    """The one document of a run file; exit 2 when it is not of ``kind``."""
    from nvcre.compiler.diagnostics import CompileError, error

    document = common.load_single(path)
    if document.get("kind") != kind:
        raise CompileError([error("WrongKind", f"{path}: kind", f"expected kind {kind}, got {document.get('kind')!r}")])
    return document


def require_valid(document: dict[str, Any]) -> None:
    """Exit 2 with every error the API validation finds in a run object."""
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, errors_in

    problems = errors_in(validate(document))
    if problems:
        raise CompileError(problems)


def check_setup_flags(*, setup: bool, image: str | None, controller_pull_secret: str | None, cleanup: bool, wait: bool) -> None:
    """The flags that only make sense together (exit 2 before anything touches a cluster)."""
    if image and not setup:
        raise fail_invalid("--image requires --setup: it is the controller image setup installs")
    if controller_pull_secret and not setup:
        raise fail_invalid("--controller-pull-secret requires --setup: it is the controller's image pull Secret")
    if cleanup and not wait:
        raise fail_invalid("--cleanup requires --wait: without it the run would be deleted as soon as it was submitted")


#: What a plan builder gives: the plan, the report files, and what to say once submitted.
Prepared = tuple[Any, ReportFiles, Callable[[Any], None] | None]


def _files(v: dict[str, Any]) -> ReportFiles:
    return run_report_files(v["results_file"], v["junit"], v["evidence"], v["sign_key"], v["wait"])


def _plan(document: dict[str, Any], v: dict[str, Any], creds: Any, budget: float, derived: bool, **extra: Any) -> Any:
    from nvcre.runtime.ops.run import RunPlan

    if v["nvcre_streams"] and not v["wait"]:
        raise fail_invalid("--nvcre-streams requires --wait: only a run that is waited for prints a report")
    return RunPlan(
        document=document,
        grant_run_access=v["grant_run_access"],
        registry=creds,
        wait=v["wait"],
        budget=budget,
        derived=derived,
        setup=v["setup"],
        image=v["image"],
        controller_pull_secret=v["controller_pull_secret"],
        cleanup=v["cleanup"],
        nvcre_streams=v["nvcre_streams"],
        **extra,
    )


def _load_cert_file(path: Path, namespace: str | None, generated: str) -> dict[str, Any]:
    document = load_run_file(path, "Certification")
    require_valid(document)
    meta = document.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace or generated
    return document


def _run_flags(v: dict[str, Any]) -> Any:
    from nvcre.compiler.compose import RunFlags

    return RunFlags(
        categories=tuple(v["category"] or ()),
        nodes_per_job=v["nodes_per_job"],
        placement=v["placement"],
        gpus_per_node=v["gpus_per_node"],
        enable_checkpoint=v["enable_checkpoint"],
        enable_mnnvl=v["enable_mnnvl"],
        max_steps=v["max_steps"],
        exit_duration_mins=v["exit_duration_mins"],
        startup_stall_timeout_seconds=v["startup_stall_timeout_seconds"] or 0,
        repeat_count=v["repeat_count"],
        max_restarts=v["max_restarts"],
        storage_class=v["storage_class"],
    )


def certification_plan(v: dict[str, Any]) -> Prepared:
    """``certification run``: compose the Certification from ``--category`` (or read ``--cert-file``)."""
    from nvcre.compiler import compose
    from nvcre.compiler.catalog import load_catalog

    categories, cert_file, timeout = list(v["category"] or ()), v["cert_file"], v["timeout"]
    files = _files(v)
    budget = wait_budget(timeout) if v["wait"] and timeout is not None else None
    if cert_file is not None and categories:
        raise fail_invalid("--cert-file and --category are mutually exclusive")
    creds = registry_credentials(v["workload_registry"], v["workload_registry_username"], v["workload_registry_password"])
    if cert_file is not None and v["startup_stall_timeout_seconds"] is not None:
        raise fail_invalid("--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML")
    check_setup_flags(
        setup=v["setup"], image=v["image"], controller_pull_secret=v["controller_pull_secret"], cleanup=v["cleanup"], wait=v["wait"]
    )

    catalog = load_catalog()
    generated = _timestamp_name()
    if cert_file is not None:
        document = _load_cert_file(cert_file, v["namespace"], generated)
    else:
        document = compose.compose_certification(v["name"] or generated, v["namespace"] or generated, _run_flags(v), catalog)
    derived = budget is None
    if budget is None:
        budget, derived = compose.derived_wait_seconds(document, catalog)

    def submitted(result: Any) -> None:
        sys.stderr.write("Categories:\n")
        for cat in document["spec"]["categories"]:
            sys.stderr.write(f"  - {cat['domain']}/{cat['variant']}\n")

    return _plan(document, v, creds, budget, derived), files, submitted


def workloadrun_plan(v: dict[str, Any]) -> Prepared:
    """``workloadrun run``: read the file, apply ``--name``/``-n`` and NVCRE's target flags."""
    from nvcre.runtime.ops.run_target import TargetFlags, apply_offline, check_flags, resolve_on_cluster

    budget = wait_budget(v["timeout"]) if v["wait"] else 0.0
    creds = registry_credentials(v["workload_registry"], v["workload_registry_username"], v["workload_registry_password"])
    check_setup_flags(
        setup=v["setup"], image=v["image"], controller_pull_secret=v["controller_pull_secret"], cleanup=v["cleanup"], wait=v["wait"]
    )
    target = TargetFlags(v["node_list"] or "", v["topology_domain"] or "", v["topology_key"] or "", v["test_scale"] or "")
    check_flags(target)
    document = load_run_file(v["file"], "WorkloadRun")
    meta = document.setdefault("metadata", {})
    if v["name"]:
        meta["name"] = v["name"]
    meta["namespace"] = v["namespace"] or meta.get("namespace") or "default"
    apply_offline(document, target)
    require_valid(document)
    files = _files(v)

    def shape(kube: Any, say: Callable[[str], None]) -> None:
        resolve_on_cluster(kube, document, target, say)
        require_valid(document)

    extra = {"timeout_text": v["timeout"], "before_submit": shape if target.needs_cluster else None}
    return _plan(document, v, creds, budget, False, **extra), files, None


def execute(prepared: Prepared, kubeconfig: Path | None, context: str | None) -> None:
    """Carry out the plan on the cluster the kubeconfig names; exit with its code unless 0."""
    from nvcre.runtime.ops.run import RunOutput, execute_run

    plan, files, on_submitted = prepared
    output = RunOutput(
        err=lambda text: sys.stderr.write(text),
        out=lambda text: sys.stdout.write(text),
        progress=progress_view,
        write_files=files.write,
        write_evidence=files.write_evidence,
    )
    code = execute_run(common.kube_client(kubeconfig, context), plan, output, on_submitted=on_submitted)
    if code:
        raise typer.Exit(code)
