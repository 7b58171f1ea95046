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
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import ContextOption, KubeconfigOption, NamespaceOption, kube_client, load_single
from .output import EXIT_FAILURE, fail_invalid, guarded, stderr_lines

EXIT_TIMEOUT = 3

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
#: The most a password read from stdin may be (a token of a few KiB at most).
MAX_PASSWORD_CHARS = 8192
GrantRunAccessOption = Annotated[
    bool, typer.Option("--grant-run-access", help="Grant the controller write access in an existing namespace.")
]


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


OutputOption = Annotated[ReportFormat, typer.Option("--output", "-o")]


def dependencies_missing(missing: Any) -> typer.Exit:
    """Say which parts of Kubeflow Trainer and JobSet are missing and how to install them; exit 1."""
    from nvcre.runtime.ops.install import TRAINER_INSTALL

    for component in missing:
        sys.stderr.write(f"missing: {component.name}: {component.detail}\n")
    sys.stderr.write(TRAINER_INSTALL + "\n")
    return typer.Exit(EXIT_FAILURE)


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


def _json_report(verdicts: list[Any]) -> str:
    """The JSON report: one object for one run, a list for several."""
    from nvcre.runtime.report import json as report_json

    data = [report_json.to_dict(v) for v in verdicts]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2, sort_keys=True) + "\n"


def render_report(verdicts: list[Any], output: ReportFormat) -> str:
    from nvcre.runtime.report import text as report_text

    if output is ReportFormat.json:
        return _json_report(verdicts)
    return "\n".join(report_text.render(v) for v in verdicts)


@dataclass(frozen=True)
class ReportFiles:
    """Where a command also writes its report: JSON (``--results-file``) and JUnit XML (``--junit``)."""

    results: Path | None = None
    junit: Path | None = None
    #: ``--evidence DIR`` (and the loaded ``--sign-key``): the bundle written once the run ends
    evidence: Path | None = None
    signer: Any = None

    def write_evidence(self, kube: Any, kind: str, name: str, namespace: str, code: int) -> int:
        """Write the evidence bundle when asked; a bundle that cannot be written fails the command."""
        if self.evidence is None:
            return code
        from .evidence import write_evidence

        try:
            write_evidence(kube, kind, name, namespace, self.evidence, self.signer)
        except typer.Exit:
            return code or EXIT_FAILURE
        except Exception as exc:  # noqa: BLE001 - one clear line; the run's own outcome stays
            sys.stderr.write(f"error: evidence not written to {self.evidence}: {exc}\n")
            return code or EXIT_FAILURE
        return code

    def write(self, verdicts: list[Any]) -> None:
        from nvcre.runtime.report import junit as report_junit

        if self.results is not None:
            _write_file(self.results, _json_report(verdicts), "Results", "results file")
        if self.junit is not None:
            _write_file(self.junit, report_junit.dumps(verdicts), "JUnit report", "JUnit report")


EvidenceOption = Annotated[
    Path | None, typer.Option("--evidence", help="With --wait: write the run's evidence bundle to this new directory.")
]
SignKeyOption = Annotated[
    Path | None, typer.Option("--sign-key", help="With --evidence: sign the bundle with this PEM private key (ECDSA P-256 or Ed25519).")
]


def run_report_files(results: Path | None, junit: Path | None, evidence: Path | None, sign_key: Path | None, wait: bool) -> ReportFiles:
    """The report files of a run command; ``--evidence``/``--sign-key`` are checked (exit 2) before anything runs."""
    if evidence is None and sign_key is None:
        return ReportFiles(results, junit)
    if sign_key is not None and evidence is None:
        raise fail_invalid("--sign-key requires --evidence: it signs the evidence bundle")
    if not wait:
        raise fail_invalid("--evidence requires --wait: the bundle is written once the run ends")
    assert evidence is not None
    if evidence.exists() and (not evidence.is_dir() or any(evidence.iterdir())):
        raise fail_invalid(f"--evidence: {evidence} exists and is not an empty directory")
    from .evidence import load_signer_or_exit

    return ReportFiles(results, junit, evidence, load_signer_or_exit(sign_key))


def _write_file(path: Path, text: str, label: str, what: str) -> None:
    try:
        path.write_text(text)
        sys.stderr.write(f"{label} written to {path}\n")
    except OSError as exc:
        sys.stderr.write(f"Warning: failed to write {what} {path}: {exc}\n")


def _run_not_found(kube: Any, error: Exception, kind: str, name: str, namespace: str) -> typer.Exit:
    """Print the not-found error, with where the run is when it is elsewhere; exit 1."""
    sys.stderr.write(f"error: {error}{_wrong_namespace_hint(kube, kind, name, namespace)}\n")
    return typer.Exit(EXIT_FAILURE)


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


