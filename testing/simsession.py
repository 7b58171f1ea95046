"""Keep a development simulated cluster running and reach it from other commands.

The supervisor is this module run as ``python -m nvcre.testing.simsession`` (in the
foreground, or detached in its own session). It writes ``<cache>/run/simcluster.json``
with its pid, the component pids, the kubeconfig and its working directory, and
serves fault changes: ``request_fault`` drops a request file into
``<cache>/run/simcluster-requests/``, the supervisor applies it with
:meth:`SimCluster.set_fault` (the player lives in the supervisor) and writes the
answer next to it. Stopping means SIGTERM to the supervisor, which then stops
every process it started and removes its working directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import detached
from .detached import alive, clear_state_file, is_recorded, read_state_file, run_dir, started_at, write_json_atomic
from .errors import ControlPlaneError
from .processes import free_port
from .simfaults import FaultError, parse_assignment

__all__ = [
    "CONTROLLER_MODULE",
    "LOG_NAME",
    "REQUESTS_NAME",
    "STATE_NAME",
    "SUPERVISOR_MARKER",
    "SimSessionError",
    "controller_available",
    "main",
    "read_state",
    "request_fault",
    "requests_dir",
    "run_dir",
    "serve",
    "start_detached",
    "state_path",
    "status",
    "stop",
]

STATE_NAME = "simcluster.json"
LOG_NAME = "simcluster.log"
REQUESTS_NAME = "simcluster-requests"
SUPERVISOR_MARKER = "nvcre.testing.simsession"
CONTROLLER_MODULE = "nvcre.runtime"


class SimSessionError(RuntimeError):
    """The development cluster could not be started, found, changed or stopped."""


def state_path() -> Path:
    return run_dir() / STATE_NAME


def requests_dir() -> Path:
    return run_dir() / REQUESTS_NAME


def read_state() -> dict[str, Any] | None:
    """The recorded cluster if its supervisor is alive, else None."""
    state = read_state_file(state_path())
    if state is None:
        return None
    # The supervisor is this module when detached, or `nvcrectl dev up` itself in the foreground.
    return state if is_recorded(state, SUPERVISOR_MARKER) else None


def controller_available() -> bool:
    """Whether the nvcre controller can be started (``python -m nvcre.runtime``)."""
    import importlib.util

    try:
        return importlib.util.find_spec(f"{CONTROLLER_MODULE}.__main__") is not None
    except (ImportError, ValueError):
        return False


def _start_controller(cluster: Any) -> None:
    metrics, health = free_port(), free_port()
    argv = [
        sys.executable, "-m", CONTROLLER_MODULE,
        f"--kubeconfig={cluster.kubeconfig}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--no-leader-elect",
    ]  # fmt: skip
    import urllib.request

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=3) as resp:
            return bool(resp.status == 200)

    cluster.plane.start_process("nvcre-controller", argv, ready=ready, what="nvcre controller /healthz")


def serve(
    *,
    profile: str,
    nodes: int,
    platform: str,
    faults: dict[str, str],
    with_controller: bool = False,
    on_ready: Callable[[Any], None] | None = None,
    system_nodes: int = 0,
) -> int:
    """Run a simulated cluster until interrupted; returns a process exit code."""
    from .simcluster import SimCluster

    existing = read_state()
    if existing is not None:
        raise SimSessionError(
            f"a simulated cluster is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev down`"
        )
    if with_controller and not controller_available():
        raise SimSessionError(f"--with-controller: {CONTROLLER_MODULE} cannot be imported here")
    hold = detached.claim_supervisor()  # makes the run directory too
    if hold is None:
        raise SimSessionError("another development cluster is starting on this machine; wait for it, or stop it with `nvcrectl dev down`")
    shutil.rmtree(requests_dir(), ignore_errors=True)
    requests_dir().mkdir(parents=True)
    cluster = SimCluster(profile=profile, nodes=nodes, platform=platform, faults=faults, root_dir=run_dir(), system_nodes=system_nodes)
    try:
        with cluster:
            if with_controller:
                _start_controller(cluster)
            state = {
                "supervisor_pid": os.getpid(),
                "supervisor_started": started_at(os.getpid()),
                "pids": cluster.pids,
                "kubeconfig": str(cluster.kubeconfig),
                "workdir": str(cluster.workdir),
                "profile": profile,
                "platform": platform or "onprem",
                "nodes": cluster.nodes,
                "gpu_nodes": cluster.gpu_nodes,
                "timings": {k: round(v, 2) for k, v in cluster.timings.items()},
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            write_json_atomic(state_path(), state)
            if on_ready is not None:
                on_ready(cluster)
            while True:
                dead = [n for n, p in cluster.plane.processes.items() if not p.running()]
                if dead:
                    process = cluster.plane.processes[dead[0]]
                    print(f"{dead[0]} exited unexpectedly; last log lines:\n{process.tail()}", file=sys.stderr)
                    return 1
                _serve_requests(cluster)
                time.sleep(0.3)
    except KeyboardInterrupt:
        return 0
    finally:
        _clear_state(os.getpid())
        hold.close()


def _clear_state(pid: int) -> None:
    clear_state_file(state_path(), pid)
    shutil.rmtree(requests_dir(), ignore_errors=True)


def _serve_requests(cluster: Any) -> None:
    from kubernetes.client import ApiException

    for request in sorted(requests_dir().glob("*.request.json")):
        answer_path = request.with_name(request.name.replace(".request.json", ".answer.json"))
        try:
            body = json.loads(request.read_text())
            node, kind = str(body["node"]), str(body["fault"])
            fault = cluster.set_fault(node, kind)
            answer = {"ok": True, "node": node, "fault": str(fault)}
        except (ControlPlaneError, FaultError, KeyError, ValueError) as exc:
            answer = {"ok": False, "error": str(exc)}
        except ApiException as exc:
            answer = {"ok": False, "error": f"the apiserver refused the change: {exc.status} {exc.reason}"}
        request.unlink(missing_ok=True)
        write_json_atomic(answer_path, answer)


def request_fault(spec: str, timeout: float = 15.0) -> dict[str, Any]:
    """Ask the running cluster to apply ``NODE=KIND``; returns its answer."""
    node, fault = parse_assignment(spec)  # FaultError on bad syntax, before anything else
    if read_state() is None:
        raise SimSessionError("no simulated cluster is running; start one with `nvcrectl dev up -d`")
    ident = uuid.uuid4().hex
    write_json_atomic(requests_dir() / f"{ident}.request.json", {"node": node, "fault": str(fault)})
    answer_path = requests_dir() / f"{ident}.answer.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answer_path.exists():
            answer: dict[str, Any] = json.loads(answer_path.read_text())
            answer_path.unlink(missing_ok=True)
            return answer
        time.sleep(0.1)
    raise SimSessionError(f"the simulated cluster did not answer within {timeout:.0f}s")


def status() -> dict[str, Any] | None:
    """The running cluster's state plus live node and process information."""
    state = read_state()
    if state is None:
        return None
    live = {name: alive(int(pid)) for name, pid in (state.get("pids") or {}).items()}
    nodes: list[dict[str, Any]] = []
    try:
        from kubernetes import client, config

        from .simcluster import node_summary

        with config.new_client_from_config(config_file=state["kubeconfig"]) as api_client:  # type: ignore[no-untyped-call]
            raw: Any = client.CoreV1Api(api_client).list_node(label_selector="sim.nvcre.io/profile", _preload_content=False)
        nodes = [node_summary(node) for node in json.loads(raw.data).get("items") or []]
    except Exception as exc:  # the report says what could not be read, never a traceback
        nodes = []
        state["error"] = f"cannot read nodes: {exc}"
    return {**state, "alive": live, "nodes": sorted(nodes, key=lambda n: str(n["name"]))}


