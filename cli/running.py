"""Running a Certification or a WorkloadRun from the command line: compose, submit, wait, clean up.

``execute_run`` carries one :class:`RunPlan` through: the optional install (``--setup``), the
run's namespace and the controller's access there, the submission, the wait with its progress
view, the report and its files, and with ``--cleanup`` the removal of what the run made, on
every way out (Ctrl-C and, with ``--setup`` or ``--cleanup``, SIGTERM end the wait the same way).
Exit codes: 0 PASSED, 1 FAILED, 2 invalid input, 3 the wait timed out, 130 interrupted.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from . import common
from .output import EXIT_FAILURE, fail_invalid, stderr_lines

from .progress import elapsed_text, progress_view
from .reporting import ReportFiles, build_verdict, render_report, verdict_result, ReportFormat

EXIT_TIMEOUT = 3
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


def _load_cert_file(path: Path, namespace: str | None, generated: str) -> dict[str, Any]:
    document = load_run_file(path, "Certification")
    require_valid(document)
    meta = document.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace or generated
    return document


def check_setup_flags(*, setup: bool, image: str | None, controller_pull_secret: str | None, cleanup: bool, wait: bool) -> None:
    """The flags that only make sense together (exit 2 before anything touches a cluster)."""
    if image and not setup:
        raise fail_invalid("--image requires --setup: it is the controller image setup installs")
    if controller_pull_secret and not setup:
        raise fail_invalid("--controller-pull-secret requires --setup: it is the controller's image pull Secret")
    if cleanup and not wait:
        raise fail_invalid("--cleanup requires --wait: without it the run would be deleted as soon as it was submitted")


def run_certification(
    *,
    categories: list[str],
    cert_file: Path | None,
    name: str | None,
    namespace: str | None,
    wait: bool,
    timeout: str | None,
    files: ReportFiles,
    flags: Any,
    stall_changed: bool,
    registry: tuple[str | None, str | None, str | None],
    grant_run_access: bool,
    cleanup: bool,
    kubeconfig: Path | None,
    context: str | None,
    setup: bool = False,
    image: str | None = None,
    controller_pull_secret: str | None = None,
) -> None:
    from nvcre.compiler import compose
    from nvcre.compiler.catalog import load_catalog

    budget = wait_budget(timeout) if wait and timeout is not None else None
    if cert_file is not None and categories:
        raise fail_invalid("--cert-file and --category are mutually exclusive")
    creds = registry_credentials(*registry)
    if cert_file is not None and stall_changed:
        raise fail_invalid("--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML")
    check_setup_flags(setup=setup, image=image, controller_pull_secret=controller_pull_secret, cleanup=cleanup, wait=wait)

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

    def submitted(result: Any) -> None:
        sys.stderr.write("Categories:\n")
        for cat in document["spec"]["categories"]:
            sys.stderr.write(f"  - {cat['domain']}/{cat['variant']}\n")

    plan = RunPlan(
        document=document,
        grant_run_access=grant_run_access,
        registry=creds,
        wait=wait,
        budget=budget,
        derived=derived,
        files=files,
        setup=setup,
        image=image,
        controller_pull_secret=controller_pull_secret,
        cleanup=cleanup,
    )
    execute(plan, kubeconfig, context, on_submitted=submitted)


@dataclass(frozen=True)
class RunPlan:
    """Everything a run command decided before it touches the cluster."""

    document: dict[str, Any]
    grant_run_access: bool
    registry: Any
    wait: bool
    budget: float
    derived: bool
    files: ReportFiles
    setup: bool
    image: str | None
    controller_pull_secret: str | None
    cleanup: bool
    timeout_text: str | None = None  # printed as given (``workloadrun run``)

    @property
    def kind(self) -> str:
        return str(self.document["kind"])


def execute(plan: RunPlan, kubeconfig: Path | None, context: str | None, *, on_submitted: Any = None) -> None:
    """Carry out a run command's plan on the cluster the kubeconfig names; exit with its code unless 0."""
    code = execute_run(common.kube_client(kubeconfig, context), plan, on_submitted=on_submitted)
    if code:
        raise typer.Exit(code)


