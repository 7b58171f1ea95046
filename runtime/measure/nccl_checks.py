"""Whether an nccl-tests run can be trusted: corrupted data, a failed run, an unfinished table.

nccl-tests checks every result it moves and prints what it found: a ``#wrong`` cell per row and
half (out-of-place, in-place; ``N/A`` when checking is off) and, at the end of a table,
``# Out of bounds values : N OK|FAILED`` then ``# Avg bus bandwidth : X``. Before 2.13 the
rows carried a floating ``error`` column (the largest deviation, not a count) instead of
``#wrong``, and the trailer lines may lack the ``#``. A cell left blank (a hypercube's or an older
alltoall's redop) splits into no token, so a row shorter than its header has its ``#wrong``
cells that many tokens further left. A run that dies prints a failure line
(``Test NCCL failure common.cu:1204 '...'``, ``Test CUDA failure ...``, ``Test timeout ...``)
or NCCL's own ``NCCL WARN ... failed`` and never reaches its trailer.

:class:`RunChecks` is fed every line of a log once and gives one :class:`RunFailure`, checked
in this order:

* ``CollectiveDataCorrupted``: a ``#wrong`` cell above zero, or an ``Out of bounds values``
  count above zero (or marked ``FAILED``);
* ``CollectiveRunFailed``: a nccl-tests failure line anywhere, an ``Avg bus bandwidth : X
  FAILED`` trailer (the test's own ``NCCL_TESTS_MIN_BW`` check failed and it exits non-zero),
  or, in a log whose table never finished, an ``NCCL WARN`` line that says something failed or
  an NCCL error return (``NCCL INFO misc/socket.cc:752 -> 6``, what NCCL logs as an error code
  unwinds), or a launcher's refusal to start the processes (Open MPI's ``There are not enough
  slots available in the system ...``, ``... was unable to launch the specified application``,
  ``... was unable to reliably start one or more daemons``; Slurm's ``slurmstepd: error:
  execve(): ...``; Cray PALS's ``launch failed on x3006c0s1b1n0: ...`` and ``start failed on
  ...``) or its report that a process of the job died or lost its daemon (``prterun
  noticed that process rank 1 ... exited on signal 6``, ``mpirun noticed that the job aborted
  ...``, ``mpirun detected that one or more processes exited with non-zero status ...``, ``PRTE
  has lost communication with a remote daemon``, srun's ``task 1: Exited with exit code 2``);
  on the final read only, a log that finished no table and holds ``kubectl exec``'s report that
  a command it ran on a worker exited non-zero (``command terminated with exit code 1``: an
  MPIJob launcher's daemon that did not start; a launcher may also retry an exec while its
  workers come up, so a running log is left alone), or an ``ERROR`` or ``FATAL`` line
  in UCX's log format, from UCX or UCC (the transport MPI runs over failed to connect its
  processes: ``ib_device.c:1380 UCX  ERROR ibv_create_ah(...) failed: No such device``,
  ``tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg``; a running job may still
  recover from one), and a
  log whose last line is an ``NCCL WARN`` (whatever it says: ``socketFinalizeAccept: wrong type
  3 != 4``) and that finished no table, for NCCL printed nothing after its warning;
* ``CollectiveTableIncomplete``: rows (or a table header, or the run's own header: ``Collective
  test starting``, ``nThread ... minBytes`` or ``nGpus(perProc) ... minBytes``, the
  ``out-of-place  in-place`` line, the column header's ``(B)  (elements)`` units line) after
  which no ``Avg bus bandwidth`` line came.

Only plain string operations run here (no pattern), so the cost is linear in the line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "CORRUPTED",
    "INCOMPLETE",
    "REASONS",
    "RUN_FAILED",
    "RunChecks",
    "RunFailure",
    "avg_bus_value",
]

CORRUPTED = "CollectiveDataCorrupted"
RUN_FAILED = "CollectiveRunFailed"
INCOMPLETE = "CollectiveTableIncomplete"
#: every reason a bandwidth measurement can fail with, most severe first
REASONS = (CORRUPTED, RUN_FAILED, INCOMPLETE)
#: the longest failure message written to status (a quoted log line is cut to fit)
MAX_MESSAGE = 512
_MAX_QUOTED = 300

#: lines nccl-tests prints when a run dies (its CUDACHECK/NCCLCHECK/timeout reports)
_FAILURE_MARKS = ("Test NCCL failure", "Test CUDA failure", "Test failure ", "Test timeout", "NCCL failure ")
_AVG = "Avg bus bandwidth"
_OOB = "Out of bounds values"
#: what a launcher prints when it starts none of the processes: Open MPI's mpirun or prterun
#: (no slots, no such program, daemons that never came up), and Slurm's step daemon when the
#: program is missing (``slurmstepd: error: execve(): all_reduce_perf: No such file or directory``)
_LAUNCH_REFUSALS = (
    "There are not enough slots available in the system",
    "was unable to launch the specified application",
    "was unable to reliably start one or more daemons",
    "slurmstepd: error: execve():",
)
#: how Cray PALS (``aprun``, ``mpiexec``) opens a line saying it could not start the job on a node
#: (``launch failed on x3006c0s1b1n0: Couldn't allocate a port for PMI to use``, ``start failed on
#: x3006c0s1b1n0: CXI alloc failed on cxi0: request exceeds ACs limits``)
_LAUNCH_REFUSAL_HEADS = ("launch failed on ", "start failed on ")
#: the levels of UCX's log format (which UCC shares) that say a component failed
_UCX_FAILING_LEVELS = ("ERROR", "FATAL")
#: what a launcher prints when a process of the job died (killed, aborted or exited non-zero), or
#: lost the daemon that ran it: Open MPI's mpirun or prterun, and srun (``srun: error: host-01:
#: task 1: Exited with exit code 2``, which srun prints for a non-zero exit only)
_PROCESS_DEATHS = (
    "noticed that process rank",
    "noticed that the job aborted",
    "detected that one or more processes exited with non-zero status",
    "has lost communication with a remote daemon",
    "daemon has unexpectedly failed after launch",
    ": Exited with exit code ",
)
#: what ``kubectl exec`` prints when the command it ran in a pod exited non-zero: an MPIJob
#: launcher's ``kubexec.sh`` starting a daemon on a worker (``command terminated with exit code 1``)
_EXEC_EXIT = "command terminated with exit code "
#: how the run's parameters line begins (``nGpus(perProc)`` where a build leaves ``nThread`` out)
_PARAMETER_HEADS = ("nThread ", "nGpus(perProc) ")


@dataclass(frozen=True)
class RunFailure:
    """Why a run's numbers are not a measurement: one of :data:`REASONS` and what was seen."""

    reason: str
    message: str
    #: only a failure once the run has ended (a running one may still print past what is seen:
    #: the rest of an unfinished table, or more after a warning)
    final_only: bool = False

    def to_status(self) -> dict[str, str]:
        """``status.failure`` of a BandwidthMeasurement."""
        return {"reason": self.reason, "message": self.message}


