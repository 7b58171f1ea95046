"""A simulated GPU Kubernetes cluster for tests and development.

Everything is real except the kubelets: etcd, kube-apiserver, the controller
manager and the scheduler (:class:`nvcre.testing.controlplane.ControlPlane`),
JobSet and the Kubeflow Trainer with their webhooks, and kwok simulating the
kubelets of GPU nodes registered from a profile (:mod:`nvcre.testing.simprofiles`),
plus, on request, CPU-only system nodes where ordinary pods such as the controller's
Deployment land and run (kwok marks them Running and Ready; no container starts).
The GPU Operator's ``gpu-operator/nvidia-dcgm`` Service is created as a real GPU
Operator leaves it (no endpoints: the player answers DCGM pods itself).
A workload player (:mod:`nvcre.testing.simplayer`) decides what every pod of a
TrainJob prints and how it ends, from what it runs and the faults of its nodes
(:mod:`nvcre.testing.simfaults`).

``SimCluster`` is a context manager; every process it starts is stopped when it
exits, on Ctrl-C, SIGTERM or an error, like the control plane's.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import binaries
from .controlplane import ControlPlane
from .crds import apply_crds, crd_files, project_crd_dir, sim_crd_dir
from .errors import ControlPlaneError
from .simcontrollers import apply_objects, start_jobset, start_kwok, start_trainer
from .simdomains import DomainSimulator, channel_device_class, channel_slice, channel_slice_name, compute_domain_crd, has_mnnvl
from .simfaults import NO_FAULT, XID_CONDITION, Fault, parse_fault, xid_condition
from .simplayer import Player
from .simprofiles import (
    CPU_PROFILE_NAME,
    GPU_RESOURCE,
    PROFILE_LABEL,
    Profile,
    check_platform,
    node_object,
    node_resources,
    profile,
    resource_slice,
)
from .simstages import all_stages

SIM_COMPONENTS = ("jobset", "trainer", "kwok")


@dataclass(frozen=True)
class Capacity:
    """How much the simulated control plane may do per second, and how often kwok's nodes
    heartbeat. The defaults are the upstream ones. On a small machine thousands of simulated
    nodes need :data:`LARGE`: kube-controller-manager's client is otherwise held to 20 requests
    a second (it creates every workload pod), the Trainer turns one TrainJob at a time into its
    JobSet, and kwok renews each node's Lease every 10 s, which at 2,000 nodes is 200 writes a
    second for the API server before any workload runs."""

    node_lease_seconds: int = 40
    node_lease_parallelism: int | None = None
    node_monitor_grace_seconds: int | None = None
    controller_manager_qps: int | None = None
    concurrent_job_syncs: int | None = None
    trainer_qps: int | None = None
    trainer_workers: int | None = None

    def controller_manager_flags(self) -> tuple[str, ...]:
        flags: list[str] = []
        if self.controller_manager_qps:
            flags += [f"--kube-api-qps={self.controller_manager_qps}", f"--kube-api-burst={2 * self.controller_manager_qps}"]
        if self.concurrent_job_syncs:
            flags.append(f"--concurrent-job-syncs={self.concurrent_job_syncs}")
        if self.node_monitor_grace_seconds:
            flags.append(f"--node-monitor-grace-period={self.node_monitor_grace_seconds}s")
        return tuple(flags)


#: for thousands of nodes on a few cores: Leases renewed every 300 s by 16 kwok workers (a node
#: is NotReady after 30 minutes without one), the controller manager and the Trainer allowed 200
#: requests a second, and the Trainer reconciling 8 TrainJobs at once. kwok's upstream 4 workers
#: renewed about 20 Leases a second on a saturated API server: at 10,000 nodes and a 150 s
#: renewal (67 a second needed) nodes fell behind, went NotReady and lost their pods.
LARGE = Capacity(
    node_lease_seconds=1200, node_lease_parallelism=16, node_monitor_grace_seconds=1800,
    controller_manager_qps=200, concurrent_job_syncs=20, trainer_qps=200, trainer_workers=8,
)  # fmt: skip
SYSTEM_NODE_PREFIX = "system"
DCGM_NAMESPACE = "gpu-operator"
DCGM_SERVICE = "nvidia-dcgm"
DCGM_PORT = 5555


def gpu_operator_objects() -> list[dict[str, Any]]:
    """The GPU Operator's namespace and DCGM hostengine Service, as ``setup status`` looks for them."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DCGM_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": DCGM_SERVICE, "namespace": DCGM_NAMESPACE, "labels": {"app": DCGM_SERVICE}},
            "spec": {
                "selector": {"app": DCGM_SERVICE},
                "ports": [{"name": "dcgm", "port": DCGM_PORT, "targetPort": DCGM_PORT, "protocol": "TCP"}],
            },
        },
    ]


