"""The catalog's MPI workload on real nodes: the workload image sits in every node's containerd
under the name the catalog renders (built once, reused), and the pods the catalog renders for
``communication/nccl-all-reduce`` — the worker's sshd bootstrap and readiness probe, the
launcher's key fix-up and wait-for-workers init containers, the ``mpirun`` line — run unchanged
on two real nodes, named and wired the way JobSet and the Trainer name and wire them. The CPU
stand-in for nccl-tests then moves real data between the nodes over TCP, and nvcre's own parser
with the catalog's ``nccl-bandwidth`` LogProfile reads what it measured from the launcher's log."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realnodes.realnodes_helpers import Environment

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

REPO = Path(__file__).resolve().parents[3]
JOBSET = "cert"  # the JobSet (and TrainJob) name the pods carry, as the Trainer would name them
SSH_SECRET = "cert-mpi-ssh"
CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: cpu-standin
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
  categories:
  - domain: communication
    variant: nccl-all-reduce
    options:
      nodesPerJob: 2
      gpusPerNode: 2
      maxBytes: 1M
      numIterations: 5
      numCycles: 1
"""


@pytest.fixture(scope="module")
def workload_cluster(env: Environment) -> Any:
    """The package's shared two nodes; the pods here are made by hand in a namespace of their own,
    beside (and unseen by) the controllers that run there."""
    return env.cluster


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Workflow the catalog renders for the Certification above (onprem, h100), via the CLI."""
    path = tmp_path_factory.mktemp("cert") / "cert.yaml"
    path.write_text(CERTIFICATION)
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    done = subprocess.run(
        [nvcrectl, "certification", "render", str(path), "--platform", "onprem", "--gpu-arch", "h100"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    [workflow] = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    return dict(workflow)


def _runtime_jobs(workflow: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [runtime] = [d for d in workflow["spec"]["dependencies"] if d["kind"] == "TrainingRuntime"]
    return {job["name"]: job["template"]["spec"]["template"]["spec"] for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]}


def _trainer(workflow: dict[str, Any]) -> dict[str, Any]:
    return dict(workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"])


def _core(cluster: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(cluster.api_client())


def _ssh_secret() -> dict[str, str]:
    """What the Trainer's MPI plugin puts in its ssh Secret: a key pair and authorized_keys."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + "\n"
    return {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public}


