"""Keep a development real-node environment running (``nvcrectl dev up --real``) and reach it
from other commands, like :mod:`nvcre.testing.simsession` does for the simulated cluster.

The supervisor is this module run as ``python -m nvcre.testing.realnodes.session`` (detached in
its own session) or ``nvcrectl dev up --real`` itself in the foreground. It writes
``<cache>/run/realnodes.json`` with its pid, the component pids, the kubeconfig, the working
directory and the network namespace. Stopping means SIGTERM to the supervisor, which stops every
process and puts the host back; if the supervisor is gone, :func:`stop` finishes the teardown from
the record the environment keeps in its working directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import detached
from ..errors import ControlPlaneError
from ..session import _alive, _is_recorded, _started, _tail, clear_state_file, read_state_file, run_dir, write_json_atomic
from .cluster import RealCluster, teardown_from_record
from .faults import RealFaultError, parse_real_assignment

STATE_NAME = "realnodes.json"
LOG_NAME = "realnodes.log"
REQUESTS_NAME = "realnodes-requests"
SUPERVISOR_MARKER = "nvcre.testing.realnodes.session"


class RealSessionError(RuntimeError):
    """The development real-node environment could not be started, found or stopped."""


def state_path() -> Path:
    return run_dir() / STATE_NAME


def requests_dir() -> Path:
    return run_dir() / REQUESTS_NAME


def read_state() -> dict[str, Any] | None:
    """The recorded environment if its supervisor is alive, else None."""
    state = read_state_file(state_path())
    if state is None:
        return None
    return state if _is_recorded(state, SUPERVISOR_MARKER) else None


def _state_of(cluster: RealCluster) -> dict[str, Any]:
    return {
        "supervisor_pid": os.getpid(),
        "supervisor_started": _started(os.getpid()),
        "kind": "real",
        "pids": cluster.pids,
        "kubeconfig": str(cluster.kubeconfig),
        "workdir": str(cluster.workdir),
        "netns": str(cluster.netns),
        "profile": cluster.profile.name,
        "platform": cluster.platform or "onprem",
        "nodes": cluster.node_names,
        "gpu_nodes": cluster.node_names,
        "timings": cluster.timings,
        "faults": {node: str(fault) for node, fault in cluster.faults.items()},
        "controller": cluster.with_controllers,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def serve(
    *,
    profile: str,
    nodes: int,
    platform: str,
    on_ready: Callable[[RealCluster], None] | None = None,
    workload_images: bool = True,
    with_controller: bool = False,
    faults: Mapping[str, str] | None = None,
) -> int:
    """Run a real-node environment until interrupted; returns a process exit code.

    ``workload_images`` imports the catalog's workload image (:mod:`.workload_images`) into every node;
    ``with_controller`` also runs JobSet, the Trainer and the nvcre controller (:mod:`.controllers`);
    ``faults`` (node to fault) are put on their nodes once the environment is up, before it is
    reported ready."""
    existing = read_state()
    if existing is not None:
        raise RealSessionError(
            f"a real-node environment is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev down`"
        )
    hold = detached.claim_supervisor()  # makes the run directory too
    if hold is None:
        raise RealSessionError(
            "another development environment is starting on this machine; wait for it, or stop it with `nvcrectl dev down`"
        )
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # a SIGTERM unwinds like Ctrl-C, through the teardown
        signal.signal(signal.SIGTERM, _interrupt)
    cluster = RealCluster(
        profile_name=profile,
        nodes=nodes,
        platform=platform,
        root_dir=run_dir(),
        workload_images=workload_images,
        controllers=with_controller,
    )
    shutil.rmtree(requests_dir(), ignore_errors=True)
    requests_dir().mkdir(parents=True)
    try:
        with cluster:
            for node, fault in (faults or {}).items():
                cluster.set_fault(node, fault)
            write_json_atomic(state_path(), _state_of(cluster))
            if on_ready is not None:
                on_ready(cluster)
            while True:
                dead = [name for name, process in {**cluster.processes, **(cluster.plane.processes if cluster.plane else {})}.items()
                        if not process.running()]  # fmt: skip
                if dead:
                    print(f"{dead[0]} exited unexpectedly", file=sys.stderr)
                    return 1
                _serve_requests(cluster)
                time.sleep(0.3)
    except KeyboardInterrupt:
        return 0
    finally:
        _clear_state(os.getpid())
        shutil.rmtree(requests_dir(), ignore_errors=True)
        hold.close()


def _serve_requests(cluster: RealCluster) -> None:
    for request in sorted(requests_dir().glob("*.request.json")):
        answer_path = request.with_name(request.name.replace(".request.json", ".answer.json"))
        try:
            body = json.loads(request.read_text())
            node, kind = str(body["node"]), str(body["fault"])
            fault = cluster.set_fault(node, kind)
            answer = {"ok": True, "node": node, "fault": str(fault)}
            write_json_atomic(state_path(), {**_state_of(cluster), "started": json.loads(state_path().read_text()).get("started")})
        except (ControlPlaneError, RealFaultError, KeyError, ValueError) as exc:
            answer = {"ok": False, "error": str(exc)}
        request.unlink(missing_ok=True)
        write_json_atomic(answer_path, answer)


def request_fault(spec: str, timeout: float = 15.0) -> dict[str, Any]:
    """Ask the running environment to apply ``NODE=KIND``; returns its answer."""
    node, fault = parse_real_assignment(spec)  # RealFaultError on bad syntax, before anything else
    if read_state() is None:
        raise RealSessionError("no real-node environment is running; start one with `nvcrectl dev up --real -d`")
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
    raise RealSessionError(f"the real-node environment did not answer within {timeout:.0f}s")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"received signal {signum}")


def _clear_state(pid: int) -> None:
    clear_state_file(state_path(), pid)


def start_detached(
    *,
    profile: str,
    nodes: int,
    platform: str,
    with_controller: bool = False,
    faults: Mapping[str, str] | None = None,
    timeout: float = 420.0,
) -> dict[str, Any]:
    """Start a supervisor in the background and wait until it reports ready (with ``faults`` on)."""
    existing = read_state()
    if existing is not None:
        raise RealSessionError(
            f"a real-node environment is already running (pid {existing['supervisor_pid']}); stop it with `nvcrectl dev down`"
        )
    run_dir().mkdir(parents=True, exist_ok=True)
    log = run_dir() / LOG_NAME
    argv = [sys.executable, "-m", SUPERVISOR_MARKER, f"--profile={profile}", f"--nodes={nodes}", f"--platform={platform}"]
    if with_controller:
        argv.append("--with-controller")
    argv += [f"--fault={node}={fault}" for node, fault in (faults or {}).items()]
    with log.open("wb") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise RealSessionError(f"the real-node environment exited with code {code} while starting:\n{_tail(log)}")
        state = read_state()
        if state is not None and state.get("supervisor_pid") == child.pid:
            return state
        time.sleep(0.3)
    child.terminate()
    raise RealSessionError(f"the real-node environment was not ready after {timeout:.0f}s (it is being stopped):\n{_tail(log)}")


def stop(timeout: float = 120.0) -> dict[str, Any] | None:
    """Stop the recorded environment and put the host back; returns its state, or None if none ran.

    Raises :class:`RealSessionError` when something could not be undone (the message lists it)."""
    try:
        state: dict[str, Any] = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return None
    supervisor = int(state.get("supervisor_pid", 0))
    if _is_recorded(state, SUPERVISOR_MARKER):
        detached.terminate(supervisor, timeout)
    problems: list[str] = []
    workdir = Path(str(state.get("workdir") or ""))
    if state.get("workdir") and workdir.is_dir() and workdir.parent == run_dir():
        problems = teardown_from_record(workdir)
    state_path().unlink(missing_ok=True)
    (run_dir() / LOG_NAME).unlink(missing_ok=True)
    shutil.rmtree(requests_dir(), ignore_errors=True)
    if problems:
        raise RealSessionError("; ".join(problems))
    return state


def status() -> dict[str, Any] | None:
    """The running environment's state plus live node and process information."""
    state = read_state()
    if state is None:
        return None
    live = {name: _alive(int(pid)) for name, pid in (state.get("pids") or {}).items()}
    nodes: list[dict[str, Any]] = []
    try:
        from kubernetes import client, config

        with config.new_client_from_config(config_file=state["kubeconfig"]) as api_client:  # type: ignore[no-untyped-call]
            raw: Any = client.CoreV1Api(api_client).list_node(_preload_content=False)
        nodes = [node_summary(node) for node in json.loads(raw.data).get("items") or []]
    except Exception as exc:  # the report says what could not be read, never a traceback
        state["error"] = f"cannot read nodes: {exc}"
    nodes = _with_faults(nodes, state.get("faults") or {})
    return {**state, "alive": live, "nodes": sorted(nodes, key=lambda n: str(n["name"]))}


