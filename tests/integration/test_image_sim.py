"""The controller image as a cluster runs it: built by ``make image``'s script, started by podman.

kwok plays the kubelet in the simulated cluster and starts no containers, so the install is
applied with its RBAC but without the Deployment's pod, and podman plays that pod with the
Deployment's settings: the image's own user (uid 65532), a read-only root with a tmpfs ``/tmp``,
every capability dropped, no new privileges, a ServiceAccount token with the cluster CA at the
standard path, and ``KUBERNETES_SERVICE_HOST``/``PORT`` (in-cluster configuration, no kubeconfig).
Two settings differ from a pod, each for a reason of this machine: host networking (the API
server listens on loopback) and explicit ulimits with runc (podman's default limits need
CAP_SYS_RESOURCE, and crun refuses a hybrid cgroup layout).

The build needs root and Debian's buildah, podman, skopeo, mmdebstrap and runc; without them the
tests skip, or fail under CI=true, where ``.ci/run`` installs them.
"""

from __future__ import annotations

import filecmp
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.testing.pytest_plugin import _unavailable
from tests.integration.integration_helpers import eventually, remove_cluster_objects

pytestmark = [pytest.mark.integration, pytest.mark.sim, pytest.mark.slow, pytest.mark.image]

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("buildah", "podman", "skopeo", "mmdebstrap", "runc")
LEASE = "nvcre-controller"


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    """The image ``scripts/image.py`` builds from this checkout (the layer cache makes a rebuild quick)."""
    if os.geteuid() != 0:
        _unavailable("the controller image is built and run as root")
    if missing := [tool for tool in TOOLS if shutil.which(tool) is None]:
        _unavailable(f"missing {', '.join(missing)} (apt-get install --no-install-recommends {' '.join(TOOLS)})")
    built = subprocess.run([sys.executable, str(REPO / "scripts" / "image.py")], capture_output=True, text=True, timeout=1800, check=False)
    assert built.returncode == 0, built.stderr[-4000:]
    record = json.loads((REPO / "build" / "image" / "image.json").read_text())
    assert built.stdout.strip() == record["digest"]
    return record


def _limit(kind: int, ceiling: int) -> int:
    hard = resource.getrlimit(kind)[1]
    return ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)


class Podman:
    """podman against the build's private store, with this machine's runtime and limits."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.env = {**os.environ, "CONTAINERS_STORAGE_CONF": record["storageConf"]}
        self.names: list[str] = []

    def run(self, *argv: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["podman", *argv], env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def hardened(self) -> list[str]:
        """The Deployment's container settings, as podman flags."""
        nofile, nproc = _limit(resource.RLIMIT_NOFILE, 65536), _limit(resource.RLIMIT_NPROC, 32768)
        return [
            "--runtime",
            "runc",
            "--ulimit",
            f"nofile={nofile}:{nofile}",
            "--ulimit",
            f"nproc={nproc}:{nproc}",
            "--read-only",
            "--read-only-tmpfs=false",
            "--tmpfs",
            "/tmp:rw,size=64m,mode=1777",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
        ]

    def start(self, name: str, *args: str, options: tuple[str, ...] = ()) -> str:
        self.names.append(name)
        self.run("run", "-d", "--pull=never", "--name", name, *self.hardened(), *options, self.record["tag"], *args)
        return name

    def logs(self, name: str) -> str:
        done = self.run("logs", name, check=False)
        return done.stdout + done.stderr

    def state(self, name: str) -> dict[str, Any]:
        return json.loads(self.run("inspect", "--format", "{{json .State}}", name).stdout)

    def remove_all(self) -> None:
        for name in self.names:
            self.run("rm", "--force", "--time", "0", name, check=False)


@pytest.fixture
def podman(image: dict[str, Any]) -> Iterator[Podman]:
    runner = Podman(image)
    try:
        yield runner
    finally:
        runner.remove_all()


