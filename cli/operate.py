"""``nvcrectl certification run | report | status | delete``: the operator's day on a live cluster.

``run`` composes (or reads) a Certification, creates its namespace and the controller's access
there, submits it and, with ``--wait``, shows progress on stderr until it ends, then prints the
report. ``report`` prints the same report later. Exit codes: 0 PASSED, 1 FAILED (or still running
for ``report``), 2 invalid input, 3 the wait timed out, 130 interrupted. Ctrl-C stops waiting and
never deletes the run.

Everything heavy (the compiler, the Kubernetes client, rich) is imported inside the commands.
"""

from __future__ import annotations

import json
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import EXIT_FAILURE, EXIT_INVALID, guarded

EXIT_TIMEOUT = 3

KubeconfigOption = Annotated[Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: the usual loading rules).")]
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


def _fail_invalid(message: str) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(EXIT_INVALID)


def kube_client(kubeconfig: Path | str | None, context: str | None) -> Any:
    """A client for the cluster the kubeconfig names; exit 1 with a clear line when there is none."""
    from nvcre.runtime.kube.client import ApiServerClient

    try:
        return ApiServerClient.from_kubeconfig(str(kubeconfig) if kubeconfig else None, context=context)
    except Exception as exc:  # noqa: BLE001 - no kubeconfig, bad context, unreadable file: one clear line
        sys.stderr.write(f"error: cannot load cluster credentials: {exc}\n")
        raise typer.Exit(EXIT_FAILURE) from None


def _timestamp_name() -> str:
    return "nvcrectl-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def _elapsed(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


# ------------------------------------------------------------------ report


def build_verdict(kube: Any, kind: str, name: str, namespace: str) -> Any:
    """Collect a run's objects and judge them (the one verdict model)."""
    from nvcre.runtime.ops.queries import verdict_of

    return verdict_of(kube, kind, name, namespace)


def render_report(verdicts: list[Any], output: ReportFormat) -> str:
    from nvcre.runtime.report import json as report_json
    from nvcre.runtime.report import text as report_text

    if output is ReportFormat.json:
        data = [report_json.to_dict(v) for v in verdicts]
        return json.dumps(data[0] if len(data) == 1 else data, indent=2, sort_keys=True) + "\n"
    return "\n".join(report_text.render(v) for v in verdicts)


def write_results(path: Path, verdicts: list[Any]) -> None:
    from nvcre.runtime.report import json as report_json

    data = [report_json.to_dict(v) for v in verdicts]
    try:
        path.write_text(json.dumps(data[0] if len(data) == 1 else data, indent=2, sort_keys=True) + "\n")
        sys.stderr.write(f"Results written to {path}\n")
    except OSError as exc:
        sys.stderr.write(f"Warning: failed to write results file {path}: {exc}\n")


def _wrong_namespace_hint(kube: Any, kind: str, name: str, namespace: str) -> str:
    from nvcre.runtime.ops.submit import resource_for_kind

    if namespace != "default":
        return ""
    try:
        found = kube.list(resource_for_kind(kind), None, field_selector=f"metadata.name={name}").items
    except Exception:  # noqa: BLE001 - the hint is a courtesy; a failed list just omits it
        return ""
    spaces = sorted({str(o["metadata"]["namespace"]) for o in found})
    if not spaces:
        return ""
    return (
        f"\n{kind} {name!r} exists in namespace(s) {', '.join(spaces)}; `certification run` creates its own "
        f"namespace, so pass -n {spaces[0]}"
    )


def report_runs(kind: str, names: list[str], namespace: str, output: ReportFormat, results_file: Path | None,
                kubeconfig: Path | None, context: str | None) -> None:
    from nvcre.runtime.ops.collect import RunNotFound

    kube = kube_client(kubeconfig, context)
    verdicts = []
    for name in names:
        try:
            verdicts.append(build_verdict(kube, kind, name, namespace))
        except RunNotFound as exc:
            sys.stderr.write(f"error: {exc}{_wrong_namespace_hint(kube, kind, name, namespace)}\n")
            raise typer.Exit(EXIT_FAILURE) from None
    sys.stdout.write(render_report(verdicts, output))
    if results_file is not None:
        write_results(results_file, verdicts)
    problems = []
    for name, verdict in zip(names, verdicts):
        result = verdict_result(verdict)
        if result == "FAILED":
            problems.append(f'{kind.lower()} "{name}" failed')
        elif result != "PASSED":
            problems.append(f'{kind.lower()} "{name}" is still running')
    if problems:
        sys.stderr.write("error: " + "; ".join(problems) + "\n")
        raise typer.Exit(EXIT_FAILURE)