def node_summary(node: dict[str, Any]) -> dict[str, Any]:
    """Name, readiness, GPUs and addresses of a real node (from its JSON)."""
    metadata, status_ = node.get("metadata") or {}, node.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status_.get("conditions") or []}
    addresses = {a.get("type"): a.get("address") for a in status_.get("addresses") or []}
    labels = metadata.get("labels") or {}
    return {
        "name": metadata.get("name"),
        "profile": labels.get("sim.nvcre.io/profile", ""),
        "ready": conditions.get("Ready") == "True",
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "gpus": (status_.get("allocatable") or {}).get("nvidia.com/gpu", "0"),
        "ip": addresses.get("InternalIP", ""),
        "runtime": (status_.get("nodeInfo") or {}).get("containerRuntimeVersion", ""),
        "fault": "none",
    }


def _with_faults(nodes: list[dict[str, Any]], faults: dict[str, str]) -> list[dict[str, Any]]:
    return [{**node, "fault": faults.get(str(node["name"]), "none")} for node in nodes]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Supervise a development real-node environment.")
    parser.add_argument("--profile", default="h100")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--platform", default="")
    parser.add_argument("--no-workload-images", action="store_true", help="import only the sandbox and test images")
    parser.add_argument("--with-controller", action="store_true", help="also run JobSet, the Trainer and the nvcre controller")
    parser.add_argument("--fault", action="append", default=[], help="NODE=KIND put on once the environment is up (repeatable)")
    args = parser.parse_args(argv)
    try:
        faults = dict(parse_real_assignment(spec) for spec in args.fault)
    except RealFaultError as exc:
        print(f"error: --fault: {exc}", file=sys.stderr)
        return 2
    try:
        return serve(
            profile=args.profile,
            nodes=args.nodes,
            platform=args.platform,
            workload_images=not args.no_workload_images,
            with_controller=args.with_controller,
            faults={node: str(fault) for node, fault in faults.items()},
        )
    except Exception as exc:  # reported through the log the parent reads
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
