"""``nvcrectl certification run | report | status | delete``: the operator's day on a live cluster.

``run`` composes (or reads) a Certification, optionally installs the controller first
(``--setup``), creates its namespace and the controller's access there, submits it and, with
``--wait``, shows progress on stderr until it ends, then prints the report. ``--cleanup`` then
deletes what the run made (the run object, a namespace it created, with ``--setup`` the install),
on every way out. ``report`` prints the same report later. Exit codes: 0 PASSED, 1 FAILED (or
still running for ``report``), 2 invalid input, 3 the wait timed out, 130 interrupted. Ctrl-C
stops waiting and, without ``--cleanup``, never deletes the run; with ``--setup`` or
``--cleanup`` SIGTERM is handled the same way, so the cleanup still runs.

Everything heavy (the compiler, the Kubernetes client, rich) is imported inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from . import common
from .common import ContextOption, KubeconfigOption, NamespaceOption
from .output import EXIT_FAILURE, guarded, stderr_lines
from .reporting import (
    EvidenceOption,
    OutputOption,
    ReportFiles,
    ReportFormat,
    SignKeyOption,
    report_runs,
    run_not_found,
    run_report_files,
)
from .running import (
    RunPlan,
    check_setup_flags,
    execute,
    load_run_file,
    registry_credentials,
    require_valid,
    run_certification,
    wait_budget,
)


RunResultsFileOption = Annotated[Path | None, typer.Option("--results-file", help="With --wait: write the JSON report here.")]
RunJunitOption = Annotated[Path | None, typer.Option("--junit", help="With --wait: write the report as JUnit XML here.")]
JunitOption = Annotated[Path | None, typer.Option("--junit", help="Also write the report as JUnit XML here.")]
WorkloadRegistryOption = Annotated[str | None, typer.Option("--workload-registry")]
WorkloadRegistryUsernameOption = Annotated[str | None, typer.Option("--workload-registry-username")]
WorkloadRegistryPasswordOption = Annotated[
    str | None,
    typer.Option(
        "--workload-registry-password",
        envvar="NVCRE_WORKLOAD_REGISTRY_PASSWORD",
        show_envvar=True,
        help="Registry password: '-' reads it from the first line of stdin; the environment variable keeps it out of "
        "the process list and shell history, where a value given here is visible.",
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


def register(app: typer.Typer) -> None:
    """Mount ``run``, ``report``, ``status`` and ``delete`` on the ``certification`` group."""
    app.command("run")(run_command)
    app.command("report")(report_command)
    app.command("status")(status_command)
    app.command("delete")(delete_command)


@guarded
def run_command(
    category: Annotated[list[str] | None, typer.Option("--category", help="domain/variant; repeatable, comma-separated allowed.")] = None,
    cert_file: Annotated[Path | None, typer.Option("--cert-file", help="A Certification YAML (instead of --category).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Certification name (default nvcrectl-<timestamp>).")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Run namespace (default: a new nvcrectl-<timestamp>).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Watch to the end, then print the report.")] = False,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="With --wait: how long to wait (Go duration); derived from the categories when omitted.")
    ] = None,
    results_file: RunResultsFileOption = None,
    junit: RunJunitOption = None,
    evidence: EvidenceOption = None,
    sign_key: SignKeyOption = None,
    nodes_per_job: Annotated[int, typer.Option("--nodes-per-job", help="0 = automatic.")] = 0,
    placement: Annotated[str, typer.Option("--placement", help="Pinned (default) or Unpinned.")] = "",
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="0 = from the GPU architecture.")] = 0,
    enable_checkpoint: Annotated[bool | None, typer.Option("--enable-checkpoint/--no-enable-checkpoint")] = None,
    enable_mnnvl: Annotated[bool | None, typer.Option("--enable-mnnvl/--no-enable-mnnvl")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps")] = 0,
    exit_duration_mins: Annotated[int, typer.Option("--exit-duration-mins")] = 0,
    startup_stall_timeout_seconds: Annotated[int | None, typer.Option("--startup-stall-timeout-seconds")] = None,
    repeat_count: Annotated[int, typer.Option("--repeat-count")] = 0,
    max_restarts: Annotated[int, typer.Option("--max-restarts")] = 0,
    storage_class: Annotated[str, typer.Option("--storage-class")] = "",
    workload_registry: WorkloadRegistryOption = None,
    workload_registry_username: WorkloadRegistryUsernameOption = None,
    workload_registry_password: WorkloadRegistryPasswordOption = None,
    grant_run_access: GrantRunAccessOption = False,
    setup: SetupOption = False,
    image: ImageOption = None,
    controller_pull_secret: ControllerPullSecretOption = None,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="With --wait: afterwards delete the Certification, the namespace this run created and, with --setup, the installed components.",
        ),
    ] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Run catalog categories (or a Certification file) on the cluster."""
    from nvcre.compiler.compose import RunFlags

    flags = RunFlags(
        categories=tuple(category or ()),
        nodes_per_job=nodes_per_job,
        placement=placement,
        gpus_per_node=gpus_per_node,
        enable_checkpoint=enable_checkpoint,
        enable_mnnvl=enable_mnnvl,
        max_steps=max_steps,
        exit_duration_mins=exit_duration_mins,
        startup_stall_timeout_seconds=startup_stall_timeout_seconds or 0,
        repeat_count=repeat_count,
        max_restarts=max_restarts,
        storage_class=storage_class,
    )
    run_certification(
        categories=list(category or ()),
        cert_file=cert_file,
        name=name,
        namespace=namespace,
        wait=wait,
        timeout=timeout,
        files=run_report_files(results_file, junit, evidence, sign_key, wait),
        flags=flags,
        stall_changed=startup_stall_timeout_seconds is not None,
        registry=(workload_registry, workload_registry_username, workload_registry_password),
        grant_run_access=grant_run_access,
        cleanup=cleanup,
        kubeconfig=kubeconfig,
        context=context,
        setup=setup,
        image=image,
        controller_pull_secret=controller_pull_secret,
    )


