"""The controller as users run it (``python -m nvcre.runtime`` in its own process, metrics secure by
default) and the scrapers' identities, for the metrics-auth and Prometheus tests.

:class:`ControllerProcess` is always stopped (SIGTERM, then SIGKILL) when its block ends, and a
failure to become ready shows its log tail.
"""

from __future__ import annotations

import contextlib
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from nvcre.testing.errors import ControlPlaneError
from nvcre.testing.processes import Process, free_port, spawn, wait_ready

REPO = Path(__file__).resolve().parents[2]


class ControllerProcess:
    """``python -m nvcre.runtime`` watching one namespace, with HTTPS metrics on a free port."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path, *extra: str) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.argv = [
            sys.executable,
            "-m",
            "nvcre.runtime",
            f"--kubeconfig={kubeconfig}",
            f"--namespace={namespace}",
            "--no-leader-elect",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            *extra,
        ]
        self.log = log
        self.process: Process | None = None

    @property
    def metrics_url(self) -> str:
        return f"https://127.0.0.1:{self.metrics_port}/metrics"

    def _ready(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=3) as answer:
            return bool(answer.status == 200)

    def start(self, timeout: float = 60.0) -> ControllerProcess:
        self.process = spawn("nvcre-controller", self.argv, cwd=REPO, log=self.log)
        try:
            wait_ready(self.process, self._ready, "the controller's /readyz", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace=15.0)
            self.process = None

    def tail(self) -> str:
        return self.process.tail() if self.process is not None else self.log.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def running_controller(kubeconfig: Path, namespace: str, log: Path, *extra: str) -> Iterator[ControllerProcess]:
    controller = ControllerProcess(kubeconfig, namespace, log, *extra)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


def unverified() -> ssl.SSLContext:
    """TLS without verifying the controller's self-signed certificate (as the ServiceMonitor does)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def scrape(url: str, token: str | None = None) -> tuple[int, str]:
    """GET ``url`` with an optional bearer token: the status and the body (also for 4xx/5xx)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=15, context=unverified()) as answer:
            return answer.status, answer.read(16 * 1024 * 1024).decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read(64 * 1024).decode()


def must_scrape(controller: ControllerProcess, token: str) -> str:
    status, body = scrape(controller.metrics_url, token)
    if status != 200:
        raise ControlPlaneError(f"scrape answered {status}: {body.strip()}; controller log:\n{controller.tail()}")
    return body
