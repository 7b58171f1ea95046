"""Carry out one run of a Certification or a WorkloadRun: install, submit, wait, judge, clean up.

:func:`execute_run` takes a :class:`RunPlan` (everything the command line decided before it
touched the cluster) through the optional install (``--setup``), the submission, the wait, the
verdict and its report, and with ``--cleanup`` the removal of what the run made, on every way
out. It returns the exit code: 0 PASSED, 1 FAILED (or the run could not be submitted), 3 the wait
timed out, 130 interrupted. Ctrl-C (and, with ``--setup`` or ``--cleanup``, SIGTERM) ends the wait.

What is said goes through a :class:`RunOutput` the caller supplies: messages and progress to
one stream, the report (and a RoleBinding to create) to the other, the report files through its
writer. This module decides what to say and when; the caller decides where it goes. The run is
collected and judged once when it ends: that one verdict, and the objects it was built from,
make the report, the report files and (when the plan asks for one) the evidence bundle.

The rule for the report: once the run has ended, its report goes to the report stream whatever
the verdict, so ``run --wait > report.txt`` keeps it; the partial report of a wait that did not
end (timed out, interrupted) goes to the message stream with what to do next. A plan with
``nvcre_streams`` follows NVCRE's nvcrectl instead: a Certification's report on the report
stream only when it PASSED, every other one (and every WorkloadRun's) on the message stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..report.format import elapsed_text

if TYPE_CHECKING:
    from ..evidence.of_run import EvidenceRequest
    from ..kube.client import Kube
    from .collect import Collected

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_PASSED",
    "EXIT_TIMEOUT",
    "RunOutput",
    "RunPlan",
    "report_sink",
    "execute_run",
    "verdict_result",
]

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class RunPlan:
    """Everything a run command decided before it touches the cluster."""

    document: dict[str, Any]
    grant_run_access: bool
    registry: Any
    wait: bool
    budget: float
    derived: bool
    setup: bool
    image: str | None
    controller_pull_secret: str | None
    cleanup: bool
    timeout_text: str | None = None  # printed as given (``workloadrun run``)
    #: print the report where NVCRE's nvcrectl does (see the module docstring)
    nvcre_streams: bool = False
    #: changes the document needs from the cluster (read after any install, before submission)
    before_submit: Callable[[Kube, Callable[[str], None]], None] | None = None
    #: ``--evidence``: the bundle to write once the run has ended (with its signer, if any)
    evidence: EvidenceRequest | None = None

    @property
    def kind(self) -> str:
        return str(self.document["kind"])


@dataclass(frozen=True)
class RunOutput:
    """Where a run's words go: ``err`` takes messages and progress, ``out`` the report.

    ``progress`` makes the view the wait feeds (called with each progress snapshot, then
    ``close()``d); ``write_files`` writes the report files of a verdict list.
    """

    err: Callable[[str], object]
    out: Callable[[str], object]
    progress: Callable[[], Any]
    write_files: Callable[[list[Any]], None]

    def lines(self, prefix: str = "") -> Callable[[str], None]:
        """A ``say`` callback: each line after ``prefix``, on the message stream."""

        def say(line: str) -> None:
            self.err(f"{prefix}{line}\n")

        return say


class _Stop(Exception):
    """Ends the run early with an exit code (the cleanup still runs)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def verdict_result(verdict: Any) -> str:
    """PASSED, FAILED or IN PROGRESS as the verdict model says (INCOMPLETE counts as passed)."""
    result = str(getattr(verdict, "result", "") or "").upper()
    if result in ("PASSED", "INCOMPLETE"):
        return "PASSED"
    if result == "FAILED":
        return "FAILED"
    return "IN PROGRESS"


def _text_report(verdicts: list[Any]) -> str:
    from ..report import text as report_text

    return report_text.render_many(verdicts)


def _verdict(kube: Kube, kind: str, name: str, namespace: str) -> Any:
    from .queries import verdict_of

    return verdict_of(kube, kind, name, namespace)


def _ended(kube: Kube, kind: str, name: str, namespace: str) -> tuple[Collected, Any]:
    """The objects of a run that has ended and their one verdict (running categories dated to now)."""
    from .collect import collect_run
    from .queries import verdict_from

    got = collect_run(kube, kind, name, namespace)
    return got, verdict_from(got, kind, now=datetime.now(UTC))


