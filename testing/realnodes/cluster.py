"""``RealCluster``: the test control plane plus N real worker nodes on this machine.

Start order: the environment's network namespace (held by a process), the API server's egress
proxy, the control plane (with controllers), the forwarder that makes the API server reachable at
``127.0.0.1:<port>`` inside the namespace, CoreDNS, then per node a mount-namespace holder,
containerd (the sandbox and test images imported, and the workload image of
:mod:`.workload_images` when asked for), and the kubelet. The nodes register
themselves; once Ready they get the labels and taints of their profile, as GPU Feature Discovery
and the GPU Operator leave them. With ``controllers=True``, JobSet, the Kubeflow Trainer and the
nvcre controller then start as processes of the control plane (:mod:`.controllers`).

Stopping (also on Ctrl-C, SIGTERM or a failed start) stops the kubelets, kills every process in
the environment's cgroups (containerd, shims, containers, CoreDNS, the namespace holders), stops
the control plane, removes the cgroups, puts the kernel settings and host directories back and
deletes the working directory. What it needs for that is also written to ``teardown.json`` in the
working directory, so :func:`teardown_from_record` can finish the job for a supervisor that died.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..controlplane import ControlPlane
from ..errors import ControlPlaneError
from ..processes import Process, spawn, wait_ready
from ..simprofiles import GPU_RESOURCE, KWOK_NODE_LABEL, Profile, check_platform, node_labels, node_taints, profile
from . import cgroups, controllers, hostdirs, images, namespaces, toolchain, workload_images
from .dnsquery import resolve
from .faults import RANK_FAULTS, RealFault, burst_bytes, parse_real_fault
from .forward import ApiForwarder, ConnectProxy
from .node import (
    CLUSTER_DOMAIN,
    DNS_IP,
    NODE_NETWORK,
    POD_NETWORK,
    PRIVATE_PATHS,
    NodeLayout,
    cni_config,
    containerd_argv,
    containerd_config,
    kubelet_argv,
    kubelet_config,
)
from .oomkill import MemorySqueeze
from .rankkill import RankKiller

RECORD_NAME = "teardown.json"
MAX_NODES = 16


class RealClusterError(ControlPlaneError):
    """The real-node environment could not be started, used or stopped."""


@dataclass
class RealNode:
    """A started node: its layout and the processes that make it."""

    layout: NodeLayout
    holder: Process
    containerd: Process | None = None
    kubelet: Process | None = None
    extra: dict[str, Process] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.layout.name


# Long: the constructor records every choice; each is a field the start and stop steps read.
class RealCluster:
    """A control plane with ``nodes`` real kubelets of ``profile`` (see the module docstring)."""

    def __init__(
        self,
        *,
        profile_name: str = "h100",
        nodes: int = 2,
        platform: str = "",
        root_dir: Path | None = None,
        start_timeout: float = 180.0,
        keep_workdir: bool = False,
        crd_dirs: Sequence[Path] | None = None,
        workload_images: bool = False,
        controllers: bool = False,
    ) -> None:
        if not 1 <= nodes <= MAX_NODES:
            raise RealClusterError(f"nodes: between 1 and {MAX_NODES} real nodes, got {nodes}")
        self.profile: Profile = profile(profile_name)
        self.node_count = nodes
        self.platform = check_platform(platform)
        self._root_dir = root_dir
        self.start_timeout = start_timeout
        self.keep_workdir = keep_workdir
        self._crd_dirs = crd_dirs
        self.with_workload_images = workload_images
        self.with_controllers = controllers
        if controllers and crd_dirs is not None and not crd_dirs:
            raise RealClusterError(
                "controllers: JobSet, the Trainer and the nvcre controller need their CRDs (crd_dirs=[] leaves them out)"
            )
        self.env_id = secrets.token_hex(4)
        self.cgroup_top = f"nvcre-{self.env_id}"
        self.workdir: Path | None = None
        self.plane: ControlPlane | None = None
        self.netns_holder: Process | None = None
        self.nodes: list[RealNode] = []
        self.processes: dict[str, Process] = {}
        self.timings: dict[str, float] = {}
        self.test_image: images.Image | None = None
        self.workload_image: images.Image | None = None
        self._forwarder: ApiForwarder | None = None
        self._proxy: ConnectProxy | None = None
        self._record: dict[str, Any] = {}
        self.faults: dict[str, RealFault] = {}
        #: the killed-rank and oom-kill watchers, by node; each strikes every rank that starts there
        #: until cleared (``killed-rank-once``: those of the first attempt only)
        self.rank_killers: dict[str, RankKiller] = {}
        #: the memory caps of the oom-kill fault, by node, lifted when it is cleared
        self.memory_squeezes: dict[str, MemorySqueeze] = {}
        self._started = False

    # ------------------------------------------------------------------ public

    def __enter__(self) -> "RealCluster":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started

    @property
    def netns(self) -> Path:
        """The environment's network namespace (``nsenter --net=<this>`` runs a command inside)."""
        if self.netns_holder is None:
            raise RealClusterError("the real-node environment is not running")
        return namespaces.ns_path(self.netns_holder.pid)

    @property
    def kubeconfig(self) -> Path:
        assert self.plane is not None
        return self.plane.kubeconfig

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    @property
    def pids(self) -> dict[str, int]:
        found = dict(self.plane.pids) if self.plane is not None else {}
        found.update({name: p.pid for name, p in self.processes.items() if p.running()})
        return found

    def api_client(self) -> Any:
        assert self.plane is not None
        return self.plane.api_client()

    def export_line(self) -> str:
        return f"export KUBECONFIG={self.kubeconfig}"

    def node_name(self, index: int) -> str:
        return f"{self.profile.name}-{self.platform or 'onprem'}-{index}"

    def start(self) -> None:
        """Start everything (module docstring); on any failure stop what was started and re-raise."""
        if self._started:
            raise RealClusterError("this environment is already running")
        tools = toolchain.locate()  # fails before anything is started
        self._started = True
        begin = time.monotonic()
        try:
            self.workdir = Path(tempfile.mkdtemp(prefix="nvcre-rn-", dir=self._root_dir)).resolve()
            (self.workdir / "logs").mkdir()
            self._record = {"workdir": str(self.workdir), "cgroup_top": self.cgroup_top, "made_dirs": [], "sysctls": {}}
            self._write_record()
            _check_socket_paths(self.workdir, self.node_count)
            self._start_network()
            self._start_control_plane(tools)
            self._mark("control plane", begin)
            self._start_dns(tools)
            self._mark("dns", begin)
            self._prepare_images(tools)
            self._mark("images", begin)
            self._record["made_dirs"] = hostdirs.make_mount_points(PRIVATE_PATHS)
            self._record["sysctls"] = hostdirs.save_sysctls()
            self._write_record()
            for index in range(self.node_count):
                self._start_node(index, tools)
            self._mark("nodes started", begin)
            self._wait_nodes_ready()
            self._mark("nodes ready", begin)
            self._label_nodes()
            self._wait_default_service_account()
            if self.with_controllers:
                self.timings.update({f"start {name}": spent for name, spent in controllers.start_workload_controllers(self).items()})
            self._mark("ready", begin)
        except BaseException as exc:
            try:
                self.stop()
            except RealClusterError as cleanup:  # the start's own error stays the one raised
                exc.add_note(str(cleanup))
            raise

    def stop(self) -> None:
        """Stop everything and put the host back (module docstring); safe to call twice."""
        if not self._started:
            return
        self._started = False
        problems: list[str] = []
        for killer in self.rank_killers.values():
            killer.stop()
        self.rank_killers.clear()
        self.memory_squeezes.clear()  # their containers go with the nodes
        for node in reversed(self.nodes):
            if node.kubelet is not None:
                with contextlib.suppress(OSError):
                    if node.kubelet.running():
                        os.kill(node.kubelet.pid, signal.SIGCONT)  # a stopped-kubelet fault must not hold up the stop
                    node.kubelet.stop(grace=5)
        problems += teardown_cgroups(self.cgroup_top)
        for server in (self._forwarder, self._proxy):
            if server is not None:
                server.close()
        if self.plane is not None:
            self.plane.stop()
        if self.netns_holder is not None:
            with contextlib.suppress(OSError):
                self.netns_holder.stop(grace=2)
        for process in self.processes.values():
            with contextlib.suppress(OSError):
                process.stop(grace=2)
        problems += finish_teardown(self._record, keep_workdir=self.keep_workdir)
        self.nodes.clear()
        self.processes.clear()
        if problems:
            raise RealClusterError("the real-node environment did not stop cleanly: " + "; ".join(problems))

    def resolve(self, name: str) -> tuple[int, list[str]]:
        """Ask the environment's CoreDNS for ``name`` from inside the namespace: ``(rcode, addresses)``."""
        return resolve(self.netns, DNS_IP, name)

    # ----------------------------------------------------------------- start steps

    def _mark(self, what: str, begin: float) -> None:
        self.timings[what] = round(time.monotonic() - begin, 2)

    def _write_record(self) -> None:
        assert self.workdir is not None
        path = self.workdir / RECORD_NAME
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self._record, indent=2) + "\n")
        os.replace(tmp, path)

    def _spawn(self, name: str, argv: list[str], cgroup: str | None = None) -> Process:
        assert self.workdir is not None
        full = namespaces.in_cgroups(cgroups.procs_files(cgroup), argv) if cgroup else argv
        process = spawn(name, full, cwd=self.workdir, log=self.workdir / "logs" / f"{name}.log")
        self.processes[name] = process
        return process

    def _start_network(self) -> None:
        """The namespace, its loopback, the node and DNS addresses (on its own ``lo``), forwarding on."""
        cgroups.make(f"{self.cgroup_top}/env.runtime")
        self.netns_holder = self._spawn("netns", namespaces.netns_holder_argv(), f"{self.cgroup_top}/env.runtime")
        self._record["netns_holder"] = self.netns_holder.pid
        self._write_record()
        wait_ready(self.netns_holder, lambda: _other_netns(self.netns), "the environment's network namespace", 10)
        run = namespaces.run_in
        run(self.netns, ["ip", "link", "set", "lo", "up"])
        for address in [DNS_IP, *(f"10.250.0.{10 + i}" for i in range(self.node_count))]:
            run(self.netns, ["ip", "addr", "add", f"{address}/32", "dev", "lo"])
        # Per namespace: pods of two nodes sit on two bridges, and this namespace routes between them.
        run(self.netns, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])

    def _start_control_plane(self, tools: toolchain.Tools) -> None:
        assert self.workdir is not None
        egress_socket = self.workdir / "egress.sock"
        self._proxy = ConnectProxy(egress_socket, self.netns, [NODE_NETWORK, POD_NETWORK])
        egress = {
            "apiVersion": "apiserver.k8s.io/v1beta1",
            "kind": "EgressSelectorConfiguration",
            "egressSelections": [
                {"name": "cluster", "connection": {"proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(egress_socket)}}}}
            ],
        }
        egress_file = self.workdir / "egress.yaml"
        egress_file.write_text(yaml.safe_dump(egress, sort_keys=False))
        self.plane = ControlPlane(
            controllers=True,
            crd_dirs=self._crd_dirs,
            root_dir=self.workdir,
            # a stopped kubelet shows as NotReady within seconds, not the default 50
            controller_manager_flags=["--node-monitor-grace-period=16s", "--node-monitor-period=2s"],
            start_timeout=self.start_timeout,
            apiserver_flags=[f"--egress-selector-config-file={egress_file}"],
        )
        self.plane.start()
        self._forwarder = ApiForwarder(self.netns, self.plane.port)

    def _start_dns(self, tools: toolchain.Tools) -> None:
        assert self.workdir is not None and self.plane is not None
        directory = self.workdir / "coredns"
        directory.mkdir()
        kubeconfig = self.plane.write_kubeconfig(directory / "kubeconfig", self.plane.admin_credential)
        corefile = directory / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {DNS_IP}
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} nvcre
        pods insecure
        ttl 5
    }}
    cache 5
}}
"""
        )
        cgroups.make(f"{self.cgroup_top}/dns.runtime")
        process = self._spawn(
            "coredns", namespaces.netns_argv(self.netns, [str(tools.coredns), f"-conf={corefile}"]), f"{self.cgroup_top}/dns.runtime"
        )
        api_name = f"kubernetes.default.svc.{CLUSTER_DOMAIN}"
        wait_ready(process, lambda: self.resolve(api_name)[1] == ["10.0.0.1"], f"CoreDNS answering {api_name}", self.start_timeout)

    def _prepare_images(self, tools: toolchain.Tools) -> None:
        self.sandbox_image = images.pause_image(tools.pause)
        self.test_image = images.busybox_image()
        if self.with_workload_images:
            self.workload_image = workload_images.workload_image()

    def _start_node(self, index: int, tools: toolchain.Tools) -> None:
        assert self.workdir is not None and self.plane is not None
        layout = NodeLayout(self.node_name(index), index, self.workdir / f"n{index}", self.cgroup_top)
        layout.make_dirs()
        cgroups.make(layout.runtime_cgroup)
        cgroups.make(layout.pods_cgroup)
        procs = cgroups.procs_files(layout.runtime_cgroup)
        holder = spawn(
            f"{layout.short}-holder",
            namespaces.mount_holder_argv(self.netns, layout.private_binds(), procs),
            cwd=self.workdir,
            log=self.workdir / "logs" / f"{layout.short}-holder.log",
        )
        self.processes[f"{layout.short}-holder"] = holder
        node = RealNode(layout, holder)
        self.nodes.append(node)
        wait_ready(holder, lambda: _mounts_ready(holder.pid, layout), f"{layout.name}'s mount namespace", 15)

        config = layout.root / "containerd.toml"
        config.write_text(
            containerd_config(layout, sandbox_image=self.sandbox_image.reference, cni_bin_dir=tools.cni_bin_dir, runc=tools.runc)
        )
        (layout.root / "cni/net.d/10-nvcre.conflist").write_text(cni_config(layout))
        node.containerd = self._spawn(
            f"{layout.short}-containerd", namespaces.node_argv(holder.pid, containerd_argv(tools.containerd, config)), layout.runtime_cgroup
        )
        wait_ready(node.containerd, lambda: layout.socket.exists(), f"{layout.name}'s containerd socket", 30)
        for image in (self.sandbox_image, self.test_image):
            assert image is not None
            images.import_image(tools.ctr, layout.socket, image)
        if self.workload_image is not None:  # about 250 MiB: allow a loaded machine more time
            images.import_image(tools.ctr, layout.socket, self.workload_image, timeout=600)

        client, serving = self.plane.issue_node_credentials(layout.name, layout.ip)
        kubeconfig = self.plane.write_kubeconfig(layout.root / "kubeconfig", client, server=f"https://127.0.0.1:{self.plane.port}")
        kubelet_file = layout.root / "kubelet.yaml"
        kubelet_file.write_text(
            kubelet_config(layout, ca=self.plane.ca_cert, serving_cert=serving.cert, serving_key=serving.key, cgroup_v1=cgroups.is_v1())
        )
        node.kubelet = self._spawn(
            f"{layout.short}-kubelet",
            namespaces.node_argv(holder.pid, kubelet_argv(tools.kubelet, layout, kubelet_file, kubeconfig)),
            layout.runtime_cgroup,
        )
        if self.profile.gpus and not self.profile.dra:
            write_gpu_state(layout, [])
            plugin = [str(tools.device_plugin), f"--node={layout.name}", f"--count={self.profile.gpus}", f"--state={layout.gpu_state}",
                      f"--resource={GPU_RESOURCE}"]  # fmt: skip
            node.extra["device-plugin"] = self._spawn(
                f"{layout.short}-device-plugin", namespaces.node_argv(holder.pid, plugin), layout.runtime_cgroup
            )

    def _wait_nodes_ready(self) -> None:
        from kubernetes import client

        deadline = time.monotonic() + self.start_timeout
        wanted = set(self.node_names)
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            while True:
                for node in self.nodes:
                    if node.kubelet is not None and not node.kubelet.running():
                        raise RealClusterError(f"the kubelet of {node.name} exited; last lines:\n{node.kubelet.tail()}")
                ready = {str(n.metadata.name) for n in core.list_node().items if n.metadata and _is_ready(n) and self._gpus_advertised(n)}
                if wanted <= ready:
                    return
                if time.monotonic() > deadline:
                    tails = "\n".join(f"--- {n.name}:\n{n.kubelet.tail(15)}" for n in self.nodes if n.kubelet is not None)
                    raise RealClusterError(f"nodes not Ready after {self.start_timeout:.0f}s: {sorted(wanted - ready)}\n{tails}")
                time.sleep(0.5)

    def _gpus_advertised(self, node: Any) -> bool:
        if not self.profile.gpus or self.profile.dra:
            return True
        return str((node.status.allocatable or {}).get(GPU_RESOURCE)) == str(self.profile.gpus)

    def gpu_ids(self, node: str) -> list[str]:
        """The device IDs ``node``'s device plugin advertises (as the kubelet reports them in use or not)."""
        return device_ids(node, self.profile.gpus)

    def set_unhealthy_gpus(self, node: str, count: int) -> list[str]:
        """Mark the first ``count`` GPUs of ``node`` unhealthy (0 heals them); returns their IDs.

        The node's device plugin sees the change within a second and tells the kubelet, which drops
        them from the node's allocatable."""
        layout = self._layout(node)
        if not 0 <= count <= self.profile.gpus:
            raise RealClusterError(f"{node} has {self.profile.gpus} GPUs; cannot mark {count} unhealthy")
        ids = self.gpu_ids(node)[:count]
        write_gpu_state(layout, ids)
        return ids

    def set_fault(self, node: str, fault: RealFault | str) -> RealFault:
        """Put ``fault`` on ``node`` in the real data path (see :mod:`.faults`), in place of the one it had;
        ``none`` clears all."""
        if isinstance(fault, str):
            fault = parse_real_fault(fault)
        target = self._node(node)
        if fault.kind == "dropped-path" and self._node(fault.peer) is target:
            raise RealClusterError(f"a dropped path needs two nodes; {fault.peer} is the faulty node itself")
        previous = self.faults.get(node)
        if fault.kind != "none" and previous is not None and previous != fault:
            self.set_fault(node, "none")  # a node has one fault at a time, as on the simulated cluster
        if fault.kind in ("none", "unhealthy-device"):
            self.set_unhealthy_gpus(node, min(fault.count, self.profile.gpus) if fault.kind != "none" else 0)
        if fault.kind in ("none", "stopped-kubelet") and target.kubelet is not None and target.kubelet.running():
            os.kill(target.kubelet.pid, signal.SIGSTOP if fault.kind == "stopped-kubelet" else signal.SIGCONT)
        if fault.kind in ("none", *RANK_FAULTS):
            self._watch_ranks(node, target.layout.pods_cgroup, fault.kind)
        if fault.kind == "dropped-path":
            self._drop_path(target, fault, drop=True)
        elif fault.kind == "none" and previous is not None and previous.kind == "dropped-path":
            self._drop_path(target, previous, drop=False)
        if fault.kind == "slow-link":
            bridge = target.layout.bridge
            if namespaces.run_in(self.netns, ["ip", "link", "show", bridge], check=False).returncode != 0:
                namespaces.run_in(self.netns, ["ip", "link", "add", bridge, "type", "bridge"])  # the CNI plugin adopts it
                namespaces.run_in(self.netns, ["ip", "link", "set", bridge, "up"])
            tbf = ["tbf", "rate", fault.rate, "burst", str(burst_bytes(fault.rate)), "latency", "100ms"]
            namespaces.run_in(self.netns, ["tc", "qdisc", "replace", "dev", bridge, "root", *tbf])
        elif fault.kind == "none":
            namespaces.run_in(self.netns, ["tc", "qdisc", "del", "dev", target.layout.bridge, "root"], check=False)
        if fault.kind == "none":
            self.faults.pop(node, None)
        else:
            self.faults[node] = fault
        return fault

    def _drop_path(self, target: RealNode, fault: RealFault, *, drop: bool) -> None:
        """Insert (or with ``drop`` False, delete) the two DROP rules between ``target``'s pods and
        its peer's, in the FORWARD chain of the environment's namespace, where pods' traffic between
        nodes is routed from one node's bridge to the other's."""
        peer = self._node(fault.peer)
        ends = (target.layout.pod_subnet, peer.layout.pod_subnet)
        for source, destination in (ends, ends[::-1]):
            rule = ["FORWARD", "-s", source, "-d", destination, "-m", "comment", "--comment", DROPPED_PATH_COMMENT, "-j", "DROP"]
            namespaces.run_in(self.netns, ["iptables", "-w", "-I" if drop else "-D", *rule], check=drop)

    def _watch_ranks(self, node: str, pods_cgroup: str, kind: str) -> None:
        """Stop the node's rank watcher (lifting an oom-kill's caps), then start the one ``kind`` asks for."""
        watching = self.rank_killers.pop(node, None)
        if watching is not None:
            watching.stop()
        squeeze = self.memory_squeezes.pop(node, None)
        if squeeze is not None:
            squeeze.undo()
        if kind == "oom-kill":
            squeeze = self.memory_squeezes[node] = MemorySqueeze()
            self.rank_killers[node] = RankKiller(pods_cgroup, act=squeeze).start()
        elif kind in RANK_FAULTS:
            self.rank_killers[node] = RankKiller(pods_cgroup, once=kind == "killed-rank-once").start()

    def _node(self, name: str) -> RealNode:
        for candidate in self.nodes:
            if candidate.name == name:
                return candidate
        raise RealClusterError(f"no real node {name!r}; the nodes are {', '.join(self.node_names)}")

    def _layout(self, node: str) -> NodeLayout:
        for candidate in self.nodes:
            if candidate.name == node:
                return candidate.layout
        raise RealClusterError(f"no real node {node!r}; the nodes are {', '.join(self.node_names)}")

    def _label_nodes(self) -> None:
        """Labels and taints of the profile, as GPU Feature Discovery and the GPU Operator set them."""
        from kubernetes import client

        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            for node in self.nodes:
                labels = profile_labels(node.name, self.profile, self.platform, node.layout.index)
                core.patch_node(node.name, {"metadata": {"labels": labels}, "spec": {"taints": node_taints(self.profile, self.platform)}})

    def _wait_default_service_account(self) -> None:
        from kubernetes import client

        deadline = time.monotonic() + self.start_timeout
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            while not core.list_namespaced_service_account("default").items:
                if time.monotonic() > deadline:
                    raise RealClusterError("the default ServiceAccount was not created")
                time.sleep(0.3)