def _trailer_rest(body: str, label: str) -> str | None:
    """The text after ``label :`` on a trailer line (``#`` optional), else None."""
    text = body.strip()
    if text[:1] == "#":
        text = text[1:].lstrip()
    if not text.startswith(label):
        return None
    rest = text[len(label) :].lstrip()
    return rest[1:] if rest[:1] == ":" else None


def _number(text: str) -> float | None:
    if not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def avg_bus_value(body: str) -> float | None:
    """The value of an ``Avg bus bandwidth : X [OK|FAILED]`` line, else None."""
    rest = _trailer_rest(body, _AVG)
    if rest is None:
        return None
    parts = rest.split()
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[1] not in ("OK", "FAILED")):
        return None
    return _number(parts[0])


def _out_of_bounds(body: str) -> tuple[int, bool] | None:
    """(count, marked FAILED) of an ``Out of bounds values : N OK|FAILED`` line, else None."""
    rest = _trailer_rest(body, _OOB)
    if rest is None:
        return None
    parts = rest.split()
    if not parts or not parts[0].isascii() or not parts[0].isdigit():
        return None
    return int(parts[0]), len(parts) > 1 and parts[1] == "FAILED"


def _quote(line: str) -> str:
    """A log line as a message may quote it: printable, one line, at most ``_MAX_QUOTED`` characters."""
    text = "".join(ch if ch.isprintable() else " " for ch in line.strip())
    return text if len(text) <= _MAX_QUOTED else text[: _MAX_QUOTED - 3] + "..."