def verdict_result(verdict: Any) -> str:
    """PASSED, FAILED or IN PROGRESS as the verdict model says (INCOMPLETE counts as passed)."""
    result = str(getattr(verdict, "result", "") or "").upper()
    if result in ("PASSED", "INCOMPLETE"):
        return "PASSED"
    if result == "FAILED":
        return "FAILED"
    return "IN PROGRESS"


# ------------------------------------------------------------------ progress view


class _PlainProgress:
    """``[watch]`` lines on a non-terminal stderr: a line per change and a heartbeat every 15 s."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}
        self._beat = 0.0

    def __call__(self, progress: Any) -> None:
        changed = False
        for cat in progress.categories:
            if self._last.get(cat.label) != cat.status:
                self._last[cat.label] = cat.status
                sys.stderr.write(f"[watch] {cat.label}: {cat.status} ({_elapsed(progress.elapsed)})\n")
                changed = True
        if not changed and progress.elapsed - self._beat >= 15:
            self._beat = progress.elapsed
            running = [c for c in progress.categories if c.status == "InProgress"]
            if not progress.categories:
                sys.stderr.write(f"[watch] Waiting for status... ({_elapsed(progress.elapsed)})\n")
            for cat in running:
                sys.stderr.write(
                    f"[watch] {cat.label}: {cat.status} ({_elapsed(progress.elapsed)}; jobs running "
                    f"{progress.jobs_running}, blocked {progress.jobs_blocked}, done {progress.jobs_done})\n"
                )
        sys.stderr.flush()

    def close(self) -> None:
        pass


class _LiveProgress:
    """A rich live table on a terminal: categories, jobs, elapsed against the budget."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._live.start()

    def __call__(self, progress: Any) -> None:
        from rich.table import Table

        table = Table(title=f"{progress.phase} - {_elapsed(progress.elapsed)} of {_elapsed(progress.budget)}")
        table.add_column("category")
        table.add_column("status")
        for cat in progress.categories:
            table.add_row(cat.label, cat.status)
        table.caption = (
            f"jobs: {progress.jobs_running} running, {progress.jobs_blocked} blocked, "
            f"{progress.jobs_done} done ({progress.jobs_failed} failed)"
        )
        self._live.update(table)

    def close(self) -> None:
        self._live.stop()


def progress_view() -> Any:
    return _LiveProgress() if sys.stderr.isatty() else _PlainProgress()


# ------------------------------------------------------------------ run


def _registry(registry: str | None, username: str | None, password: str | None) -> Any:
    values = [registry, username, password]
    if not any(values):
        return None
    if not all(values):
        raise _fail_invalid(
            "--workload-registry, --workload-registry-username, and --workload-registry-password must all be set "
            "together and non-empty"
        )
    from nvcre.runtime.ops.submit import Registry

    return Registry(str(registry), str(username), str(password))


def _load_cert_file(path: Path, namespace: str | None, generated: str) -> dict[str, Any]:
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, errors_in

    from .certification import load_single

    document = load_single(path)
    if document.get("kind") != "Certification":
        from nvcre.compiler.diagnostics import error

        raise CompileError([error("WrongKind", f"{path}: kind", f"expected kind Certification, got {document.get('kind')!r}")])
    problems = errors_in(validate(document))
    if problems:
        raise CompileError(problems)
    meta = document.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace or generated
    return document


