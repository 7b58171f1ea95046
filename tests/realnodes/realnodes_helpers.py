"""What the real-node test modules share: one started environment, and the installed CLI against it.

``Environment`` is what a fixture hands its tests: the running cluster, the host as it was before
it started, and the sampler of the stack's peak memory (None where nothing samples it).

``started`` builds what is missing, snapshots the host, starts the real nodes (with the workload
image and, by default, JobSet, the Trainer and the nvcre controller) and stops them however the
module ends; a start that fails fails the module with the reason, not a traceback. ``nvcrectl``
runs the installed command as a user does, with the environment's kubeconfig. ``trouble``
says what went wrong in a namespace (its Warning events, the failed pods' state and the tail of
their logs), so a test that fails on a real node's verdict shows what the nodes reported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Environment:
    """A started environment, the host as it was before it, and its memory sampler."""

    cluster: Any
    host_before: dict[str, Any]
    sampler: Any = None


@contextlib.contextmanager
def started(request: pytest.FixtureRequest, *, nodes: int, controllers: bool = True) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(the running environment, the host as it was before it started); stopped on the way out."""
    from nvcre.testing.errors import ControlPlaneError
    from nvcre.testing.pytest_plugin import _ensure_real_built, _ensure_sim_built
    from nvcre.testing.realnodes import hoststate
    from nvcre.testing.realnodes.cluster import RealCluster
    from nvcre.testing.realnodes.images import ImageError

    _ensure_real_built(request)
    if controllers:
        _ensure_sim_built(request)
    before = hoststate.snapshot()
    cluster = RealCluster(profile_name="h100", nodes=nodes, workload_images=True, controllers=controllers)
    try:
        cluster.start()
    except ImageError as exc:
        pytest.fail(f"the workload image could not be built: {exc}", pytrace=False)
    except ControlPlaneError as exc:
        pytest.fail(f"the real-node environment did not start: {exc}", pytrace=False)
    try:
        yield cluster, before
    finally:
        cluster.stop()


def nvcrectl(cluster: Any, *args: str, timeout: float = 480) -> subprocess.CompletedProcess[str]:
    """The installed CLI, run as a user runs it, against the environment's API server."""
    binary = str(Path(sys.executable).with_name("nvcrectl"))
    environ = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run([binary, *args], env=environ, capture_output=True, text=True, timeout=timeout, check=False)


#: the log lines ``trouble`` keeps of each pod that did not succeed, and the events it lists at most
LOG_TAIL = 15
EVENT_LIMIT = 40


def trouble(cluster: Any, namespace: str, *, limit: int = 12) -> str:
    """What went wrong in ``namespace``: its Warning events (they outlive the Jobs and pods a
    diagnose deletes between rounds), then the pods still there that ended in failure or have a
    container that exited non-zero, with each such container's exit and the last ``LOG_TAIL``
    lines of its log; at most ``limit`` pods, the newest first."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    lines: list[str] = []
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        events = [e for e in core.list_namespaced_event(namespace).items if e.type == "Warning"]
        events.sort(key=lambda e: str(e.last_timestamp or e.event_time or e.metadata.creation_timestamp))
        for event in events[-EVENT_LIMIT:]:
            involved = event.involved_object
            lines.append(f"event {event.reason} x{event.count or 1} {involved.kind}/{involved.name}: {event.message}")
        pods = core.list_namespaced_pod(namespace).items
        pods.sort(key=lambda p: p.metadata.creation_timestamp, reverse=True)
        shown = 0
        for pod in pods:
            ended = [
                s for s in (pod.status.container_statuses or [])
                if (s.state.terminated and s.state.terminated.exit_code) or (s.last_state.terminated and s.last_state.terminated.exit_code)
            ]  # fmt: skip
            if pod.status.phase != "Failed" and not ended:
                continue
            if shown == limit:
                lines.append("(more pods left out)")
                break
            shown += 1
            lines.append(f"pod {pod.metadata.name} on {pod.spec.node_name}: {pod.status.phase} {pod.status.reason or ''}".rstrip())
            for status in ended:
                end = status.state.terminated or status.last_state.terminated
                lines.append(f"  {status.name}: exit {end.exit_code} {end.reason or ''} restarts {status.restart_count}")
                try:
                    log = core.read_namespaced_pod_log(pod.metadata.name, namespace, container=status.name, tail_lines=LOG_TAIL)
                except ApiException as exc:
                    log = f"(no log: {exc.reason})"
                lines += [f"    {line}" for line in str(log).splitlines()[-LOG_TAIL:]]
    return "\n".join(lines) or f"no warning event and no failed pod in {namespace}"


def start_interruptible(argv: list[str]) -> subprocess.Popen[str]:
    """Start a command a test will Ctrl-C, with SIGINT as a user's terminal gives it. A test run
    started in the background (a CI job's ``&``, ``nohup``) has SIGINT ignored, a child inherits
    that, and Python then never installs its KeyboardInterrupt handler; a handler, unlike an
    ignored signal, is reset to the default when the child starts."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt(up: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """Ctrl-C for a foreground command; its output. One still running ``timeout`` seconds later is
    terminated (then killed) so the test never leaves it behind, and the test fails."""
    up.send_signal(signal.SIGINT)
    try:
        return up.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        up.terminate()
        try:
            up.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            up.kill()
            up.communicate()
        raise AssertionError(f"the command did not end within {timeout:.0f} s of Ctrl-C") from None