def report_runs(
    kind: str, names: list[str], namespace: str, output: ReportFormat, files: ReportFiles, kubeconfig: Path | None, context: str | None
) -> None:
    from nvcre.runtime.ops.collect import RunNotFound

    kube = kube_client(kubeconfig, context)
    verdicts = []
    for name in names:
        try:
            verdicts.append(build_verdict(kube, kind, name, namespace))
        except RunNotFound as exc:
            raise _run_not_found(kube, exc, kind, name, namespace) from None
    sys.stdout.write(render_report(verdicts, output))
    files.write(verdicts)
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

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = console if console is not None else Console(stderr=True)
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
    """The rich live table when stderr is a terminal, else plain ``[watch]`` lines."""
    return _LiveProgress() if sys.stderr.isatty() else _PlainProgress()


# ------------------------------------------------------------------ run


def _registry(registry: str | None, username: str | None, password: str | None) -> Any:
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


def _wait_budget(timeout: str) -> float:
    """``--timeout`` in seconds; exit 2 unless it is a Go duration of at least 1s."""
    from nvcre.compiler.compose import parse_duration

    try:
        budget = parse_duration(timeout)
    except ValueError as exc:
        raise fail_invalid(f"--timeout: {exc}") from None
    if budget < 1:
        raise fail_invalid(f"--timeout must be at least 1s when --wait is set, got {timeout}")
    return budget


def _load_run_file(path: Path, kind: str) -> dict[str, Any]:
    """The one document of a run file; exit 2 when it is not of ``kind``."""
    from nvcre.compiler.diagnostics import CompileError, error

    document = load_single(path)
    if document.get("kind") != kind:
        raise CompileError([error("WrongKind", f"{path}: kind", f"expected kind {kind}, got {document.get('kind')!r}")])
    return document


def _require_valid(document: dict[str, Any]) -> None:
    """Exit 2 with every error the API validation finds in a run object."""
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, errors_in

    problems = errors_in(validate(document))
    if problems:
        raise CompileError(problems)


def _load_cert_file(path: Path, namespace: str | None, generated: str) -> dict[str, Any]:
    document = _load_run_file(path, "Certification")
    _require_valid(document)
    meta = document.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or namespace or generated
    return document


def _check_setup_flags(*, setup: bool, image: str | None, controller_pull_secret: str | None, cleanup: bool, wait: bool) -> None:
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

    budget = _wait_budget(timeout) if wait and timeout is not None else None
    if cert_file is not None and categories:
        raise fail_invalid("--cert-file and --category are mutually exclusive")
    creds = _registry(*registry)
    if cert_file is not None and stall_changed:
        raise fail_invalid("--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML")
    _check_setup_flags(setup=setup, image=image, controller_pull_secret=controller_pull_secret, cleanup=cleanup, wait=wait)

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
    _execute(plan, kubeconfig, context, on_submitted=submitted)


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


def _execute(plan: RunPlan, kubeconfig: Path | None, context: str | None, *, on_submitted: Any = None) -> None:
    """Carry out a run command's plan on the cluster the kubeconfig names; exit with its code unless 0."""
    code = execute_run(kube_client(kubeconfig, context), plan, on_submitted=on_submitted)
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
        _unfinished(kind, name, namespace, files, kube, cleanup)
        return 130, "interrupted"
    view.close()
    if outcome.result == "gone":
        return EXIT_FAILURE, f'error: {kind} "{name}" no longer exists; no report is available'
    if outcome.result == "timeout":
        _unfinished(kind, name, namespace, files, kube, cleanup)
        return EXIT_TIMEOUT, (f"error: {kind.lower()} did not complete within {_elapsed(budget)} (ran for {_elapsed(outcome.elapsed)})")
    verdict = build_verdict(kube, kind, name, namespace)
    report = render_report([verdict], ReportFormat.text)
    # The report goes to standard output whatever the verdict, progress to standard error, so
    # `run --wait > report.txt` keeps the report.
    if verdict_result(verdict) == "PASSED":
        sys.stderr.write(f"[watch] {kind} succeeded. ({_elapsed(outcome.elapsed)})\n")
        code = 0
    else:
        sys.stderr.write(f"[watch] {kind} failed. ({_elapsed(outcome.elapsed)})\n")
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

    kube = kube_client(kubeconfig, context)
    from nvcre.runtime.kube.errors import NotFound

    try:
        run = kube.get(resource_for_kind(kind), name, namespace)
    except NotFound:
        raise _run_not_found(kube, RunNotFound(kind, name, namespace), kind, name, namespace) from None
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

    kube = kube_client(kubeconfig, context)
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
    budget = _wait_budget(timeout) if wait else 0.0
    creds = _registry(workload_registry, workload_registry_username, workload_registry_password)
    _check_setup_flags(setup=setup, image=image, controller_pull_secret=controller_pull_secret, cleanup=cleanup, wait=wait)
    document = _load_run_file(file, "WorkloadRun")
    meta = document.setdefault("metadata", {})
    if name:
        meta["name"] = name
    meta["namespace"] = namespace or meta.get("namespace") or "default"
    _require_valid(document)

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
    _execute(plan, kubeconfig, context)


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