def run_certification(
    *,
    categories: list[str],
    cert_file: Path | None,
    name: str | None,
    namespace: str | None,
    wait: bool,
    timeout: str | None,
    results_file: Path | None,
    flags: Any,
    stall_changed: bool,
    registry: tuple[str | None, str | None, str | None],
    grant_run_access: bool,
    cleanup: bool,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    from nvcre.compiler import compose
    from nvcre.compiler.catalog import load_catalog

    budget = None
    if wait and timeout is not None:
        try:
            budget = compose.parse_duration(timeout)
        except ValueError as exc:
            raise _fail_invalid(f"--timeout: {exc}") from None
        if budget < 1:
            raise _fail_invalid(f"--timeout must be at least 1s when --wait is set, got {timeout}")
    if cert_file is not None and categories:
        raise _fail_invalid("--cert-file and --category are mutually exclusive")
    creds = _registry(*registry)
    if cert_file is not None and stall_changed:
        raise _fail_invalid("--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML")

    catalog = load_catalog()
    generated = _timestamp_name()
    if cert_file is not None:
        document = _load_cert_file(cert_file, namespace, generated)
    else:
        document = compose.compose_certification(name or generated, namespace or generated, flags, catalog)
    if budget is None:
        budget, derived = compose.derived_wait_seconds(document, catalog)
    else:
        derived = False

    kube = kube_client(kubeconfig, context)
    result = _submit(kube, document, grant_run_access, creds)
    sys.stderr.write("Categories:\n")
    for cat in document["spec"]["categories"]:
        sys.stderr.write(f"  - {cat['domain']}/{cat['variant']}\n")
    if not wait:
        sys.stderr.write(f"\nTo check status:\n  kubectl get certification {result.name} -n {result.namespace}\n")
        return
    try:
        code = _wait_and_report("Certification", result.name, result.namespace, budget, derived, results_file, kube)
    finally:
        if cleanup:
            _cleanup(kube, result)
    if code:
        raise typer.Exit(code)


def _submit(kube: Any, document: dict[str, Any], grant_run_access: bool, creds: Any) -> Any:
    """Submit the run; without the controller's access in an existing namespace, print the
    RoleBinding to create on stdout and exit 1."""
    from nvcre.runtime.ops.submit import AccessMissing, submit_run

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")

    try:
        return submit_run(kube, document, grant_run_access=grant_run_access, registry=creds, say=say)
    except AccessMissing as exc:
        from nvcre.compiler.emit import dump_yaml

        sys.stderr.write(f"error: {exc}\n")
        sys.stdout.write(dump_yaml(exc.binding))
        raise typer.Exit(EXIT_FAILURE) from None


def _wait_and_report(kind: str, name: str, namespace: str, budget: float, derived: bool, results_file: Path | None,
                     kube: Any) -> int:
    from nvcre.compiler.compose import format_duration
    from nvcre.runtime.ops.wait import wait_for_run

    sys.stderr.write("\n")
    if derived:
        sys.stderr.write(f"Waiting up to {format_duration(budget)} (derived from category timeouts; pass --timeout to override).\n")
    sys.stderr.write(f"[watch] Watching {kind.lower()} progress...\n")
    view = progress_view()
    try:
        outcome = wait_for_run(kube, kind, name, namespace, timeout=budget, on_progress=view)
    except KeyboardInterrupt:
        view.close()
        sys.stderr.write(
            f"interrupted: the {kind.lower()} keeps running in namespace {namespace}; "
            f"print its report with: nvcrectl {kind.lower()} report {name} -n {namespace}\n"
        )
        return 130
    view.close()
    if outcome.result == "gone":
        sys.stderr.write(f'{kind} "{name}" no longer exists; no report is available.\n')
        return EXIT_FAILURE
    verdict = build_verdict(kube, kind, name, namespace)
    report = render_report([verdict], ReportFormat.text)
    result = verdict_result(verdict)
    if outcome.result == "timeout":
        sys.stderr.write(f"error: {kind.lower()} did not complete within {_elapsed(budget)} (ran for {_elapsed(outcome.elapsed)})\n")
        sys.stderr.write(report)
        if results_file is not None:
            write_results(results_file, [verdict])
        sys.stderr.write(
            f"The {kind.lower()} is still running in namespace {namespace}.\nMonitor its progress:\n"
            f"  kubectl get {kind.lower()} {name} -n {namespace} --watch\n"
            "Print an updated report (exits nonzero while still running):\n"
            f"  nvcrectl {kind.lower()} report {name} -n {namespace}\n"
            + (f"Stop it:\n  nvcrectl workloadrun cancel {name} -n {namespace}\n" if kind == "WorkloadRun"
               else f"Stop it:\n  kubectl delete {kind.lower()} {name} -n {namespace}\n")
        )
        return EXIT_TIMEOUT
    if result == "PASSED":
        sys.stderr.write(f"[watch] {kind} succeeded. ({_elapsed(outcome.elapsed)})\n")
        (sys.stderr if kind == "WorkloadRun" else sys.stdout).write(report)
        code = 0
    else:
        sys.stderr.write(f"[watch] {kind} failed. ({_elapsed(outcome.elapsed)})\n")
        failed = sorted({n.name for n in getattr(verdict, "failed_nodes", ())})
        if failed:
            sys.stderr.write("Failed nodes: " + ", ".join(failed) + "\n")
        sys.stderr.write(report)
        code = EXIT_FAILURE
    if results_file is not None:
        write_results(results_file, [verdict])
    return code


def _cleanup(kube: Any, result: Any) -> None:
    from nvcre.runtime.ops.submit import delete_run

    sys.stderr.write("[cleanup] Cleaning up...\n")
    warnings = delete_run(kube, result, say=lambda line: sys.stderr.write(f"[cleanup] {line}\n"))
    sys.stderr.write("[cleanup] Done (with warnings).\n" if warnings else "[cleanup] Done.\n")


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
    timeout: Annotated[str | None, typer.Option("--timeout", help="With --wait: how long to wait (Go duration); derived from the categories when omitted.")] = None,
    results_file: Annotated[Path | None, typer.Option("--results-file", help="With --wait: write the JSON report here.")] = None,
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
    workload_registry: Annotated[str | None, typer.Option("--workload-registry")] = None,
    workload_registry_username: Annotated[str | None, typer.Option("--workload-registry-username")] = None,
    workload_registry_password: Annotated[str | None, typer.Option("--workload-registry-password")] = None,
    grant_run_access: Annotated[bool, typer.Option("--grant-run-access", help="Grant the controller write access in an existing namespace.")] = False,
    cleanup: Annotated[bool, typer.Option("--cleanup", help="After --wait: delete the Certification and the namespace this run created.")] = False,
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
        results_file=results_file,
        flags=flags,
        stall_changed=startup_stall_timeout_seconds is not None,
        registry=(workload_registry, workload_registry_username, workload_registry_password),
        grant_run_access=grant_run_access,
        cleanup=cleanup,
        kubeconfig=kubeconfig,
        context=context,
    )


