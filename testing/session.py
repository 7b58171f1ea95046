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
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import binaries, detached

# The real-node session and the dev CLI's tests still import these names from here.
from .detached import alive as _alive
from .detached import clear_state_file, read_state_file, run_dir, write_json_atomic
from .detached import is_recorded as _is_recorded
from .detached import log_tail as _tail
from .detached import started_at as _started

__all__ = [
    "LOG_NAME",
    "STATE_NAME",
    "SessionError",
    "_alive",
    "_is_recorded",
    "_started",
    "_tail",
    "clear_state_file",
    "main",
    "read_state",
    "read_state_file",
    "run_dir",
    "serve",
    "start_detached",
    "state_path",
    "stop_detached",
    "write_json_atomic",
]

STATE_NAME = "controlplane.json"
LOG_NAME = "controlplane.log"
#: what the supervisor's command line holds (states of this supervisor carry no start time)
MARKER = "nvcre"


class SessionError(RuntimeError):
    """A detached control plane could not be started, found or stopped."""


def state_path() -> Path:
    return run_dir() / STATE_NAME


def read_state() -> dict[str, Any] | None:
    """The recorded control plane if its supervisor is still alive, else None."""
    state = read_state_file(state_path())
    if state is not None and detached.runs(int(state.get("supervisor_pid", 0)), MARKER):
        return state
    return None


def serve(
    *,
    controllers: bool,
    crd_dirs: Sequence[Path] | None,
    on_ready: Callable[[Any], None] | None = None,
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
            write_json_atomic(
                state_path(),
                {
                    "supervisor_pid": os.getpid(),
                    "pids": plane.pids,
                    "kubeconfig": str(plane.kubeconfig),
                    "server": plane.server,
                    "workdir": str(plane.workdir),
                    "crds": plane.installed_crds,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                },
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
        clear_state_file(state_path(), os.getpid())


def start_detached(*, controllers: bool, crd_dirs: Sequence[Path] | None, timeout: float = 180.0) -> dict[str, Any]:
    """Start a supervisor in the background and wait until it reports ready."""
    existing = read_state()
    if existing is not None:
        raise SessionError(
            f"a control plane is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev controlplane down`"
        )
    binaries.locate(require_controllers=controllers)  # fail here, not in the background
    run_dir().mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "nvcre.testing.session"]
    if controllers:
        argv.append("--controllers")
    if crd_dirs is not None:
        argv.append("--no-default-crds")
        argv.extend(f"--crds={d}" for d in crd_dirs)
    return detached.launch(argv, run_dir() / LOG_NAME, read_state=read_state, what="control plane", fail=SessionError, timeout=timeout)


def stop_detached(timeout: float = 30.0) -> dict[str, Any] | None:
    """Stop the recorded control plane; returns its state, or None if none ran."""
    path = state_path()
    state = read_state_file(path)
    if state is None:
        return None
    supervisor = int(state.get("supervisor_pid", 0))
    if detached.runs(supervisor, MARKER):
        detached.terminate(supervisor, timeout)
    # Components die with their supervisor; make sure of it if it was killed.
    detached.kill_components(state, lambda name: name)
    detached.remove_workdir(state)
    path.unlink(missing_ok=True)
    return state


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
