"""From the typed options of a ``run`` command to a run plan, and from the plan to the exit code.

``certification_plan`` and ``workloadrun_plan`` check the :class:`~nvcre.cli.run_options.RunOptions`
and the kind's choice (exit 2 before anything touches a cluster) and build the
:class:`~nvcre.runtime.ops.run.RunPlan`; :func:`execute` hands it to
:func:`nvcre.runtime.ops.run.execute_run` with this command line's streams: the report of a run
that ended on stdout whatever the verdict (``--nvcre-streams``: where NVCRE prints it), progress,
messages and the partial report of an unfinished wait on stderr. Exit codes: 0 PASSED, 1 FAILED, 2 invalid input, 3 the wait
timed out, 130 interrupted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from . import common
from .output import EXIT_FAILURE, fail_invalid
from .progress import progress_view
from .reporting import ReportFiles, run_report_files
from .run_options import CertificationChoice, RunOptions, WorkloadRunChoice

if TYPE_CHECKING:
    from nvcre.compiler.compose import RunFlags
    from nvcre.runtime.evidence.of_run import EvidenceRequest
    from nvcre.runtime.ops.run import RunPlan
    from nvcre.runtime.ops.submit import Registry

#: The most a password read from stdin may be (a token of a few KiB at most).
MAX_PASSWORD_CHARS = 8192


def dependencies_missing(missing: Iterable[Any]) -> typer.Exit:
    """Say which parts of Kubeflow Trainer and JobSet are missing and how to install them; exit 1."""
    from nvcre.runtime.ops.install.deps import TRAINER_INSTALL

    for component in missing:
        sys.stderr.write(f"missing: {component.name}: {component.detail}\n")
    sys.stderr.write(TRAINER_INSTALL + "\n")
    return typer.Exit(EXIT_FAILURE)


def _timestamp_name() -> str:
    return "nvcrectl-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def registry_credentials(registry: str | None, username: str | None, password: str | None) -> Registry | None:
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

    document: dict[str, Any] = common.load_single(path)
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


@dataclass(frozen=True)
class Prepared:
    """What a plan builder gives: the plan, the report files, and what to say once it is submitted."""

    plan: RunPlan
    files: ReportFiles
    on_submitted: Callable[[Any], None] | None = None


def _plan(document: dict[str, Any], options: RunOptions, creds: Registry | None, budget: float, derived: bool, **extra: Any) -> RunPlan:
    from nvcre.runtime.ops.run import RunPlan

    if options.nvcre_streams and not options.wait:
        raise fail_invalid("--nvcre-streams requires --wait: only a run that is waited for prints a report")
    return RunPlan(
        document=document,
        grant_run_access=options.grant_run_access,
        registry=creds,
        wait=options.wait,
        budget=budget,
        derived=derived,
        setup=options.setup,
        image=options.image,
        controller_pull_secret=options.controller_pull_secret,
        cleanup=options.cleanup,
        nvcre_streams=options.nvcre_streams,
        **extra,
    )


def _files(options: RunOptions) -> ReportFiles:
    return run_report_files(options.results_file, options.junit, options.evidence, options.sign_key, options.wait)


def _evidence(files: ReportFiles) -> EvidenceRequest | None:
    """The plan's evidence request (the bundle directory and signer ``--evidence``/``--sign-key`` gave)."""
    from nvcre.runtime.evidence.of_run import EvidenceRequest

    return None if files.evidence is None else EvidenceRequest(files.evidence, files.signer)


def _registry(options: RunOptions) -> Registry | None:
    return registry_credentials(options.workload_registry, options.workload_registry_username, options.workload_registry_password)


def _check_setup_flags(options: RunOptions) -> None:
    check_setup_flags(
        setup=options.setup,
        image=options.image,
        controller_pull_secret=options.controller_pull_secret,
        cleanup=options.cleanup,
        wait=options.wait,
    )


def _load_cert_file(path: Path, namespace: str | None, generated: str) -> dict[str, Any]:
    document = load_run_file(path, "Certification")
    require_valid(document)
    meta = document.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace or generated
    return document