def execute_run(kube: Kube, plan: RunPlan, output: RunOutput, *, on_submitted: Callable[[Any], None] | None = None) -> int:
    """Setup, submit, wait and report, then clean up on every way out; returns the exit code."""
    state: dict[str, Any] = {"result": None, "installed": False}
    code, last_words = EXIT_PASSED, ""
    with _signals_end_the_wait(plan.setup or plan.cleanup):
        try:
            if plan.setup:
                _run_setup(kube, plan, output, state)
            if plan.before_submit is not None:
                plan.before_submit(kube, output.lines())
            result = _submit(kube, plan, output)
            state["result"] = result
            if on_submitted is not None:
                on_submitted(result)
            if not plan.wait:
                output.err(f"\nTo check status:\n  kubectl get {plan.kind.lower()} {result.name} -n {result.namespace}\n")
                return EXIT_PASSED
            if plan.timeout_text is not None:
                output.err(f"Waiting for completion (timeout: {plan.timeout_text})...\n")
            code, last_words = _wait_and_report(kube, plan, result.name, result.namespace, output)
        except KeyboardInterrupt:
            code, last_words = EXIT_INTERRUPTED, "interrupted"
        except _Stop as stop:
            code = stop.code
        finally:
            if plan.cleanup and (state["result"] is not None or state["installed"]):
                code = _cleanup(kube, state["result"], state["installed"], code, output)
    if last_words:
        output.err(f"{last_words}\n")
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


def _run_setup(kube: Kube, plan: RunPlan, output: RunOutput, state: dict[str, Any]) -> None:
    """``--setup``: ``setup init --auto-approve`` with this run's controller image and pull Secret.

    ``state["installed"]`` turns true once something is applied, so a cleanup resets only then.
    """
    from .install import lifecycle as ops

    certification = plan.kind == "Certification"
    output.err("[setup] Installing dependencies...\n" if certification else "Installing NVCRE components...\n")
    try:
        ops.setup_init(
            kube,
            ops.controller_values(plan.image, plan.controller_pull_secret),
            say=output.lines("[setup] " if certification else ""),
            on_apply=lambda: state.update(installed=True),
        )
    except ops.DependenciesMissing as exc:
        for component in exc.missing:
            output.err(f"missing: {component.name}: {component.detail}\n")
        output.err(ops.TRAINER_INSTALL + "\n")
        raise _Stop(EXIT_FAILED) from None
    output.err("[setup] Setup complete.\n" if certification else "Setup complete.\n")


def _submit(kube: Kube, plan: RunPlan, output: RunOutput) -> Any:
    """Submit the run; without the controller's access in an existing namespace, print the
    RoleBinding to create (on the report stream) and stop with exit 1."""
    from .submit import AccessMissing, submit_run

    try:
        return submit_run(kube, plan.document, grant_run_access=plan.grant_run_access, registry=plan.registry, say=output.lines())
    except AccessMissing as exc:
        from nvcre.compiler.emit import dump_yaml

        output.err(f"error: {exc}\n")
        output.out(dump_yaml(exc.binding))
        raise _Stop(EXIT_FAILED) from None


def _wait_and_report(kube: Kube, plan: RunPlan, name: str, namespace: str, output: RunOutput) -> tuple[int, str]:
    """Watch, then print the report; returns the exit code and the error line to print last (after
    any cleanup), as ``error: ...`` or ``interrupted``."""
    from nvcre.compiler.durations import format_duration

    from .wait import wait_for_run

    kind = plan.kind
    output.err("\n")
    if plan.derived:
        output.err(f"Waiting up to {format_duration(plan.budget)} (derived from category timeouts; pass --timeout to override).\n")
    output.err(f"[watch] Watching {kind.lower()} progress...\n")
    view = output.progress()
    try:
        outcome = wait_for_run(kube, kind, name, namespace, timeout=plan.budget, on_progress=view)
    except KeyboardInterrupt:
        view.close()
        _unfinished(kube, kind, name, namespace, output, plan.cleanup)
        return EXIT_INTERRUPTED, "interrupted"
    view.close()
    if outcome.result == "gone":
        return EXIT_FAILED, f'error: {kind} "{name}" no longer exists; no report is available'
    if outcome.result == "timeout":
        _unfinished(kube, kind, name, namespace, output, plan.cleanup)
        return EXIT_TIMEOUT, (
            f"error: {kind.lower()} did not complete within {elapsed_text(plan.budget)} (ran for {elapsed_text(outcome.elapsed)})"
        )
    got, verdict = _ended(kube, kind, name, namespace)
    report = _text_report([verdict])
    # The report goes to the report stream whatever the verdict, progress to the other, so
    # `run --wait > report.txt` keeps the report.
    if verdict_result(verdict) == "PASSED":
        output.err(f"[watch] {kind} succeeded. ({elapsed_text(outcome.elapsed)})\n")
        code = EXIT_PASSED
    else:
        output.err(f"[watch] {kind} failed. ({elapsed_text(outcome.elapsed)})\n")
        failed = sorted({n.name for n in getattr(verdict, "failed_nodes", ())})
        if failed:
            output.err("Failed nodes: " + ", ".join(failed) + "\n")
        code = EXIT_FAILED
    report_sink(plan, code == EXIT_PASSED, output)(report)
    output.write_files([verdict])
    if plan.evidence is not None:
        code = _write_evidence(kube, plan.evidence, got, verdict, code, output)
    return code, (f"error: {_failure_message(kind, outcome.run)}" if code else "")