@guarded
def report_command(
    names: Annotated[list[str], typer.Argument(help="Certification name(s).")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    output: Annotated[ReportFormat, typer.Option("--output", "-o")] = ReportFormat.text,
    results_file: Annotated[Path | None, typer.Option("--results-file", help="Also write the JSON report here.")] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print a Certification's report; exit 0 only when every one PASSED."""
    report_runs("Certification", names, namespace, output, results_file, kubeconfig, context)


@guarded
def status_command(
    name: Annotated[str, typer.Argument(help="Certification name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    output: Annotated[ReportFormat, typer.Option("--output", "-o")] = ReportFormat.text,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """One line per category: its phase and reason."""
    status_of("Certification", name, namespace, output, kubeconfig, context)


def status_of(kind: str, name: str, namespace: str, output: ReportFormat, kubeconfig: Path | None, context: str | None) -> None:
    from nvcre.runtime.ops.collect import RunNotFound, phase_of
    from nvcre.runtime.ops.submit import resource_for_kind

    kube = kube_client(kubeconfig, context)
    from nvcre.runtime.kube.errors import NotFound

    try:
        run = kube.get(resource_for_kind(kind), name, namespace)
    except NotFound:
        err = RunNotFound(kind, name, namespace)
        sys.stderr.write(f"error: {err}{_wrong_namespace_hint(kube, kind, name, namespace)}\n")
        raise typer.Exit(EXIT_FAILURE) from None
    status = run.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    phase = phase_of(run)
    reason = (conditions.get(phase) or {}).get("reason", "")
    message = (conditions.get(phase) or {}).get("message", "")
    rows = [
        {"category": f"{c.get('domain')}/{c.get('variant')}", "status": c.get("status"),
         "workflow": (c.get("workflowRef") or {}).get("name", "")}
        for c in status.get("categoryStatuses") or []
    ]
    if output is ReportFormat.json:
        sys.stdout.write(json.dumps({"name": name, "namespace": namespace, "phase": phase, "reason": reason,
                                     "message": message, "categories": rows}, indent=2, sort_keys=True) + "\n")
        return
    sys.stdout.write(f"{kind} {namespace}/{name}: {phase}" + (f" ({reason}: {message})" if reason else "") + "\n")
    for row in rows:
        sys.stdout.write(f"  {row['category']:<40} {row['status']:<12} {row['workflow']}\n")


@guarded
def delete_command(
    name: Annotated[str, typer.Argument(help="Certification name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until its workloads are gone.")] = True,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete a Certification; the controller removes its Workflows, Jobs and TrainJobs first."""
    from nvcre.runtime.ops.submit import delete_object

    kube = kube_client(kubeconfig, context)
    gone = delete_object(kube, "Certification", name, namespace, wait=wait,
                         say=lambda line: sys.stderr.write(line + "\n"))
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
    wait: Annotated[bool, typer.Option("--wait", help="Watch to the end, then print the report (on stderr).")] = False,
    timeout: Annotated[str, typer.Option("--timeout", help="With --wait: how long to wait (Go duration).")] = "30m",
    results_file: Annotated[Path | None, typer.Option("--results-file", help="With --wait: write the JSON report here.")] = None,
    workload_registry: Annotated[str | None, typer.Option("--workload-registry")] = None,
    workload_registry_username: Annotated[str | None, typer.Option("--workload-registry-username")] = None,
    workload_registry_password: Annotated[str | None, typer.Option("--workload-registry-password")] = None,
    grant_run_access: Annotated[bool, typer.Option("--grant-run-access", help="Grant the controller write access in an existing namespace.")] = False,
    cleanup: Annotated[bool, typer.Option("--cleanup", help="After --wait: delete the WorkloadRun (and a namespace this run created).")] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Submit a WorkloadRun and optionally wait for its verdict."""
    from nvcre.compiler import compose
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, error, errors_in

    from .certification import load_single

    budget = 0.0
    if wait:
        try:
            budget = compose.parse_duration(timeout)
        except ValueError as exc:
            raise _fail_invalid(f"--timeout: {exc}") from None
        if budget < 1:
            raise _fail_invalid(f"--timeout must be at least 1s when --wait is set, got {timeout}")
    creds = _registry(workload_registry, workload_registry_username, workload_registry_password)
    document = load_single(file)
    if document.get("kind") != "WorkloadRun":
        raise CompileError([error("WrongKind", f"{file}: kind", f"expected kind WorkloadRun, got {document.get('kind')!r}")])
    meta = document.setdefault("metadata", {})
    if name:
        meta["name"] = name
    meta["namespace"] = namespace or meta.get("namespace") or "default"
    problems = errors_in(validate(document))
    if problems:
        raise CompileError(problems)

    kube = kube_client(kubeconfig, context)
    result = _submit(kube, document, grant_run_access, creds)
    if not wait:
        sys.stderr.write(f"\nTo check status:\n  kubectl get workloadrun {result.name} -n {result.namespace}\n")
        return
    sys.stderr.write(f"Waiting for completion (timeout: {timeout})...\n")
    try:
        code = _wait_and_report("WorkloadRun", result.name, result.namespace, budget, False, results_file, kube)
    finally:
        if cleanup:
            _cleanup(kube, result)
    if code:
        raise typer.Exit(code)


@guarded
def workloadrun_report_command(
    name: Annotated[str, typer.Argument(help="WorkloadRun name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    output: Annotated[ReportFormat, typer.Option("--output", "-o")] = ReportFormat.text,
    results_file: Annotated[Path | None, typer.Option("--results-file")] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print a WorkloadRun's report; exit 0 only when it PASSED."""
    report_runs("WorkloadRun", [name], namespace, output, results_file, kubeconfig, context)


@guarded
def workloadrun_status_command(
    name: Annotated[str, typer.Argument(help="WorkloadRun name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    output: Annotated[ReportFormat, typer.Option("--output", "-o")] = ReportFormat.text,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print Pending, InProgress, Succeeded or Failed."""
    status_of("WorkloadRun", name, namespace, output, kubeconfig, context)


@guarded
def workloadrun_cancel_command(
    names: Annotated[list[str], typer.Argument(help="WorkloadRun name(s).")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete WorkloadRuns; the controller removes their workloads first."""
    from nvcre.runtime.kube.errors import ApiError, NotFound
    from nvcre.runtime.ops.submit import resource_for_kind

    kube = kube_client(kubeconfig, context)
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