#: marks the rules of the dropped-path fault in the namespace's iptables
DROPPED_PATH_COMMENT = "nvcre dropped-path fault"


#: the longest Unix socket path containerd accepts (the kernel's limit less its own margin)
MAX_SOCKET_PATH = 104


def _check_socket_paths(workdir: Path, nodes: int) -> None:
    longest = NodeLayout("x", nodes - 1, workdir / f"n{nodes - 1}", "x").socket
    if len(f"{longest}.ttrpc") > MAX_SOCKET_PATH:
        raise RealClusterError(
            f"the working directory {workdir} is too deep for the nodes' Unix sockets ({len(str(longest)) + 6} > "
            f"{MAX_SOCKET_PATH} characters); choose a shorter root directory (or NVCRE_CONTROLPLANE_CACHE)"
        )


def device_ids(node: str, count: int) -> list[str]:
    """The IDs the device plugin gives ``node``'s GPUs: ``GPU-<FNV-1a of the name>-...-<index>``."""
    digest = 0x811C9DC5
    for byte in node.encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return [f"GPU-{digest:08x}-0000-4000-8000-{index:012d}" for index in range(count)]


def write_gpu_state(layout: NodeLayout, unhealthy: list[str]) -> None:
    """The node's mock GPU state, as its device plugin reads it (written whole, then renamed)."""
    tmp = layout.gpu_state.with_name(f".{layout.gpu_state.name}.tmp")
    tmp.write_text(json.dumps({"unhealthy": unhealthy}) + "\n")
    os.replace(tmp, layout.gpu_state)