@guarded
def report_command(
    names: Annotated[list[str], typer.Argument(help="Certification name(s).")],
    namespace: NamespaceOption = "default",
    output: OutputOption = ReportFormat.text,
    results_file: Annotated[Path | None, typer.Option("--results-file", help="Also write the JSON report here.")] = None,
    junit: JunitOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print a Certification's report; exit 0 only when every one PASSED."""
    report_runs("Certification", names, namespace, output, ReportFiles(results_file, junit), kubeconfig, context)


@guarded
def status_command(
    name: Annotated[str, typer.Argument(help="Certification name.")],
    namespace: NamespaceOption = "default",
    output: OutputOption = ReportFormat.text,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """One line per category: its phase and reason."""
    status_of("Certification", name, namespace, output, kubeconfig, context)


def status_of(kind: str, name: str, namespace: str, output: ReportFormat, kubeconfig: Path | None, context: str | None) -> None:
    from nvcre.runtime.ops.collect import RunNotFound, phase_of
    from nvcre.runtime.ops.submit import resource_for_kind

    kube = common.kube_client(kubeconfig, context)
    from nvcre.runtime.kube.errors import NotFound

    try:
        run = kube.get(resource_for_kind(kind), name, namespace)
    except NotFound:
        raise run_not_found(kube, RunNotFound(kind, name, namespace), kind, name, namespace) from None
    status = run.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    phase = phase_of(run)
    reason = (conditions.get(phase) or {}).get("reason", "")
    message = (conditions.get(phase) or {}).get("message", "")
    rows = [
        {
            "category": f"{c.get('domain')}/{c.get('variant')}",
            "status": c.get("status"),
            "workflow": (c.get("workflowRef") or {}).get("name", ""),
        }
        for c in status.get("categoryStatuses") or []
    ]
    if output is ReportFormat.json:
        answer = {
            "name": name,
            "namespace": namespace,
            "status": phase,
            "phase": phase,
            "reason": reason,
            "message": message,
            "categories": rows,
        }
        if kind == "WorkloadRun" and phase == "Failed":
            from nvcre.runtime.ops import queries

            failed = list(queries.verdict_of(kube, kind, name, namespace).failed_node_names)
            if failed:
                answer["failedNodes"] = failed
        sys.stdout.write(json.dumps(answer, indent=2, sort_keys=True) + "\n")
        return
    if kind == "WorkloadRun":
        sys.stdout.write(f"{phase}\n")  # NVCRE's one word, for scripts
        return
    sys.stdout.write(f"{kind} {namespace}/{name}: {phase}" + (f" ({reason}: {message})" if reason else "") + "\n")
    for row in rows:
        sys.stdout.write(f"  {row['category']:<40} {row['status']:<12} {row['workflow']}\n")


@guarded
def delete_command(
    name: Annotated[str, typer.Argument(help="Certification name.")],
    namespace: NamespaceOption = "default",
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until its workloads are gone.")] = True,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete a Certification; the controller removes its Workflows, Jobs and TrainJobs first."""
    from nvcre.runtime.ops.submit import delete_object

    kube = common.kube_client(kubeconfig, context)
    gone = delete_object(kube, "Certification", name, namespace, wait=wait, say=stderr_lines())
    if not gone:
        raise typer.Exit(EXIT_FAILURE)


# ------------------------------------------------------------------ workloadrun


def register_workloadrun(app: typer.Typer) -> None:
    """Mount ``run``, ``report``, ``status`` and ``cancel`` on the ``workloadrun`` group."""
    app.command("run")(workloadrun_run_command)
    app.command("report")(workloadrun_report_command)
    app.command("status")(workloadrun_status_command)
    app.command("cancel")(workloadrun_cancel_command)


@guarded
def workloadrun_run_command(
    file: Annotated[Path, typer.Argument(help="A WorkloadRun YAML.")],
    name: Annotated[str | None, typer.Option("--name", help="Overrides metadata.name.")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Default: metadata.namespace, else default.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Watch to the end, then print the report.")] = False,
    timeout: Annotated[str, typer.Option("--timeout", help="With --wait: how long to wait (Go duration).")] = "30m",
    results_file: RunResultsFileOption = None,
    junit: RunJunitOption = None,
    evidence: EvidenceOption = None,
    sign_key: SignKeyOption = None,
    workload_registry: WorkloadRegistryOption = None,
    workload_registry_username: WorkloadRegistryUsernameOption = None,
    workload_registry_password: WorkloadRegistryPasswordOption = None,
    grant_run_access: GrantRunAccessOption = False,
    setup: SetupOption = False,
    image: ImageOption = None,
    controller_pull_secret: ControllerPullSecretOption = None,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="With --wait: afterwards delete the WorkloadRun, the namespace this run created and, with --setup, the installed components.",
        ),
    ] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Submit a WorkloadRun and optionally wait for its verdict."""
    budget = wait_budget(timeout) if wait else 0.0
    creds = registry_credentials(workload_registry, workload_registry_username, workload_registry_password)
    check_setup_flags(setup=setup, image=image, controller_pull_secret=controller_pull_secret, cleanup=cleanup, wait=wait)
    document = load_run_file(file, "WorkloadRun")
    meta = document.setdefault("metadata", {})
    if name:
        meta["name"] = name
    meta["namespace"] = namespace or meta.get("namespace") or "default"
    require_valid(document)

    plan = RunPlan(
        document=document,
        grant_run_access=grant_run_access,
        registry=creds,
        wait=wait,
        budget=budget,
        derived=False,
        files=run_report_files(results_file, junit, evidence, sign_key, wait),
        setup=setup,
        image=image,
        controller_pull_secret=controller_pull_secret,
        cleanup=cleanup,
        timeout_text=timeout,
    )
    execute(plan, kubeconfig, context)


@guarded
def workloadrun_report_command(
    name: Annotated[str, typer.Argument(help="WorkloadRun name.")],
    namespace: NamespaceOption = "default",
    output: OutputOption = ReportFormat.text,
    results_file: Annotated[Path | None, typer.Option("--results-file")] = None,
    junit: JunitOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print a WorkloadRun's report; exit 0 only when it PASSED."""
    report_runs("WorkloadRun", [name], namespace, output, ReportFiles(results_file, junit), kubeconfig, context)


@guarded
def workloadrun_status_command(
    name: Annotated[str, typer.Argument(help="WorkloadRun name.")],
    namespace: NamespaceOption = "default",
    output: OutputOption = ReportFormat.text,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print Pending, InProgress, Succeeded or Failed (one word, as NVCRE); -o json adds reason and failed nodes."""
    status_of("WorkloadRun", name, namespace, output, kubeconfig, context)


@guarded
def workloadrun_cancel_command(
    names: Annotated[list[str], typer.Argument(help="WorkloadRun name(s).")],
    namespace: NamespaceOption = "default",
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete WorkloadRuns; the controller removes their workloads first."""
    from nvcre.runtime.kube.errors import ApiError, NotFound
    from nvcre.runtime.ops.submit import resource_for_kind

    kube = common.kube_client(kubeconfig, context)
    failed = False
    for run_name in names:
        try:
            kube.delete(resource_for_kind("WorkloadRun"), run_name, namespace)
            sys.stdout.write(f"Cancelled {run_name}\n")
        except NotFound:
            sys.stderr.write(f'WorkloadRun "{run_name}" not found in namespace "{namespace}"\n')
        except ApiError as exc:
            sys.stderr.write(f'Failed to cancel "{run_name}": {exc}\n')
            failed = True
    if failed:
        raise typer.Exit(EXIT_FAILURE)