def test_every_module_loads_from_valid_bytecode_on_a_read_only_root(podman: Podman) -> None:
    """Imports every nvcre module (so every shared library the controller needs, re2's libstdc++
    included) and checks each imported module's bytecode against its source, as the interpreter
    would before using it: nothing is compiled again at start."""
    probe = r"""
import importlib, importlib.util, json, os, pkgutil, sys
import nvcre
skipped = {"nvcre.testing.pytest_plugin"}  # a pytest plugin: pytest is not in the image
names = [m.name for m in pkgutil.walk_packages(nvcre.__path__, "nvcre.") if m.name not in skipped]
for name in names:
    importlib.import_module(name)
import re2
assert re2.search("b+", "abbbc").group(0) == "bbb"
stale = []
for module in list(sys.modules.values()):
    source, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
    if not source or not cached or not source.endswith(".py"):
        continue
    try:
        header = open(cached, "rb").read(16)
    except OSError:
        stale.append(module.__name__ + " (no bytecode)")
        continue
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:
        valid = header[8:16] == importlib.util.source_hash(open(source, "rb").read())
    else:
        st = os.stat(source)
        valid = (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")) == (
            int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
    if not valid:
        stale.append(module.__name__)
print(json.dumps({"uid": os.getuid(), "nvcre": len(names), "modules": len(sys.modules), "stale": stale}))
"""
    done = podman.run(
        "run",
        "--rm",
        "--pull=never",
        "--network",
        "none",
        *podman.hardened(),
        "--entrypoint",
        "python",
        podman.record["tag"],
        "-c",
        probe,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["uid"] == 65532
    assert found["nvcre"] > 150 and found["modules"] > 600
    assert found["stale"] == []


def test_a_second_build_from_nothing_gives_the_same_digest(image: dict[str, Any], tmp_path: Path) -> None:
    """A fresh store, a fresh Debian root filesystem, no layer cache: the same commit gives the same
    OCI manifest digest (as long as Debian's archive and PyPI serve the same versions)."""
    again = tmp_path / "again"
    try:
        built = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "image.py"), "--out", str(again), "--no-sbom"],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        assert built.returncode == 0, built.stderr[-4000:]
        assert built.stdout.strip() == image["digest"]
        assert filecmp.cmp(again / "base.tar", REPO / "build" / "image" / "base.tar", shallow=False)
    finally:
        subprocess.run(
            ["buildah", "rmi", "--all", "--force"],
            env={**os.environ, "CONTAINERS_STORAGE_CONF": str(again / "store" / "storage.conf")},
            capture_output=True,
            check=False,
            timeout=300,
        )
        shutil.rmtree(again, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture
def installed(simcluster) -> Iterator[tuple[Any, str, Path]]:
    """The install's RBAC and LogProfiles in a fresh namespace (no Deployment), and a folder holding
    what the kubelet would mount for its ServiceAccount; all removed afterwards."""
    from kubernetes import client as k8s

    from nvcre.compiler.install import render_install
    from nvcre.runtime.kube.client import ApiServerClient

    admin = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    namespace = f"img-{uuid.uuid4().hex[:6]}"
    kinds = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "LogProfile"}
    objects = [o for o in render_install([{"namespace": {"name": namespace}, "crds": {"install": False}}]).objects if o["kind"] in kinds]
    for obj in objects:
        admin.apply(obj)
    with simcluster.api_client() as api:
        token = (
            k8s.CoreV1Api(api)
            .create_namespaced_service_account_token("nvcre-manager", namespace, {"spec": {"expirationSeconds": 3600}})
            .status.token
        )
    mount = Path(f"/tmp/nvcre-sa-{namespace}")  # noqa: S108 - a private folder, removed below
    mount.mkdir(mode=0o755)
    (mount / "token").write_text(token)
    (mount / "namespace").write_text(namespace)
    shutil.copyfile(simcluster.plane.ca_cert, mount / "ca.crt")
    for path in mount.iterdir():
        path.chmod(0o644)  # readable by uid 65532, as the kubelet's projected volume is
    try:
        yield admin, namespace, mount
    finally:
        shutil.rmtree(mount, ignore_errors=True)
        remove_cluster_objects(admin, objects)
        admin.close()