def _header_columns(body: str) -> list[int] | None:
    """The ``#wrong`` columns of a table header line (``[]`` for an ``error`` header), else None.

    Documentation that strips the ``#`` from every comment line of a pasted table strips it from
    ``#wrong`` too, so a bare ``wrong`` column counts the same."""
    text = body.strip()
    if text[:1] == "#":
        text = text[1:]
    tokens = text.split()
    if tokens[:2] != ["size", "count"]:
        return None
    return [index for index, token in enumerate(tokens) if token in ("#wrong", "wrong")]


def _is_error_return(body: str) -> bool:
    """An NCCL INFO line that traces an error return (``misc/socket.cc:752 -> 6``).

    NCCL logs ``file:line -> code`` at every level an error code is handed back through, so the
    line ends in ``<file>.<ext>:<line> -> <code>`` (a non-zero ``ncclResult_t``). A ring's route
    (``Ring 00 : 1 -> 0 -> 1``) also ends in an arrow and a number, but not after a source place.
    """
    head, arrow, code = body.rstrip().rpartition(" -> ")
    if not (arrow and code.isascii() and code.isdigit() and code != "0"):
        return False
    words = head.split()
    source, colon, line = (words[-1] if words else "").rpartition(":")
    return bool(colon) and "." in source and line.isascii() and line.isdigit()


def _starts_run(body: str) -> bool:
    """A line nccl-tests prints before a table: the run's announcement or parameters (``nThread
    1 nGpus 8 minBytes ...``, or ``nGpus(perProc) 8 minBytes ...`` in builds that leave the
    thread count out), the ``out-of-place  in-place`` line above the column header, or the units
    line below it (``(B)  (elements)  (us)  (GB/s)``; a piece pasted from there on still shows a
    table begun)."""
    text = body.strip()
    if text[:1] == "#":
        text = text[1:].lstrip()
    return (
        text.startswith("Collective test starting")
        or (text.startswith(_PARAMETER_HEADS) and "minBytes" in text)
        or (text.startswith("out-of-place") and text.endswith("in-place"))
        or (text.startswith("(B)") and text[3:4].isspace() and text[3:].split()[:1] == ["(elements)"])
    )


def _is_launch_refusal(body: str) -> bool:
    """A launcher's refusal to start the run's processes (see :data:`_LAUNCH_REFUSALS`)."""
    return any(mark in body for mark in _LAUNCH_REFUSALS) or body.lstrip().startswith(_LAUNCH_REFUSAL_HEADS)


def _is_ucx_failure(body: str) -> bool:
    """A line of UCX's log format (``[1723337199.09] [host:1382:0]  tl_shm_team.c:617  TL_SHM
    ERROR Child failed to attach to shmseg``; UCX, UCC and their components such as ``TL_SHM``,
    ``CL_BASIC`` or ``UCT`` write it) at the ``ERROR`` or ``FATAL`` level: a source position
    (``file.c:NNN`` or ``.cc``), an upper-case component name, then the level."""
    if "ERROR" not in body and "FATAL" not in body:
        return False  # most lines: no need to split them
    tokens = body.split()
    for index in range(2, len(tokens)):
        if tokens[index] not in _UCX_FAILING_LEVELS:
            continue
        component, position = tokens[index - 1], tokens[index - 2]
        source, _, line = position.rpartition(":")
        if component.replace("_", "").isalnum() and component.isupper() and source.endswith((".c", ".cc")) and line.isdigit():
            return True
    return False


def _is_exec_failure(body: str) -> bool:
    """``kubectl exec``'s report that the command it ran exited non-zero (see :data:`_EXEC_EXIT`)."""
    _, found, rest = body.partition(_EXEC_EXIT)
    code = rest.strip()
    return bool(found) and code.isdigit() and int(code) != 0


def _is_int(token: str) -> bool:
    return token.isascii() and token.lstrip("-").isdigit()


