"""Prometheus next to the development simulated cluster (``nvcrectl dev up --with-prometheus``).

It scrapes the cluster's controller over HTTPS with the token of ServiceAccount
``default/nvcre-dev-prometheus``, bound to the install's ``nvcre-metrics-reader`` ClusterRole (what
a cluster's Prometheus needs), and evaluates the alert rules the install ships. In the foreground
it is one more process of the control plane and stops with it. Detached, the supervisor runs in
another process, so Prometheus is started on its own session and recorded in the run directory;
``nvcrectl dev down`` stops the recorded process (after checking the pid is still that
Prometheus) and removes its files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Sequence

from .detached import read_state_file
from .errors import ControlPlaneError
from .processes import free_port
from .prometheus import ScrapeTarget, is_ready, prometheus_argv, prometheus_config

__all__ = ["READER", "configure", "controller_metrics_address", "prometheus_binary", "start_detached", "stop_detached"]

READER = ("default", "nvcre-dev-prometheus")
STATE_NAME = "prometheus.json"
TOKEN_SECONDS = 24 * 3600


def prometheus_binary() -> Path:
    """The Prometheus build of testing/gobuild/build.py, built first when it is missing."""
    from . import binaries

    module = binaries.build_module()
    if module.tool_missing("prometheus"):
        if module.find_go() is None:
            raise ControlPlaneError("prometheus is not built and there is no Go toolchain to build it")
        module.build_tool("prometheus")
    return Path(module.tool_binary_path("prometheus", "prometheus"))


def controller_metrics_address(argv: Sequence[str]) -> str:
    """``host:port`` of ``--metrics-bind-address`` in a controller's command line."""
    args = list(argv)
    for index, arg in enumerate(args):
        if arg.startswith("--metrics-bind-address="):
            return arg.split("=", 1)[1]
        if arg == "--metrics-bind-address" and index + 1 < len(args):
            return args[index + 1]
    raise ControlPlaneError("the controller's command line has no --metrics-bind-address")


def configure(kubeconfig: Path, metrics_address: str, workdir: Path) -> Path:
    """The reader identity and its token file, and the configuration file; returns the configuration."""
    from nvcre.compiler.install.monitoring import ALERT_RULES_FILE
    from nvcre.runtime.kube.client import ApiServerClient

    from .metrics_reader import grant_metrics_reader, request_token, write_token

    namespace, name = READER
    kube = ApiServerClient.from_kubeconfig(str(kubeconfig))
    try:
        grant_metrics_reader(kube, namespace, name)
    finally:
        kube.close()
    workdir.mkdir(parents=True, exist_ok=True)
    token_file = write_token(request_token(kubeconfig, namespace, name, seconds=TOKEN_SECONDS), workdir / "token")
    config = workdir / "prometheus.yml"
    target = ScrapeTarget(metrics_address, token_file=token_file)
    config.write_text(json.dumps(prometheus_config([target], [ALERT_RULES_FILE], interval="5s"), indent=2) + "\n")
    return config


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def start_detached(run_dir: Path, kubeconfig: Path, controller_pid: int, timeout: float = 60.0) -> str:
    """Start Prometheus outliving this process for the controller ``controller_pid``; its URL."""
    if (run_dir / STATE_NAME).exists():
        stop_detached(run_dir)
    workdir = run_dir / "prometheus"
    binary = prometheus_binary()
    config = configure(kubeconfig, controller_metrics_address(_cmdline(controller_pid)), workdir)
    port = free_port()
    argv = prometheus_argv(binary, config, workdir / "data", port)
    with (workdir / "prometheus.log").open("ab") as log:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    (run_dir / STATE_NAME).write_text(json.dumps({"pid": child.pid, "binary": str(binary), "url": url, "workdir": str(workdir)}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            stop_detached(run_dir)
            raise ControlPlaneError(f"prometheus exited with code {child.returncode}; see {workdir / 'prometheus.log'}")
        with contextlib.suppress(OSError):  # not listening yet
            if is_ready(url):
                return url
        time.sleep(0.3)
    stop_detached(run_dir)
    raise ControlPlaneError(f"prometheus was not ready after {timeout:.0f}s")


def stop_detached(run_dir: Path, grace: float = 10.0) -> dict[str, Any] | None:
    """Stop the recorded Prometheus (only if its pid still runs that binary) and remove its files."""
    state = read_state_file(run_dir / STATE_NAME)
    if state is None:
        return None
    pid = int(state.get("pid") or 0)
    if pid > 0 and _cmdline(pid)[:1] == [str(state.get("binary"))]:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _cmdline(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _cmdline(pid):
            os.kill(pid, signal.SIGKILL)
    workdir = Path(str(state.get("workdir") or ""))
    if workdir.parent == run_dir and workdir.is_dir():
        shutil.rmtree(workdir, ignore_errors=True)
    (run_dir / STATE_NAME).unlink(missing_ok=True)
    return state