def test_the_image_is_the_controller_in_cluster(simcluster, sim_namespace, podman: Podman, installed) -> None:
    """Leader election, a Certification to Succeeded, a standby that takes over when the leader is
    killed, and a clean stop on SIGTERM, all with the image's own entry point and flags."""
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import CERTIFICATIONS, LEASES

    admin, namespace, mount = installed
    server_port = simcluster.plane.server.rsplit(":", 1)[1]
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-img")

    def replica(name: str) -> tuple[str, int]:
        metrics, health = _free_port(), _free_port()
        podman.start(
            name,
            f"--namespace={sim_namespace}",
            f"--lease-namespace={namespace}",
            "--leader-elect",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            "--log-level=info",
            options=(
                "--network",
                "host",
                "-v",
                f"{mount}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
                "-e",
                "KUBERNETES_SERVICE_HOST=127.0.0.1",
                "-e",
                f"KUBERNETES_SERVICE_PORT={server_port}",
                "-e",
                f"POD_NAMESPACE={namespace}",
            ),
        )
        eventually(lambda: _ready(health), timeout=60, what=f"{name} to answer /readyz")
        return name, health

    def holder() -> str:
        try:
            return str(admin.get(LEASES, LEASE, namespace).get("spec", {}).get("holderIdentity") or "")
        except Exception:  # noqa: BLE001 - no Lease yet
            return ""

    def identity(name: str) -> str:
        for line in podman.logs(name).splitlines():
            if line.startswith("{") and json.loads(line).get("msg") == "became leader":
                return str(json.loads(line)["identity"])
        return ""

    suffix = uuid.uuid4().hex[:6]
    first, _ = replica(f"nvcre-a-{suffix}")
    leader = eventually(lambda: identity(first), timeout=60, what="the first replica to take the Lease")
    assert eventually(lambda: holder() == leader, timeout=30, what="the Lease to name the first replica")
    second, _ = replica(f"nvcre-b-{suffix}")
    time.sleep(3)
    assert holder() == leader and identity(second) == ""  # standby, ready, not leading

    admin.create(
        {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Certification",
            "metadata": {"name": "image", "namespace": sim_namespace},
            "spec": {
                "target": {"nodeNames": nodes},
                "timeoutPerJob": "3m",
                "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
            },
        }
    )

    def finished(name: str) -> str | None:
        life = cond.lifecycle(admin.get(CERTIFICATIONS, name, sim_namespace).get("status"))
        return life if life in (cond.SUCCEEDED, cond.FAILED) else None

    assert eventually(lambda: finished("image"), timeout=180, what="the Certification to finish") == cond.SUCCEEDED

    killed = time.monotonic()
    podman.run("kill", "--signal", "KILL", first)
    took_over = eventually(lambda: identity(second), timeout=60, what="the standby to take the Lease")
    took = time.monotonic() - killed
    assert took_over != leader and holder() == took_over
    assert took < 30, f"the standby took {took:.1f} s to take over a Lease of 15 s"

    stopped = time.monotonic()
    podman.run("stop", "--time", "30", second, timeout=60)
    assert time.monotonic() - stopped < 15
    state = podman.state(second)
    assert state["ExitCode"] == 0 and state["Status"] == "exited"
    assert holder() == ""  # released on the way out, so a next replica need not wait for it to expire

    for name in (first, second):
        records = [json.loads(line) for line in podman.logs(name).splitlines() if line.startswith("{")]
        assert records, podman.logs(name)[-2000:]
        bad = [r for r in records if r.get("level") in ("error", "critical") or "Traceback" in str(r.get("error", ""))]
        assert not bad, bad[:3]
        assert not [r for r in records if r.get("level") == "warning"], [r for r in records if r.get("level") == "warning"][:3]
    messages = [json.loads(line).get("msg") for line in podman.logs(second).splitlines() if line.startswith("{")]
    assert "controller stopped" in messages