class RunChecks:
    """The health of the run(s) a log shows, line by line (see the module docstring)."""

    __slots__ = (
        "avg_failed_line",
        "death_line",
        "exec_line",
        "failure_line",
        "header_open",
        "last_size",
        "last_warn",
        "warn_is_last",
        "launch_line",
        "transport_line",
        "open_rows",
        "oob_count",
        "oob_failed",
        "trailers",
        "warn_line",
        "wrong_columns",
        "wrong_width",
        "wrong_elements",
        "wrong_rows",
        "wrong_size",
    )

    def __init__(self) -> None:
        #: ``#wrong`` columns of the table being read; None until a header says (then inferred)
        self.wrong_columns: list[int] | None = None
        #: how many cells that header names (a row with fewer left some blank before its times)
        self.wrong_width = 0
        self.wrong_elements = 0
        self.wrong_rows = 0
        self.wrong_size: int | None = None
        self.oob_count = 0
        self.oob_failed = False
        self.failure_line: str | None = None
        #: an ``Avg bus bandwidth : X FAILED`` trailer: the test's own bandwidth floor failed
        self.avg_failed_line: str | None = None
        self.warn_line: str | None = None
        #: the last ``NCCL WARN`` line, quoted when an error return follows it
        self.last_warn: str | None = None
        #: no line but blank ones and the error returns it unwinds came after ``last_warn``
        self.warn_is_last = False
        #: the launcher's refusal to start the run (no process of it ran)
        self.launch_line: str | None = None
        #: a UCX or UCC error: MPI's transport failed to connect the run's processes
        self.transport_line: str | None = None
        #: the launcher's report that a process of the run died
        self.death_line: str | None = None
        #: ``kubectl exec`` reporting that a command a launcher ran on a worker exited non-zero
        self.exec_line: str | None = None
        self.open_rows = 0
        self.last_size: int | None = None
        self.trailers = 0
        #: a run started (its header, or the table's) and no trailer has closed its table yet
        self.header_open = False

    def row(self, body: str, size: int) -> None:
        """A bandwidth row the profile read: count its wrong elements."""
        self.warn_is_last = False
        self.open_rows += 1
        self.last_size = size
        tokens = body.split()
        columns = self.wrong_columns
        if columns is None:
            # No header seen: a 2.13+ row has redop and an integer root before the time column and
            # 13 cells (a timestamp adds one or two); a per-iteration row has more, and its 13th
            # cell is not a count, so without its header only the out-of-place cell is read.
            columns = ([8, 12] if len(tokens) <= 15 else [8]) if len(tokens) >= 13 and _is_int(tokens[4]) else []
        elif len(tokens) < self.wrong_width:
            # A blank cell splits into no token: a hypercube's or an older alltoall's empty redop
            # leaves the row short by one before its times, so the checks sit that much further left.
            shift = self.wrong_width - len(tokens)
            columns = [column - shift for column in columns if column >= shift]
        wrong = 0
        for column in columns:
            if column < len(tokens) and tokens[column] != "N/A":
                value = _number(tokens[column])
                if value is not None and value > 0:
                    wrong += max(1, int(value))
        if wrong:
            self.wrong_elements += wrong
            self.wrong_rows += 1
            if self.wrong_size is None:
                self.wrong_size = size

    def other(self, body: str, is_average: bool) -> None:
        """Any line that is not a row (``is_average``: the ``Avg bus bandwidth`` trailer)."""
        self._follow_last_warning(body)
        if is_average:
            self.trailers += 1
            self.open_rows = 0
            self.header_open = False
            if self.avg_failed_line is None and body.split()[-1:] == ["FAILED"]:
                self.avg_failed_line = _quote(body)
            return
        if "size" in body:
            columns = _header_columns(body)
            if columns is not None:
                self.wrong_columns = columns
                self.wrong_width = len(body.replace("#", " ", 1).split())
                self.header_open = True
                return
        if _OOB in body:
            found = _out_of_bounds(body)
            if found is not None:
                self.oob_count += found[0]
                self.oob_failed = self.oob_failed or found[1]
                return
        self._note_failure_or_start(body)

    def _note_failure_or_start(self, body: str) -> None:
        """Keep the first line of each kind that says the run failed (or never started), else
        note a line that opens a run."""
        if self.failure_line is None and any(mark in body for mark in _FAILURE_MARKS):
            self.failure_line = _quote(body)
        elif "NCCL WARN" in body:
            self.last_warn = body
            if self.warn_line is None and "fail" in body.lower():
                self.warn_line = _quote(body)
        elif self.warn_line is None and "NCCL INFO" in body and _is_error_return(body):
            self.warn_line = _quote(self.last_warn or body)
        elif self.launch_line is None and _is_launch_refusal(body):
            self.launch_line = _quote(body)
        elif self.transport_line is None and _is_ucx_failure(body):
            self.transport_line = _quote(body)
        elif self.exec_line is None and _is_exec_failure(body):
            self.exec_line = _quote(body)
        elif self.death_line is None and any(mark in body for mark in _PROCESS_DEATHS):
            self.death_line = _quote(body)
        elif _starts_run(body):
            self.header_open = True

    def _follow_last_warning(self, body: str) -> None:
        """Keep ``warn_is_last`` while nothing but blank lines and the error returns a warning
        unwinds come after it."""
        if not body.strip():
            return
        if "NCCL WARN" in body:
            self.warn_is_last = True
        elif self.warn_is_last and not ("NCCL INFO" in body and _is_error_return(body)):
            self.warn_is_last = False

    def failure(self) -> RunFailure | None:
        """What makes the run's numbers untrustworthy, most severe first; None when nothing does."""
        if self.wrong_elements or self.oob_count or self.oob_failed:
            return RunFailure(CORRUPTED, self._corruption())
        if self.failure_line is not None:
            return RunFailure(RUN_FAILED, _cap(f"nccl-tests failed: {self.failure_line}"))
        if self.avg_failed_line is not None:
            return RunFailure(RUN_FAILED, _cap(f"nccl-tests failed its own NCCL_TESTS_MIN_BW check: {self.avg_failed_line}"))
        if self.warn_line is not None and self.trailers == 0:
            return RunFailure(RUN_FAILED, _cap(f"NCCL failed and no result table finished: {self.warn_line}"))
        if self.launch_line is not None and self.trailers == 0:
            return RunFailure(RUN_FAILED, _cap(f"the launcher did not start the run: {self.launch_line}"))
        if self.death_line is not None and self.trailers == 0:
            return RunFailure(RUN_FAILED, _cap(f"a process of the run died and no result table finished: {self.death_line}"))
        if self.exec_line is not None and self.trailers == 0:
            message = f"a command the launcher ran on a worker failed and no result table finished: {self.exec_line}"
            return RunFailure(RUN_FAILED, _cap(message), final_only=True)
        if self.transport_line is not None and self.trailers == 0:
            message = f"MPI's transport failed and no result table finished: {self.transport_line}"
            return RunFailure(RUN_FAILED, _cap(message), final_only=True)
        if self.warn_is_last and self.last_warn is not None and self.trailers == 0:
            message = f"the log ended on an NCCL warning and no result table finished: {_quote(self.last_warn)}"
            return RunFailure(RUN_FAILED, _cap(message), final_only=True)
        if self.open_rows:
            size = f" (last message size {self.last_size} B)" if self.last_size is not None else ""
            return RunFailure(
                INCOMPLETE,
                f"the nccl-tests table stopped after {self.open_rows} rows{size} without its 'Avg bus bandwidth' line",
                final_only=True,
            )
        if self.header_open:
            return RunFailure(INCOMPLETE, "the nccl-tests output stopped after a header, before its first row", final_only=True)
        return None

    def _corruption(self) -> str:
        parts = []
        if self.wrong_elements:
            parts.append(f"{self.wrong_elements} wrong elements in {self.wrong_rows} rows (first at message size {self.wrong_size} B)")
        if self.oob_count or self.oob_failed:
            parts.append(f"'Out of bounds values : {self.oob_count} FAILED'")
        return _cap("nccl-tests found corrupted data: " + "; ".join(parts) + "; its bandwidth is not a valid measurement")


def _cap(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