def _run_setup(kube: Any, plan: RunPlan, state: dict[str, Any]) -> None:
    """``--setup``: ``setup init --auto-approve`` with this run's controller image and pull Secret.

    ``state["installed"]`` turns true once something is applied, so a cleanup resets only then.
    """
    from nvcre.runtime.ops import install as ops

    certification = plan.kind == "Certification"
    sys.stderr.write("[setup] Installing dependencies...\n" if certification else "Installing NVCRE components...\n")
    try:
        ops.setup_init(
            kube,
            ops.controller_values(plan.image, plan.controller_pull_secret),
            say=stderr_lines("[setup] " if certification else ""),
            on_apply=lambda: state.update(installed=True),
        )
    except ops.DependenciesMissing as exc:
        raise dependencies_missing(exc.missing) from None
    sys.stderr.write("[setup] Setup complete.\n" if certification else "Setup complete.\n")


def execute_run(kube: Any, plan: RunPlan, *, on_submitted: Any = None) -> int:
    """Setup, submit, wait and report, then clean up on every way out; returns the exit code.

    With ``--setup`` or ``--cleanup``, SIGTERM is handled like Ctrl-C, so the cleanup still runs.
    """
    state: dict[str, Any] = {"result": None, "installed": False}
    code, last_words = 0, ""
    with _signals_end_the_wait(plan.setup or plan.cleanup):
        try:
            if plan.setup:
                _run_setup(kube, plan, state)
            result = _submit(kube, plan.document, plan.grant_run_access, plan.registry)
            state["result"] = result
            if on_submitted is not None:
                on_submitted(result)
            if not plan.wait:
                sys.stderr.write(f"\nTo check status:\n  kubectl get {plan.kind.lower()} {result.name} -n {result.namespace}\n")
                return 0
            if plan.timeout_text is not None:
                sys.stderr.write(f"Waiting for completion (timeout: {plan.timeout_text})...\n")
            code, last_words = _wait_and_report(
                plan.kind, result.name, result.namespace, plan.budget, plan.derived, plan.files, kube, cleanup=plan.cleanup
            )
        except KeyboardInterrupt:
            code, last_words = 130, "interrupted"
        except typer.Exit as exc:
            code = int(exc.exit_code or 0)
        finally:
            if plan.cleanup and (state["result"] is not None or state["installed"]):
                code = _cleanup(kube, state["result"], state["installed"], code)
    if last_words:
        sys.stderr.write(f"{last_words}\n")
    return code