def _write_evidence(kube: Kube, request: EvidenceRequest, got: Collected, verdict: Any, code: int, output: RunOutput) -> int:
    """The bundle of the ended run, from the objects and verdict in hand; one that cannot be written
    fails the run (exit 1 unless it already failed) with one line and the report kept."""
    from ..evidence import EvidenceError
    from .evidence_objects import write_run_evidence

    try:
        output.err(write_run_evidence(kube, got, verdict, request))
    except EvidenceError as exc:
        output.err(f"error: {exc}\n")
        return code or EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - one clear line; the run's own outcome stays
        output.err(f"error: evidence not written to {request.directory}: {exc}\n")
        return code or EXIT_FAILED
    return code


def report_sink(plan: RunPlan, passed: bool, output: RunOutput) -> Callable[[str], object]:
    """Where the report of an ended run goes: the report stream, or with ``nvcre_streams`` where
    NVCRE puts it (stdout only for a passed Certification; ``handleReport``, ``out: os.Stderr``)."""
    if plan.nvcre_streams and (plan.kind == "WorkloadRun" or not passed):
        return output.err
    return output.out


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


def _unfinished(kube: Kube, kind: str, name: str, namespace: str, output: RunOutput, cleanup: bool) -> None:
    """After a timeout or Ctrl-C: the partial report (message stream), the report files, and what to do next."""
    from .collect import RunNotFound

    lower = kind.lower()
    try:
        verdict = _verdict(kube, kind, name, namespace)
    except RunNotFound:
        output.err(f'{kind} "{name}" no longer exists after timeout; partial report unavailable.\n')
        return
    except Exception:  # noqa: BLE001 - the API server may be the reason the wait ended
        if not cleanup:
            output.err(
                f"Unable to determine whether the {lower} is still running in namespace {namespace}.\n"
                f"Check its status:\n  kubectl get {lower} {name} -n {namespace}\n"
            )
        return
    output.err(_text_report([verdict]))
    output.write_files([verdict])
    if cleanup:
        return
    if verdict_result(verdict) != "IN PROGRESS":
        output.err(f"The {lower} completed while the timeout was being handled.\n")
        return
    output.err(_still_running(kind, name, namespace))


def _failure_message(kind: str, run: dict[str, Any] | None) -> str:
    """``certification failed``, or ``WorkloadRun failed: <the Failed condition's message>``."""
    if kind != "WorkloadRun":
        return f"{kind.lower()} failed"
    conditions = ((run or {}).get("status") or {}).get("conditions") or []
    message = next((str(c.get("message") or "") for c in conditions if c.get("type") == "Failed"), "")
    return f"WorkloadRun failed: {message}" if message else "WorkloadRun failed"


def _cleanup(kube: Kube, result: Any, installed: bool, code: int, output: RunOutput) -> int:
    """``--cleanup``: the run object, the namespace this run created, and with ``--setup`` the install.

    Every step reports and goes on; a second Ctrl-C abandons what is left (exit 130).
    """
    from .install.lifecycle import setup_reset
    from .submit import delete_run

    say = output.lines("[cleanup] ")
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
        return EXIT_INTERRUPTED
    say("Done (with warnings)." if warnings else "Done.")
    return code
