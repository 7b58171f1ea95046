"""The commands over a run already submitted: ``report | status | delete | diagnose`` of a Certification, ``report | status | cancel`` of a WorkloadRun.

``report`` prints the report a ``run --wait`` prints, later; ``status`` one line per category
(one word for a WorkloadRun); ``delete``/``cancel`` remove the run, the controller removing its
workloads first; ``diagnose`` prints the Certification that diagnoses a failed category,
starting from the groups that failed. Exit codes: 0 PASSED (or done), 1 FAILED, still running
for ``report``, or not found, 2 invalid input. :data:`certification_app` and
:data:`workloadrun_app` hold them; :mod:`nvcre.cli.main` lists them in their groups.

Everything heavy (the compiler, the Kubernetes client) is imported inside the commands.
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

JunitOption = Annotated[Path | None, typer.Option("--junit", help="Also write the report as JUnit XML here.")]

#: ``certification report | status | delete | diagnose``
certification_app = typer.Typer()
#: ``workloadrun report | status | cancel``
workloadrun_app = typer.Typer()


@certification_app.command("report")
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


@certification_app.command("status")
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


@certification_app.command("delete")
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


@certification_app.command("diagnose")
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


@workloadrun_app.command("report")
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


@workloadrun_app.command("status")
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


@workloadrun_app.command("cancel")
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