def start_detached(
    *,
    profile: str,
    nodes: int,
    platform: str,
    faults: dict[str, str],
    with_controller: bool = False,
    timeout: float = 240.0,
    system_nodes: int = 0,
) -> dict[str, Any]:
    """Start a supervisor in the background and wait until it reports ready."""
    existing = read_state()
    if existing is not None:
        raise SimSessionError(
            f"a simulated cluster is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev down`"
        )
    run_dir().mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", SUPERVISOR_MARKER, f"--profile={profile}", f"--nodes={nodes}", f"--platform={platform}"]
    argv.extend(f"--fault={node}={kind}" for node, kind in faults.items())
    if with_controller:
        argv.append("--with-controller")
    if system_nodes:
        argv.append(f"--system-nodes={system_nodes}")
    return detached.launch(
        argv, run_dir() / LOG_NAME, read_state=read_state, what="simulated cluster", fail=SimSessionError, timeout=timeout
    )


def stop(timeout: float = 40.0) -> dict[str, Any] | None:
    """Stop the recorded cluster and remove its state; returns the state, or None if none ran."""
    state = read_state_file(state_path())
    if state is None:
        return None
    if is_recorded(state, SUPERVISOR_MARKER):
        detached.terminate(int(state.get("supervisor_pid", 0)), timeout)
    # a component is named after its program, with a suffix for its role (jobset-controller, nvcre-controller)
    detached.kill_components(state, lambda name: name.split("-")[0])
    detached.remove_workdir(state)
    state_path().unlink(missing_ok=True)
    shutil.rmtree(requests_dir(), ignore_errors=True)
    (run_dir() / LOG_NAME).unlink(missing_ok=True)
    return state


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Supervise a development simulated GPU cluster.")
    parser.add_argument("--profile", default="h100")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--platform", default="")
    parser.add_argument("--fault", action="append", default=[])
    parser.add_argument("--with-controller", action="store_true")
    parser.add_argument("--system-nodes", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        faults = dict(parse_assignment(spec) for spec in args.fault)
        return serve(
            profile=args.profile,
            nodes=args.nodes,
            platform=args.platform,
            faults={node: str(fault) for node, fault in faults.items()},
            with_controller=args.with_controller,
            system_nodes=args.system_nodes,
        )
    except Exception as exc:  # reported through the log the parent reads
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