class _signals_end_the_wait:  # noqa: N801 - used as a context manager, reads as a phrase
    """While active, SIGTERM raises KeyboardInterrupt (SIGINT already does), in the main thread only."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._previous: Any = None

    def __enter__(self) -> None:
        import signal
        import threading

        if not self._enabled or threading.current_thread() is not threading.main_thread():
            self._enabled = False
            return

        def interrupt(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        self._previous = signal.signal(signal.SIGTERM, interrupt)

    def __exit__(self, *exc: object) -> None:
        import signal

        if self._enabled:
            signal.signal(signal.SIGTERM, self._previous)


def _submit(kube: Any, document: dict[str, Any], grant_run_access: bool, creds: Any) -> Any:
    """Submit the run; without the controller's access in an existing namespace, print the
    RoleBinding to create on stdout and exit 1."""
    from nvcre.runtime.ops.submit import AccessMissing, submit_run

    try:
        return submit_run(kube, document, grant_run_access=grant_run_access, registry=creds, say=stderr_lines())
    except AccessMissing as exc:
        from nvcre.compiler.emit import dump_yaml

        sys.stderr.write(f"error: {exc}\n")
        sys.stdout.write(dump_yaml(exc.binding))
        raise typer.Exit(EXIT_FAILURE) from None


def _still_running(kind: str, name: str, namespace: str) -> str:
    lower = kind.lower()
    stop = (
        f"Stop it:\n  nvcrectl workloadrun cancel {name} -n {namespace}\n"
        if kind == "WorkloadRun"
        else f"Stop it:\n  kubectl delete {lower} {name} -n {namespace}\n"
    )
    return (
        f"The {lower} is still running in namespace {namespace}.\nMonitor its progress:\n"
        f"  kubectl get {lower} {name} -n {namespace} --watch\n"
        "Print an updated report (exits nonzero while still running):\n"
        f"  nvcrectl {lower} report {name} -n {namespace}\n" + stop
    )


def _unfinished(kind: str, name: str, namespace: str, files: ReportFiles, kube: Any, cleanup: bool) -> None:
    """After a timeout or Ctrl-C: the partial report (stderr), the results file, and what to do next."""
    from nvcre.runtime.ops.collect import RunNotFound

    lower = kind.lower()
    try:
        verdict = build_verdict(kube, kind, name, namespace)
    except RunNotFound:
        sys.stderr.write(f'{kind} "{name}" no longer exists after timeout; partial report unavailable.\n')
        return
    except Exception:  # noqa: BLE001 - the API server may be the reason the wait ended
        if not cleanup:
            sys.stderr.write(
                f"Unable to determine whether the {lower} is still running in namespace {namespace}.\n"
                f"Check its status:\n  kubectl get {lower} {name} -n {namespace}\n"
            )
        return
    sys.stderr.write(render_report([verdict], ReportFormat.text))
    files.write([verdict])
    if cleanup:
        return
    if verdict_result(verdict) != "IN PROGRESS":
        sys.stderr.write(f"The {lower} completed while the timeout was being handled.\n")
        return
    sys.stderr.write(_still_running(kind, name, namespace))


def _wait_and_report(
    kind: str, name: str, namespace: str, budget: float, derived: bool, files: ReportFiles, kube: Any, *, cleanup: bool = False
) -> tuple[int, str]:
    """Watch, then print the report; returns the exit code and the error line to print last (after
    any cleanup), as ``error: ...`` or ``interrupted``."""
    from nvcre.compiler.durations import format_duration
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
        _unfinished(kind, name, namespace, files, kube, cleanup)
        return 130, "interrupted"
    view.close()
    if outcome.result == "gone":
        return EXIT_FAILURE, f'error: {kind} "{name}" no longer exists; no report is available'
    if outcome.result == "timeout":
        _unfinished(kind, name, namespace, files, kube, cleanup)
        return EXIT_TIMEOUT, (
            f"error: {kind.lower()} did not complete within {elapsed_text(budget)} (ran for {elapsed_text(outcome.elapsed)})"
        )
    verdict = build_verdict(kube, kind, name, namespace)
    report = render_report([verdict], ReportFormat.text)
    # The report goes to standard output whatever the verdict, progress to standard error, so
    # `run --wait > report.txt` keeps the report.
    if verdict_result(verdict) == "PASSED":
        sys.stderr.write(f"[watch] {kind} succeeded. ({elapsed_text(outcome.elapsed)})\n")
        code = 0
    else:
        sys.stderr.write(f"[watch] {kind} failed. ({elapsed_text(outcome.elapsed)})\n")
        failed = sorted({n.name for n in getattr(verdict, "failed_nodes", ())})
        if failed:
            sys.stderr.write("Failed nodes: " + ", ".join(failed) + "\n")
        code = EXIT_FAILURE
    sys.stdout.write(report)
    files.write([verdict])
    code = files.write_evidence(kube, kind, name, namespace, code)
    return code, (f"error: {_failure_message(kind, outcome.run)}" if code else "")


def _failure_message(kind: str, run: dict[str, Any] | None) -> str:
    """``certification failed``, or ``WorkloadRun failed: <the Failed condition's message>``."""
    if kind != "WorkloadRun":
        return f"{kind.lower()} failed"
    conditions = ((run or {}).get("status") or {}).get("conditions") or []
    message = next((str(c.get("message") or "") for c in conditions if c.get("type") == "Failed"), "")
    return f"WorkloadRun failed: {message}" if message else "WorkloadRun failed"


def _cleanup(kube: Any, result: Any, installed: bool, code: int) -> int:
    """``--cleanup``: the run object, the namespace this run created, and with ``--setup`` the install.

    Every step reports and goes on; a second Ctrl-C abandons what is left (exit 130).
    """
    from nvcre.runtime.ops.install import setup_reset
    from nvcre.runtime.ops.submit import delete_run

    say = stderr_lines("[cleanup] ")
    say("Cleaning up...")
    warnings: list[str] = []
    try:
        if result is not None:
            warnings += delete_run(kube, result, say=say)
        if installed:
            say("Resetting setup (removing the installed components)...")
            try:
                setup_reset(kube, say=say)
            except Exception as exc:  # noqa: BLE001 - reported, and the run's exit code stays
                say(f"Warning: reset failed: {exc}")
                warnings.append(str(exc))
    except KeyboardInterrupt:
        say("Warning: interrupted; cleanup did not finish.")
        return 130
    say("Done (with warnings)." if warnings else "Done.")
    return code
