"""``nvcrectl certification run | report | status | delete | diagnose``: the operator's day on a live cluster.

``run`` composes (or reads) a Certification, optionally installs the controller first
(``--setup``), creates its namespace and the controller's access there, submits it and, with
``--wait``, shows progress on stderr until it ends, then prints the report. ``--cleanup`` then
deletes what the run made (the run object, a namespace it created, with ``--setup`` the install),
on every way out. ``report`` prints the same report later; ``diagnose`` prints the Certification
that diagnoses a failed category, starting from the groups that failed. Exit codes: 0 PASSED, 1 FAILED (or
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
from .reporting import OutputOption, ReportFiles, ReportFormat, report_runs, run_not_found
from .run_command import run_command_for


JunitOption = Annotated[Path | None, typer.Option("--junit", help="Also write the report as JUnit XML here.")]


def register(app: typer.Typer) -> None:
    """Mount ``run``, ``report``, ``status``, ``delete`` and ``diagnose`` on the ``certification`` group."""
    app.command("run")(run_command_for("Certification"))
    app.command("report")(report_command)
    app.command("status")(status_command)
    app.command("delete")(delete_command)
    app.command("diagnose")(diagnose_command)


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


@guarded
def diagnose_command(
    name: Annotated[str, typer.Argument(help="The failed Certification.")],
    namespace: NamespaceOption = "default",
    category: Annotated[
        str | None, typer.Option("--category", help="domain/variant of the failed category (needed when several failed).")
    ] = None,
    new_name: Annotated[str | None, typer.Option("--name", help="Name of the diagnose Certification (default <name>-diagnose).")] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print the diagnose Certification that follows a failed category, its failed groups as the prior.

    Only groups whose failure implicates their nodes (hardware, measurement, the workload failing on
    them) are in the prior; each one left out is named on stderr with the reason. Apply it with
    ``kubectl apply -f -`` or save it for ``certification run --cert-file``."""
    from nvcre.compiler.compose_diagnose import compose
    from nvcre.compiler.emit import dump_yaml
    from nvcre.runtime.ops.collect import RunNotFound, collect_run

    kube = common.kube_client(kubeconfig, context)
    try:
        got = collect_run(kube, "Certification", name, namespace)
    except RunNotFound as exc:
        raise run_not_found(kube, exc, "Certification", name, namespace) from None
    composed = compose(got.run, got.workflows, jobs=got.jobs, failed_nodes=got.failed_nodes, category=category, name=new_name)
    for line in composed.left_out:
        sys.stderr.write(f"note: left out of the prior: group {line}; no node is implicated\n")
    sys.stdout.write(dump_yaml(composed.document))


# ------------------------------------------------------------------ workloadrun


def register_workloadrun(app: typer.Typer) -> None:
    """Mount ``run``, ``report``, ``status`` and ``cancel`` on the ``workloadrun`` group."""
    app.command("run")(run_command_for("WorkloadRun"))
    app.command("report")(workloadrun_report_command)
    app.command("status")(workloadrun_status_command)
    app.command("cancel")(workloadrun_cancel_command)


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
