"""Start, watch and stop the control-plane processes: free loopback ports,
log files, readiness polling and death-with-parent on Linux."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import ControlPlaneError

LOG_TAIL_LINES = 40


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _parent_death_hook() -> Callable[[], None] | None:
    """A pre-exec hook making a child get SIGKILL when we die, where Linux allows it."""
    if not os.path.exists("/proc/self"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)

    return hook


@dataclass
class Process:
    """One running component and the file its output goes to."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            with self.log.open(errors="replace") as fh:
                return "".join(deque(fh, maxlen=lines))
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds."""
        if not self.running():
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=grace)


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> Process:
    """Start ``argv`` (no shell) in its own session with output appended to ``log``.

    ``env`` replaces the environment when given (default: inherit ours).
    """
    with log.open("ab") as out:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=_parent_death_hook(),
        )
    return Process(name, popen, log)


def wait_ready(process: Process, ready: Callable[[], bool], what: str, timeout: float) -> None:
    """Poll ``ready`` until true; fail early, with the log tail, if the process exits."""
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        code = process.popen.poll()
        if code is not None:
            raise ControlPlaneError(
                f"{process.name} exited with code {code} before {what} was ready; last lines of {process.log.name}:\n{process.tail()}"
            )
        try:
            if ready():
                return
        except (OSError, ValueError) as exc:
            last_error = str(exc)
        time.sleep(0.2)
    raise ControlPlaneError(f"{what} not ready after {timeout:.0f}s ({last_error}); last lines of {process.log.name}:\n{process.tail()}")
