"""Supervisors that run detached: started in a session of their own, found again through a state
file, and stopped by signal.

The development control plane (:mod:`nvcre.testing.session`) and the simulated cluster
(:mod:`nvcre.testing.simsession`) each run a supervising Python process that writes
``<cache>/run/<name>.json`` once it is ready. This module is what they share: writing and reading
that file whole, telling whether the process it names is still the one that wrote it (by pid and
start time, or by command line for older files), starting a supervisor and waiting for its file,
and stopping it (SIGTERM, then SIGKILL after a grace period) together with the components it
recorded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from . import binaries

__all__ = [
    "SUPERVISOR_LOCK",
    "alive",
    "claim_supervisor",
    "clear_state_file",
    "is_recorded",
    "kill_components",
    "launch",
    "log_tail",
    "read_state_file",
    "remove_workdir",
    "run_dir",
    "runs",
    "started_at",
    "terminate",
    "write_json_atomic",
]

State = dict[str, Any]


def run_dir() -> Path:
    """Where supervisors keep their state files, logs and working directories."""
    return binaries.cache_root() / "run"


#: the lock a development environment's supervisor holds for its whole life (one at a time)
SUPERVISOR_LOCK = "supervisor.lock"


def claim_supervisor() -> IO[bytes] | None:
    """This process's hold on the machine's one development environment, or None when another
    supervisor holds it.

    The state file is written only once an environment is ready, so two ``dev up`` started
    together both found none and both started, and ``dev down`` later stopped only the one the
    state file named. The lock closes that window: an exclusive ``flock`` on a file in the run
    directory, taken before anything starts and released by the kernel when the holder exits,
    however it exits. Keep the returned file open while the environment runs.
    """
    run_dir().mkdir(parents=True, exist_ok=True)
    handle = open(run_dir() / SUPERVISOR_LOCK, "ab")  # noqa: SIM115 - held open for the process's life
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (reaping it first if it is our finished child)."""
    with contextlib.suppress(ChildProcessError):  # not our child: nothing to reap
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> str | None:
    """The command line of ``pid`` where /proc exists, else None (unknown)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        return "" if Path("/proc/self").exists() else None
    except OSError:
        return None


def started_at(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22), or None where unknown.

    A pid with its start time names one process for good: unlike the command line it does not
    depend on how the process was launched, and a reused pid has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def runs(pid: int, marker: str) -> bool:
    """Whether ``pid`` is alive and (where checkable) its command line holds ``marker``."""
    if not alive(pid):
        return False
    cmdline = _cmdline(pid)
    return cmdline is None or marker in cmdline


def is_recorded(state: Mapping[str, Any], marker: str) -> bool:
    """Whether the supervisor ``state`` records is still that process.

    States that carry ``supervisor_started`` are checked by pid and start time; older ones by the
    command line holding ``marker``."""
    pid = int(state.get("supervisor_pid", 0))
    started = state.get("supervisor_started")
    if started is None:
        return runs(pid, marker)
    now = started_at(pid)
    return alive(pid) and (now is None or now == started)


def write_json_atomic(path: Path, state: Mapping[str, Any]) -> None:
    """Write a JSON file whole (a reader never sees half of it): state, requests and answers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def read_state_file(path: Path) -> State | None:
    """A supervisor's state file as written, or None when it is missing or unreadable."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def clear_state_file(path: Path, pid: int) -> None:
    """Remove the state file if the supervisor ``pid`` wrote it (a newer one's is left)."""
    state = read_state_file(path)
    if state is not None and state.get("supervisor_pid") == pid:
        with contextlib.suppress(OSError):
            path.unlink()


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a supervisor's log, for an error message."""
    try:
        with path.open(errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return "(no log)"


def launch(
    argv: Sequence[str],
    log: Path,
    *,
    read_state: Callable[[], State | None],
    what: str,
    fail: Callable[[str], Exception],
    timeout: float,
) -> State:
    """Start ``argv`` in a session of its own (output to ``log``) and wait until the state file
    ``read_state`` reads names it; raises ``fail(message)`` when it exits or is late."""
    with log.open("wb") as out:
        child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise fail(f"the {what} exited with code {code} while starting:\n{log_tail(log)}")
        state = read_state()
        if state is not None and state.get("supervisor_pid") == child.pid:
            return state
        time.sleep(0.3)
    child.terminate()
    raise fail(f"the {what} was not ready after {timeout:.0f}s:\n{log_tail(log)}")


def terminate(pid: int, timeout: float) -> None:
    """SIGTERM ``pid`` (its supervisor then stops what it started); SIGKILL if it outlives ``timeout``."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def kill_components(state: Mapping[str, Any], marker: Callable[[str], str]) -> None:
    """SIGKILL every recorded component still running as itself (``marker(name)`` in its command line)."""
    for name, pid in (state.get("pids") or {}).items():
        if runs(int(pid), marker(name)):
            os.kill(int(pid), signal.SIGKILL)


def remove_workdir(state: Mapping[str, Any]) -> None:
    """Remove the recorded working directory, only when it lies directly under :func:`run_dir`."""
    workdir = state.get("workdir")
    if workdir and Path(workdir).is_dir() and Path(workdir).parent == run_dir():
        shutil.rmtree(workdir, ignore_errors=True)