def _run_flags(choice: CertificationChoice) -> RunFlags:
    from nvcre.compiler.compose import RunFlags

    return RunFlags(
        categories=choice.categories,
        nodes_per_job=choice.nodes_per_job,
        placement=choice.placement,
        gpus_per_node=choice.gpus_per_node,
        enable_checkpoint=choice.enable_checkpoint,
        enable_mnnvl=choice.enable_mnnvl,
        max_steps=choice.max_steps,
        exit_duration_mins=choice.exit_duration_mins,
        startup_stall_timeout_seconds=choice.startup_stall_timeout_seconds or 0,
        repeat_count=choice.repeat_count,
        max_restarts=choice.max_restarts,
        storage_class=choice.storage_class,
    )


def certification_plan(options: RunOptions, choice: CertificationChoice) -> Prepared:
    """``certification run``: compose the Certification from ``--category`` (or read ``--cert-file``)."""
    from nvcre.compiler import compose
    from nvcre.compiler.catalog import load_catalog

    files = _files(options)
    budget = wait_budget(options.timeout) if options.wait and options.timeout is not None else None
    if choice.cert_file is not None and choice.categories:
        raise fail_invalid("--cert-file and --category are mutually exclusive")
    creds = _registry(options)
    if choice.cert_file is not None and choice.startup_stall_timeout_seconds is not None:
        raise fail_invalid("--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML")
    _check_setup_flags(options)

    catalog = load_catalog()
    generated = _timestamp_name()
    if choice.cert_file is not None:
        document = _load_cert_file(choice.cert_file, options.namespace, generated)
    else:
        document = compose.compose_certification(options.name or generated, options.namespace or generated, _run_flags(choice), catalog)
    derived = budget is None
    if budget is None:
        budget, derived = compose.derived_wait_seconds(document, catalog)

    def submitted(result: Any) -> None:
        sys.stderr.write("Categories:\n")
        for cat in document["spec"]["categories"]:
            sys.stderr.write(f"  - {cat['domain']}/{cat['variant']}\n")

    plan = _plan(document, options, creds, budget, derived, evidence=_evidence(files))
    return Prepared(plan, files, submitted)


def workloadrun_plan(options: RunOptions, choice: WorkloadRunChoice) -> Prepared:
    """``workloadrun run``: read the file, apply ``--name``/``-n`` and NVCRE's target flags."""
    from nvcre.runtime.kube.client import Kube
    from nvcre.runtime.ops.run_target import TargetFlags, apply_offline, check_flags, resolve_on_cluster

    timeout = options.timeout or ""
    budget = wait_budget(timeout) if options.wait else 0.0
    creds = _registry(options)
    _check_setup_flags(options)
    target = TargetFlags(choice.node_list, choice.topology_domain, choice.topology_key, choice.test_scale)
    check_flags(target)
    document = load_run_file(choice.file, "WorkloadRun")
    meta = document.setdefault("metadata", {})
    if options.name:
        meta["name"] = options.name
    meta["namespace"] = options.namespace or meta.get("namespace") or "default"
    apply_offline(document, target)
    require_valid(document)
    files = _files(options)

    def shape(kube: Kube, say: Callable[[str], None]) -> None:
        resolve_on_cluster(kube, document, target, say)
        require_valid(document)

    before_submit = shape if target.needs_cluster else None
    plan = _plan(document, options, creds, budget, False, timeout_text=timeout, before_submit=before_submit, evidence=_evidence(files))
    return Prepared(plan, files)


def execute(prepared: Prepared, kubeconfig: Path | None, context: str | None) -> None:
    """Carry out the plan on the cluster the kubeconfig names; exit with its code unless 0."""
    from nvcre.runtime.ops.run import RunOutput, execute_run

    output = RunOutput(
        err=lambda text: sys.stderr.write(text),
        out=lambda text: sys.stdout.write(text),
        progress=progress_view,
        write_files=prepared.files.write,
    )
    code = execute_run(common.kube_client(kubeconfig, context), prepared.plan, output, on_submitted=prepared.on_submitted)
    if code:
        raise typer.Exit(code)