class SimClusterError(ControlPlaneError):
    """The simulated cluster could not be built, started or changed."""


@dataclass(frozen=True)
class SimBinaries:
    """Paths of the simulated cluster's controllers and their data."""

    jobset: Path
    trainer: Path
    kwok: Path
    crd_dirs: tuple[Path, ...]
    stage_dir: Path


def sim_missing() -> list[str]:
    """Which of jobset, trainer, kwok are not built yet."""
    return list(binaries.build_module().missing_sim_components(list(SIM_COMPONENTS)))


def locate_sim() -> SimBinaries:
    """The built controllers, or :class:`SimClusterError` saying how to build them."""
    module = binaries.build_module()
    absent = module.missing_sim_components(list(SIM_COMPONENTS))
    if absent:
        raise SimClusterError(
            f"simulated-cluster controllers not built: {', '.join(absent)}; run "
            "`python -m nvcre.testing.gobuild.build --sim` (or `nvcrectl dev up`, which builds them)"
        )
    return SimBinaries(
        jobset=Path(module.sim_binary_path("jobset")),
        trainer=Path(module.sim_binary_path("trainer")),
        kwok=Path(module.sim_binary_path("kwok")),
        crd_dirs=tuple(Path(sim_crd_dir(c)) for c in SIM_COMPONENTS),
        stage_dir=Path(module.sim_stage_dir()),
    )


def build_sim(progress: bool = True) -> None:
    """Build the control plane and the simulated cluster's controllers when missing."""
    module = binaries.build_module()
    module.build(list(binaries.CORE + binaries.CONTROLLERS))
    module.build_sim(list(SIM_COMPONENTS))


