"""Keep a development control plane running, in the foreground or detached,
and find or stop it again through a state file in the cache directory.

The state file (``<cache>/run/controlplane.json``) records the supervising
Python process, the component pids, the kubeconfig and the working
directory. A detached control plane is this module run as
``python -m nvcre.testing.session`` in its own session; stopping it means
sending SIGTERM to that supervisor, which then shuts the components down.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Sequence

from . import binaries

STATE_NAME = "controlplane.json"
LOG_NAME = "controlplane.log"


class SessionError(RuntimeError):
    """A detached control plane could not be started, found or stopped."""


def run_dir() -> Path:
    return binaries.cache_root() / "run"


def state_path() -> Path:
    return run_dir() / STATE_NAME


def _alive(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        if finished == pid:
            return False
    except ChildProcessError:
        pass
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


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22), or None where unknown.

    A pid with its start time names one process for good: unlike the command line it does not
    depend on how the process was launched, and a reused pid has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def _is_recorded(state: dict, marker: str) -> bool:
    """Whether the supervisor ``state`` records is still that process.

    States that carry ``supervisor_started`` are checked by pid and start time; older ones by the
    command line holding ``marker``."""
    pid = int(state.get("supervisor_pid", 0))
    started = state.get("supervisor_started")
    if started is None:
        return _is(pid, marker)
    now = _started(pid)
    return _alive(pid) and (now is None or now == started)


def _is(pid: int, marker: str) -> bool:
    """Whether ``pid`` is alive and (where checkable) still runs ``marker``."""
    if not _alive(pid):
        return False
    cmdline = _cmdline(pid)
    return cmdline is None or marker in cmdline


def write_json_atomic(path: Path, state: dict[str, Any]) -> None:
    """Write a JSON file whole (a reader never sees half of it): state, requests and answers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def read_state_file(path: Path) -> dict[str, Any] | None:
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


def read_state() -> dict | None:
    """The recorded control plane if its supervisor is still alive, else None."""
    state = read_state_file(state_path())
    if state is not None and _is(int(state.get("supervisor_pid", 0)), "nvcre"):
        return state
    return None


def _write_state(state: dict) -> None:
    write_json_atomic(state_path(), state)


def _clear_state(pid: int) -> None:
    clear_state_file(state_path(), pid)


def serve(
    *,
    controllers: bool,
    crd_dirs: Sequence[Path] | None,
    on_ready: Callable[[object], None] | None = None,
) -> int:
    """Run a control plane until interrupted; returns a process exit code."""
    from .controlplane import ControlPlane

    existing = read_state()
    if existing is not None:
        raise SessionError(
            f"a control plane is already running (pid {existing['supervisor_pid']}, "
            f"KUBECONFIG={existing['kubeconfig']}); stop it with `nvcrectl dev controlplane down`"
        )
    run_dir().mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(controllers=controllers, crd_dirs=crd_dirs, root_dir=run_dir())
    try:
        with plane:
            # ControlPlane turned SIGTERM into KeyboardInterrupt for this thread.
            _write_state(
                {
                    "supervisor_pid": os.getpid(),
                    "pids": plane.pids,
                    "kubeconfig": str(plane.kubeconfig),
                    "server": plane.server,
                    "workdir": str(plane.workdir),
                    "crds": plane.installed_crds,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                }
            )
            if on_ready is not None:
                on_ready(plane)
            while True:
                dead = [n for n, p in plane.processes.items() if p.popen.poll() is not None]
                if dead:
                    name = dead[0]
                    print(
                        f"{name} exited unexpectedly; last log lines:\n{plane.processes[name].tail()}",
                        file=sys.stderr,
                    )
                    return 1
                time.sleep(1)
    except KeyboardInterrupt:
        return 0
    finally:
        _clear_state(os.getpid())


def start_detached(*, controllers: bool, crd_dirs: Sequence[Path] | None, timeout: float = 180.0) -> dict:
    """Start a supervisor in the background and wait until it reports ready."""
    existing = read_state()
    if existing is not None:
        raise SessionError(
            f"a control plane is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev controlplane down`"
        )
    binaries.locate(require_controllers=controllers)  # fail here, not in the background
    run_dir().mkdir(parents=True, exist_ok=True)
    log = run_dir() / LOG_NAME
    argv = [sys.executable, "-m", "nvcre.testing.session"]
    if controllers:
        argv.append("--controllers")
    if crd_dirs is not None:
        argv.append("--no-default-crds")
        argv.extend(f"--crds={d}" for d in crd_dirs)
    with log.open("wb") as out:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise SessionError(f"the control plane exited with code {code} while starting:\n{_tail(log)}")
        state = read_state()
        if state is not None and state.get("supervisor_pid") == child.pid:
            return state
        time.sleep(0.3)
    child.terminate()
    raise SessionError(f"the control plane was not ready after {timeout:.0f}s:\n{_tail(log)}")


def stop_detached(timeout: float = 30.0) -> dict | None:
    """Stop the recorded control plane; returns its state, or None if none ran."""
    path = state_path()
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    supervisor = int(state.get("supervisor_pid", 0))
    if _is(supervisor, "nvcre"):
        os.kill(supervisor, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(supervisor) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(supervisor):
            os.kill(supervisor, signal.SIGKILL)
    # Components die with their supervisor; make sure of it if it was killed.
    for name, pid in (state.get("pids") or {}).items():
        if _is(int(pid), name):
            os.kill(int(pid), signal.SIGKILL)
    workdir = state.get("workdir")
    if workdir and Path(workdir).is_dir() and Path(workdir).parent == run_dir():
        shutil.rmtree(workdir, ignore_errors=True)
    path.unlink(missing_ok=True)
    return state


def _tail(path: Path, lines: int = 30) -> str:
    try:
        with path.open(errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return "(no log)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Supervise a development control plane.")
    parser.add_argument("--controllers", action="store_true")
    parser.add_argument("--no-default-crds", action="store_true")
    parser.add_argument("--crds", action="append", default=[], type=Path)
    args = parser.parse_args(argv)
    crd_dirs = args.crds if args.no_default_crds else None
    try:
        return serve(controllers=args.controllers, crd_dirs=crd_dirs)
    except Exception as exc:  # reported through the log the parent reads
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