def _wait_phase(core: Any, namespace: str, names: list[str], done: Any, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    pods: dict[str, Any] = {}
    while time.monotonic() < deadline:
        pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
        if all(name in pods and done(pods[name]) for name in names):
            return pods
        if any(p.status.phase == "Failed" for p in pods.values()):
            break
        time.sleep(1)
    states = {n: (p.status.phase, [(c.name, c.state) for c in p.status.container_statuses or []]) for n, p in pods.items()}
    logs = {n: core.read_namespaced_pod_log(n, namespace, container="node")[-3000:] for n in pods}
    raise AssertionError(f"pods did not get there: {states}\nlogs: {logs}")


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


# Long: builds the two worker pods and the launcher pod from the rendered runtime, field by field as
# JobSet and the Trainer fill them in, so the test shows exactly what comes from the catalog.
@pytest.fixture(scope="module")
def mpi_run(workload_cluster: Any, rendered: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    """The rendered MPI job run to completion; yields (the launcher pod, its log).

    The launcher is created once both workers are Ready by the rendered readiness probe (a real
    ssh session), as a JobSet started in order would; this render has no gang scheduler, so the
    catalog adds no wait-for-workers init container."""
    core = _core(workload_cluster)
    namespace = f"mpi-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    jobs, trainer = _runtime_jobs(rendered), _trainer(rendered)
    labels = {"jobset.sigs.k8s.io/jobset-name": JOBSET}
    core.create_namespaced_secret(namespace, {"metadata": {"name": SSH_SECRET}, "stringData": _ssh_secret()})
    core.create_namespaced_service(
        namespace,
        {"metadata": {"name": JOBSET}, "spec": {"clusterIP": "None", "selector": labels, "publishNotReadyAddresses": True}},
    )
    slots = trainer["numProcPerNode"]
    hosts = [f"{JOBSET}-node-0-{index}" for index in range(trainer["numNodes"])]
    hostfile = "".join(f"{host}.{JOBSET}.{namespace}.svc.cluster.local slots={slots}\n" for host in hosts)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{JOBSET}-mpi-hostfile"}, "data": {"hostfile": hostfile}})
    ssh_volume = {"name": "mpi-ssh-auth", "secret": {"secretName": SSH_SECRET}}
    tolerate = [{"operator": "Exists"}]
    worker = jobs["node"]
    [node_container] = worker["containers"]
    for index, host in enumerate(hosts):
        spec = {
            "hostname": host,
            "subdomain": JOBSET,
            "nodeSelector": {"kubernetes.io/hostname": workload_cluster.node_names[index]},  # one worker per node
            "tolerations": tolerate,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {**node_container, "volumeMounts": [*node_container["volumeMounts"], {"name": "dshm", "mountPath": "/dev/shm"}]}
            ],
            "volumes": [ssh_volume, {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        }
        core.create_namespaced_pod(namespace, {"metadata": {"name": host, "labels": labels}, "spec": spec})
    launcher = jobs["launcher"]
    [launcher_container] = launcher["containers"]
    main = {
        **launcher_container,
        "image": trainer["image"],
        "command": trainer["command"],
        "args": trainer["args"],
        "env": [
            {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
            {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        ],
        "volumeMounts": [*launcher_container["volumeMounts"], {"name": "mpi-hostfile", "mountPath": "/etc/mpi"}],
    }
    spec = {
        "hostname": f"{JOBSET}-launcher-0-0",
        "subdomain": JOBSET,
        "tolerations": tolerate,
        "restartPolicy": "Never",
        "initContainers": launcher["initContainers"],
        "containers": [main],
        "volumes": [*launcher["volumes"], ssh_volume, {"name": "mpi-hostfile", "configMap": {"name": f"{JOBSET}-mpi-hostfile"}}],
    }
    _wait_phase(core, namespace, hosts, _ready, 180)
    core.create_namespaced_pod(namespace, {"metadata": {"name": "launcher", "labels": labels}, "spec": spec})
    pods = _wait_phase(core, namespace, ["launcher"], lambda p: p.status.phase == "Succeeded", 300)
    log = core.read_namespaced_pod_log("launcher", namespace, container="node")
    yield pods["launcher"], log
    if workload_cluster.running:
        core.delete_namespace(namespace)


def test_the_workload_image_is_on_every_node_under_the_rendered_name(workload_cluster: Any, rendered: dict[str, Any]) -> None:
    wanted = {_trainer(rendered)["image"]} | {c["image"] for spec in _runtime_jobs(rendered).values() for c in spec["containers"]}
    assert wanted == {"nvcr.io/nvidia/pytorch:26.01-py3"}
    for node in _core(workload_cluster).list_node().items:
        names = {name for image in node.status.images or [] for name in image.names or []}
        assert wanted <= names, (node.metadata.name, sorted(names))


def test_a_second_build_reuses_the_cached_image(workload_cluster: Any) -> None:
    from nvcre.testing.realnodes import workload_images

    assert workload_images.cached()
    archive = workload_cluster.workload_image.archive
    before = archive.stat().st_mtime_ns
    start = time.monotonic()
    again = workload_images.workload_image()
    assert again.archive == archive and archive.stat().st_mtime_ns == before
    assert time.monotonic() - start < 10


def test_the_rendered_mpi_job_runs_unchanged_and_the_launcher_log_holds_the_standins_table(
    mpi_run: tuple[Any, str], rendered: dict[str, Any]
) -> None:
    launcher, log = mpi_run
    inits = [c["name"] for c in _runtime_jobs(rendered)["launcher"]["initContainers"]]
    assert [(s.name, s.state.terminated.exit_code) for s in launcher.status.init_container_statuses] == [(n, 0) for n in inits]
    assert "nccl-tests CPU stand-in" in log and "no GPU and no NCCL" in log
    hosts = {line.split(" on ", 1)[1].split()[0] for line in log.splitlines() if line.startswith("#  Rank ")}
    assert hosts == {f"{JOBSET}-node-0-0", f"{JOBSET}-node-0-1"}, log  # ranks ran in both workers, on both nodes
    assert log.count("NCCL INFO Using network Socket") == 4  # -N 2 per node, NCCL_DEBUG=INFO passed with -x


def test_nvcres_parser_reads_the_standins_real_run_with_the_catalogs_log_profile(mpi_run: tuple[Any, str]) -> None:
    from nvcre.runtime.measure.nccl import parse_bandwidth

    _, log = mpi_run
    profile = yaml.safe_load((REPO / "catalog" / "logprofiles" / "nccl-bandwidth.yaml").read_text())
    parsed = parse_bandwidth(log, profile["spec"])
    assert parsed.failure is None and parsed.wrong_elements == 0
    assert [row.size_bytes for row in parsed.results] == [8 << k for k in range(18)]  # -b 8 -e 1M -f 2
    assert all(row.samples == 1 for row in parsed.results)  # -N 1: one row per size
    assert parsed.transport == ("Socket",)
    assert parsed.avg_bus_bandwidth is not None and parsed.avg_bus_bandwidth > 0
    assert max(row.bus_bw for row in parsed.results) > 0
    # The largest size's row, from the stand-in's own measured time: algbw = bytes / time, and
    # all_reduce on 4 ranks has busbw = algbw * 2 * 3 / 4 (both printed with two decimals).
    [row] = [line.split() for line in log.splitlines() if line.split()[:1] == [str(1 << 20)]]
    size, time_us, algbw, busbw = int(row[0]), float(row[5]), float(row[6]), float(row[7])
    assert row[2:5] == ["float", "sum", "-1"] and int(row[8]) == 0
    assert abs(size / time_us / 1e3 - algbw) <= 0.0051, row
    assert abs(size / time_us / 1e3 * 1.5 - busbw) <= 0.0051, row