class SimCluster:
    """The simulated cluster (see the module docstring).

    ``nodes`` GPU nodes of ``profile`` on ``platform`` are registered at start;
    ``faults`` maps node names to fault specs (``{"gpu-0": "slow-link:0.5"}``).
    ``system_nodes`` CPU-only nodes (``system-0``, ...) are registered too, for pods
    that need no GPU. ``project_crds=False`` leaves the nvcre CRDs out, as on a cluster
    where ``nvcrectl setup init`` has not run yet. ``compute_domains=False`` leaves out the
    ComputeDomain API and its simulated DRA driver (:mod:`nvcre.testing.simdomains`), as on
    a cluster without NVIDIA's DRA driver.
    """

    def __init__(
        self,
        *,
        profile: str = "h100",
        nodes: int = 0,
        platform: str = "",
        faults: Mapping[str, str] | None = None,
        prefix: str | None = None,
        seed: str = "nvcre-sim",
        root_dir: Path | None = None,
        keep_workdir: bool | None = None,
        start_timeout: float = 120.0,
        system_nodes: int = 0,
        project_crds: bool = True,
        compute_domains: bool = True,
        capacity: Capacity = Capacity(),
    ) -> None:
        if system_nodes < 0:
            raise SimClusterError(f"system_nodes must not be negative, got {system_nodes}")
        self._initial = (profile, nodes, platform, prefix)
        self._system_nodes = system_nodes
        self._project_crds = project_crds
        self._compute_domains = compute_domains
        self._initial_faults = {k: parse_fault(v) for k, v in (faults or {}).items()}
        self.seed = seed
        self.capacity = capacity
        self.plane = ControlPlane(
            controllers=True,
            crd_dirs=[],  # installed in start(): the project's, JobSet, Trainer and kwok
            root_dir=root_dir,
            keep_workdir=keep_workdir,
            start_timeout=start_timeout,
            controller_manager_flags=capacity.controller_manager_flags(),
        )
        self._profiles: dict[str, Profile] = {}
        self._faults: dict[str, Fault] = {}
        self._resources: dict[str, dict[str, str]] = {}
        self._lock = threading.RLock()
        self._counter: dict[str, int] = {}
        self.player: Player | None = None
        self.domains: DomainSimulator | None = None
        self.kwok_port: int | None = None
        self.started_at: float | None = None
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> SimCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start everything and register the initial nodes; clean up fully on failure."""
        found = locate_sim()
        t0 = time.monotonic()
        self.plane.start()
        try:
            self.timings["control_plane"] = time.monotonic() - t0
            t1 = time.monotonic()
            own = (project_crd_dir(),) if self._project_crds else ()
            crds = [p for d in (*own, *found.crd_dirs) for p in crd_files(d)]
            self.plane.install_crds(crds)
            if self._compute_domains:
                with self.plane.api_client() as api_client:
                    apply_crds(api_client, [compute_domain_crd()])
            self.timings["crds"] = time.monotonic() - t1
            t2 = time.monotonic()
            start_jobset(self.plane, found.jobset)
            start_trainer(self.plane, found.trainer, qps=self.capacity.trainer_qps, workers=self.capacity.trainer_workers)
            self.kwok_port = start_kwok(
                self.plane,
                found.kwok,
                lease_seconds=self.capacity.node_lease_seconds,
                lease_parallelism=self.capacity.node_lease_parallelism,
            )
            with self.plane.api_client() as api_client:
                apply_objects(api_client, [*all_stages(found.stage_dir), *gpu_operator_objects()])
                if self._compute_domains:
                    apply_objects(api_client, [channel_device_class()])
            if self._compute_domains:
                self.domains = DomainSimulator(self.plane.api_client, self.imex_down)
                self.domains.start()
            self.timings["controllers"] = time.monotonic() - t2
            assert self.plane.workdir is not None
            self.player = Player(
                self.plane.api_client,
                self,
                self.plane.workdir / "podlogs",
                seed=self.seed,
                is_sim_node=self.is_sim_node,
            )
            self.player.start()
            if self._system_nodes:
                self.add_nodes(profile=CPU_PROFILE_NAME, count=self._system_nodes, prefix=SYSTEM_NODE_PREFIX)
            name, count, platform, prefix = self._initial
            if count:
                t3 = time.monotonic()
                self.add_nodes(profile=name, count=count, platform=platform, prefix=prefix)
                self.timings["nodes"] = time.monotonic() - t3
            for node, fault in self._initial_faults.items():
                self.set_fault(node, str(fault))
            self.started_at = time.time()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the player, then every process (newest first), and remove the work dir."""
        if self.domains is not None:
            self.domains.stop()
            self.domains = None
        if self.player is not None:
            self.player.stop()
            self.player = None
        self.plane.stop()

    # ------------------------------------------------------------- access

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    @property
    def workdir(self) -> Path:
        assert self.plane.workdir is not None
        return self.plane.workdir

    @property
    def pids(self) -> dict[str, int]:
        return self.plane.pids

    def api_client(self, token: str | None = None) -> Any:
        return self.plane.api_client(token)

    def export_line(self) -> str:
        return self.plane.export_line()

    @property
    def nodes(self) -> list[str]:
        with self._lock:
            return sorted(self._profiles)

    @property
    def gpu_nodes(self) -> list[str]:
        """The registered nodes that have GPUs (every node but the ``cpu`` system nodes)."""
        with self._lock:
            return sorted(n for n, p in self._profiles.items() if p.has_gpus)

    @property
    def faults(self) -> dict[str, str]:
        with self._lock:
            return {n: str(f) for n, f in sorted(self._faults.items()) if f.kind != "none"}

    # ------------------------------------------------------ ClusterView API

    def is_sim_node(self, node: str) -> bool:
        with self._lock:
            return node in self._profiles

    def profile_of(self, node: str) -> Profile | None:
        with self._lock:
            return self._profiles.get(node)

    def fault_of(self, node: str) -> Fault:
        with self._lock:
            return self._faults.get(node, NO_FAULT)

    def imex_down(self, node: str) -> bool:
        """Whether ``node``'s IMEX daemon is kept from joining a ComputeDomain (the ``imex-down`` fault)."""
        return self.fault_of(node).kind == "imex-down"

    def trigger_xid(self, node: str) -> None:
        """What a GPU health agent does after an Xid: a False health condition, then a cordon."""
        from kubernetes import client

        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            core.patch_node_status(node, {"status": {"conditions": [xid_condition(now)]}})
            core.patch_node(node, {"spec": {"unschedulable": True}})

    # -------------------------------------------------------------- nodes

    def add_nodes(
        self,
        profile: str = "h100",
        count: int = 4,
        platform: str = "",
        prefix: str | None = None,
        *,
        nic: str | None = None,
        wait: bool = True,
        timeout: float = 60.0,
        workers: int = 1,
    ) -> list[str]:
        """Register ``count`` nodes of ``profile``; returns their names (Ready when ``wait``).

        ``profile="cpu"`` registers CPU-only system nodes (no GPU labels, resources or taints).

        ``nic`` overrides the platform's RDMA NIC resource name (``""``: no NICs);
        ``workers`` > 1 registers them from that many threads (for large pools).
        """
        from kubernetes import client

        prof = _profile(profile)
        platform = check_platform(platform)
        if count < 1:
            raise SimClusterError(f"count must be at least 1, got {count}")
        stem = prefix or f"{prof.name}-{platform or 'onprem'}"
        with self._lock:
            start = self._counter.get(stem, 0)
            self._counter[stem] = start + count
        names = [f"{stem}-{i}" for i in range(start, start + count)]
        jobs = list(zip(range(start, start + count), names))

        def register(chunk: list[tuple[int, str]]) -> None:
            with self.api_client() as api_client:
                core = client.CoreV1Api(api_client)
                for index, name in chunk:
                    with self._lock:
                        self._profiles[name] = prof
                        self._resources[name] = node_resources(prof, platform, nic=nic)
                    body: Any = node_object(name, prof, platform, index, nic=nic)
                    core.create_node(body, _preload_content=False)
                    if prof.dra:
                        apply_objects(api_client, [resource_slice(name, prof)])
                    if self._compute_domains and has_mnnvl(prof):
                        apply_objects(api_client, [channel_slice(name, prof)])

        workers = max(1, min(workers, count))
        if workers == 1:
            register(jobs)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as pool:
                for future in [pool.submit(register, jobs[i::workers]) for i in range(workers)]:
                    future.result()
        if wait:
            self.wait_ready(names, timeout=timeout)
        return names

    def wait_ready(self, names: Sequence[str], *, timeout: float = 60.0) -> None:
        """Wait until every named node reports Ready=True."""
        from kubernetes import client

        pending = set(names)
        deadline = time.monotonic() + timeout
        interval = 0.2 if len(pending) <= 50 else 1.0
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            while pending:
                raw: Any = core.list_node(label_selector=PROFILE_LABEL, _preload_content=False)
                for node in json.loads(raw.data).get("items") or []:
                    conditions = (node.get("status") or {}).get("conditions") or []
                    if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                        pending.discard(node["metadata"]["name"])
                if not pending:
                    return
                if time.monotonic() > deadline:
                    shown = ", ".join(sorted(pending)[:5])
                    raise SimClusterError(f"{len(pending)} node(s) not Ready after {timeout:.0f}s: {shown}")
                time.sleep(interval)

    def remove_nodes(self, names: Sequence[str]) -> None:
        """Delete nodes (and their ResourceSlices) from the cluster."""
        from kubernetes import client
        from kubernetes.client import ApiException

        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            for name in names:
                prof = self.profile_of(name)
                try:
                    core.delete_node(name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
                slices = []
                if prof is not None and prof.dra:
                    slices.append(f"{name}-gpu.nvidia.com")
                if prof is not None and self._compute_domains and has_mnnvl(prof):
                    slices.append(channel_slice_name(name))
                for slice_name in slices:
                    try:
                        client.CustomObjectsApi(api_client).delete_cluster_custom_object(
                            "resource.k8s.io", "v1", "resourceslices", slice_name
                        )
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
                with self._lock:
                    self._profiles.pop(name, None)
                    self._faults.pop(name, None)
                    self._resources.pop(name, None)

    # ------------------------------------------------------------- faults

    def set_fault(self, node: str, kind: str) -> Fault:
        """Give ``node`` a fault (see :mod:`nvcre.testing.simfaults`); ``none`` clears it."""
        from kubernetes import client

        fault = parse_fault(kind)
        prof = self.profile_of(node)
        if prof is None:
            raise SimClusterError(f"no simulated node {node!r}; nodes: {', '.join(self.nodes[:10])}")
        with self._lock:
            previous = self._faults.get(node, NO_FAULT)
            self._faults[node] = fault
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            annotations = {"sim.nvcre.io/fault": None if fault.kind == "none" else str(fault)}
            if previous.kind in ("cordon", "xid") and fault.kind != previous.kind:
                core.patch_node(node, {"metadata": {"annotations": annotations}, "spec": {"unschedulable": None}})
            else:
                core.patch_node(node, {"metadata": {"annotations": annotations}})
            with self._lock:
                nominal = dict(self._resources[node])
            if previous.kind == "no-capacity" and fault.kind != "no-capacity":
                resources = nominal
                core.patch_node_status(node, {"status": {"capacity": resources, "allocatable": resources}})
            if previous.kind == "xid" and fault.kind != "xid":
                self._clear_xid(core, node)
            if fault.kind == "cordon":
                core.patch_node(node, {"spec": {"unschedulable": True}})
            elif fault.kind == "no-capacity":
                resources = {**nominal, GPU_RESOURCE: "0"}
                core.patch_node_status(node, {"status": {"capacity": resources, "allocatable": resources}})
        return fault

    @staticmethod
    def _clear_xid(core: Any, node: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        healthy = {
            "type": XID_CONDITION,
            "status": "True",
            "reason": "GpuHealthy",
            "message": "no GPU errors",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        core.patch_node_status(node, {"status": {"conditions": [healthy]}})

    # ------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        """A summary of the running cluster (for ``nvcrectl dev status``)."""
        from kubernetes import client

        with self.api_client() as api_client:
            raw: Any = client.CoreV1Api(api_client).list_node(label_selector=PROFILE_LABEL, _preload_content=False)
        nodes = [node_summary(node) for node in json.loads(raw.data).get("items") or []]
        return {
            "kubeconfig": str(self.kubeconfig),
            "processes": self.pids,
            "nodes": sorted(nodes, key=lambda n: str(n["name"])),
            "player": {
                "running": bool(self.player and self.player.alive),
                "errors": list(self.player.errors[-5:]) if self.player else [],
            },
        }


def node_summary(node: Mapping[str, Any]) -> dict[str, Any]:
    """One simulated node as ``dev status`` shows it, from the Node as the API returns it."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = node.get("status") or {}
    conditions = status.get("conditions") or []
    return {
        "name": meta.get("name"),
        "profile": labels.get(PROFILE_LABEL),
        "product": labels.get("nvidia.com/gpu.product", ""),
        "ready": any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "gpus": (status.get("allocatable") or {}).get(GPU_RESOURCE, "0"),
        "fault": (meta.get("annotations") or {}).get("sim.nvcre.io/fault", "none"),
    }


def _profile(name: str) -> Profile:
    try:
        return profile(name)
    except ValueError as exc:
        raise SimClusterError(str(exc)) from None
