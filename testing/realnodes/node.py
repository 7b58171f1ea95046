"""One real worker node: its directories, addresses and configuration files, and the processes
that make it (a mount-namespace holder, containerd, the kubelet), started in the node's cgroup
inside the environment's network namespace.

Each node has its own containerd: two kubelets sharing one each take the other's sandboxes for
orphans and kill them. Each node also has its own private mount namespace, in which directories
of the node's working directory are bind-mounted over the paths the kubelet and containerd write
regardless of their configuration (``/var/lib/kubelet``, ``/var/lib/cni``, ``/var/log/pods``,
``/var/log/containers``, ``/run/containerd``), so no node writes there on the host, and no two
nodes share a device-plugin socket.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

#: the paths a node gets a private copy of, in its own mount namespace
PRIVATE_PATHS = ("/var/lib/kubelet", "/var/lib/cni", "/var/log/pods", "/var/log/containers", "/run/containerd")
NODE_NETWORK = "10.250.0.0/24"
POD_NETWORK = "10.244.0.0/16"
DNS_IP = "10.250.0.2"
CLUSTER_DOMAIN = "cluster.local"
KUBELET_PORT = 10250


@dataclass(frozen=True)
class NodeLayout:
    """Where one node keeps everything, and its addresses."""

    name: str
    index: int
    root: Path  # the node's working directory
    cgroup_top: str  # the environment's cgroup directory

    @property
    def short(self) -> str:
        return f"n{self.index}"

    @property
    def ip(self) -> str:
        return f"10.250.0.{10 + self.index}"

    @property
    def pod_subnet(self) -> str:
        return f"10.244.{self.index}.0/24"

    @property
    def bridge(self) -> str:
        return f"nvbr{self.index}"

    @property
    def socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def gpu_state(self) -> Path:
        """The node's mock GPU state (which devices are unhealthy), read by its device plugin."""
        return self.root / "gpu" / "state.json"

    @property
    def runtime_cgroup(self) -> str:
        return f"{self.cgroup_top}/{self.short}.runtime"

    @property
    def pods_cgroup(self) -> str:
        return f"/{self.cgroup_top}/{self.short}"

    def private_binds(self) -> list[tuple[Path, Path]]:
        """``(node directory, host path)`` pairs bind-mounted in the node's mount namespace."""
        return [(self.root / "private" / path.strip("/").replace("/", "-"), Path(path)) for path in PRIVATE_PATHS]

    def make_dirs(self) -> None:
        for sub in ("containerd/root", "containerd/state", "containerd/opt", "cni/net.d", "cni/ipam", "logs", "gpu"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for source, _ in self.private_binds():
            source.mkdir(parents=True, exist_ok=True)


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string for these paths and names


def containerd_config(layout: NodeLayout, *, sandbox_image: str, cni_bin_dir: Path, runc: str) -> str:
    """containerd 1.6's ``config.toml`` (version 2) for one node."""
    q = _toml_string
    root = layout.root
    return f"""version = 2
root = {q(str(root / "containerd/root"))}
state = {q(str(root / "containerd/state"))}
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = {q(str(layout.socket))}

[ttrpc]
  address = {q(str(layout.socket) + ".ttrpc")}

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {q(str(root / "containerd/opt"))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {q(sandbox_image)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = {q(runc)}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {q(str(cni_bin_dir))}
    conf_dir = {q(str(root / "cni/net.d"))}
    max_conf_num = 1
"""


def cni_config(layout: NodeLayout) -> str:
    """The node's pod network: one bridge, its gateway on the bridge, addresses from host-local."""
    conf = {
        "cniVersion": "0.4.0",
        "name": "nvcre",
        "plugins": [
            {
                "type": "bridge",
                "bridge": layout.bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": layout.pod_subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.root / "cni/ipam"),
                },
            }
        ],
    }
    return json.dumps(conf, indent=2) + "\n"


def kubelet_config(layout: NodeLayout, *, ca: Path, serving_cert: Path, serving_key: Path, cgroup_v1: bool) -> str:
    """The kubelet's configuration file for one node."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": layout.ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": layout.ip,
        "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}, "x509": {"clientCAFile": str(ca)}},
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(serving_cert),
        "tlsPrivateKeyFile": str(serving_key),
        "containerRuntimeEndpoint": f"unix://{layout.socket}",
        "cgroupDriver": "cgroupfs",  # containerd 1.6 has no RuntimeConfig call; the kubelet falls back to this
        "cgroupRoot": layout.pods_cgroup,
        "cgroupsPerQOS": True,
        "failCgroupV1": not cgroup_v1,  # the kubelet refuses cgroup v1 unless told it may run there
        "failSwapOn": False,
        "makeIPTablesUtilChains": False,
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [DNS_IP],
        "resolvConf": "",  # pods never see the host's resolvers: names outside the cluster stay unresolved
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 32,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "protectKernelDefaults": False,
        "nodeStatusReportFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "syncFrequency": "10s",
        "registerNode": True,
    }
    return str(yaml.safe_dump(config, sort_keys=False))


def kubelet_argv(kubelet: Path, layout: NodeLayout, config: Path, kubeconfig: Path) -> list[str]:
    return [
        str(kubelet),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        "--root-dir=/var/lib/kubelet",
        f"--hostname-override={layout.name}",
        f"--node-ip={layout.ip}",
        "--v=2",
    ]


def containerd_argv(containerd: str, config: Path) -> list[str]:
    return [containerd, f"--config={config}", "--log-level=warn"]