def profile_labels(name: str, prof: Profile, platform: str, index: int) -> dict[str, str]:
    """A real node's labels for ``prof``: the simulated node's, without kwok's own."""
    labels = node_labels(name, prof, platform, index)
    labels.pop(KWOK_NODE_LABEL[0], None)
    return labels


def _is_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def _other_netns(path: Path) -> bool:
    return os.readlink(path) != os.readlink("/proc/self/ns/net")


def _mounts_ready(pid: int, layout: NodeLayout) -> bool:
    """Whether the holder's mount namespace shows every private bind (read from its mountinfo)."""
    mounted = {line.split()[4] for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()}
    return all(str(target) in mounted for _, target in layout.private_binds())


def teardown_cgroups(top: str) -> list[str]:
    try:
        left = cgroups.remove(top)
    except cgroups.CgroupError as exc:
        return [str(exc)]
    return [f"cgroups left: {', '.join(left)}"] if left else []


def _mounts_under(directory: Path) -> list[str]:
    prefix = str(directory).rstrip("/") + "/"
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        points = [line.split()[4] for line in fh]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def finish_teardown(record: Mapping[str, Any], *, keep_workdir: bool = False) -> list[str]:
    """The host-side steps after every process is gone: kernel settings, host directories, working directory."""
    problems = []
    failed = hostdirs.restore_sysctls(record.get("sysctls") or {})
    if failed:
        problems.append(f"could not restore {', '.join(failed)}")
    left = hostdirs.remove_made(record.get("made_dirs") or [])
    if left:
        problems.append(f"host directories left (not empty): {', '.join(left)}")
    workdir = record.get("workdir")
    if workdir and Path(workdir).is_dir() and not keep_workdir:
        mounts = _mounts_under(Path(workdir))
        if mounts:  # never delete through a mount point
            problems.append(f"mounts left under {workdir}: {', '.join(mounts)}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return problems


def teardown_from_record(workdir: Path) -> list[str]:
    """Finish a teardown from ``workdir``'s record (its supervisor died): kill, remove, restore."""
    try:
        record = json.loads((workdir / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return [f"no teardown record in {workdir}"]
    top = str(record.get("cgroup_top") or "")
    if not top.startswith("nvcre-"):
        return [f"the teardown record in {workdir} names no environment cgroup"]
    return teardown_cgroups(top) + finish_teardown(record)
