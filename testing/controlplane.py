"""Run a real Kubernetes control plane (etcd + kube-apiserver, optionally
kube-scheduler + kube-controller-manager) on loopback ports for tests and
local development.

``ControlPlane`` is a context manager: on entry it makes a throw-away CA and
credentials, starts the processes on free ``127.0.0.1`` ports, waits for
``/readyz``, writes an admin kubeconfig and installs the project's CRDs plus
the Kubeflow Trainer / JobSet CRDs; on exit (including Ctrl-C, SIGTERM or a
failing test) it stops every process and deletes its working directory.

Talking to the server uses the ``kubernetes`` Python client.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from . import binaries as _binaries
from .crds import (
    THIRD_PARTY_CRDS_ENV,
    apply_crds,
    crd_files,
    default_crd_files,
    load_crds,
    project_crd_dir,
    third_party_crd_dir,
)
from .errors import ControlPlaneError
from .pki import CertificateAuthority, KeyPair
from .processes import Process, free_port, spawn, wait_ready

__all__ = [
    "THIRD_PARTY_CRDS_ENV",
    "ControlPlane",
    "ControlPlaneError",
    "crd_files",
    "load_crds",
    "project_crd_dir",
    "third_party_crd_dir",
]

KEEP_WORKDIR_ENV = "NVCRE_CONTROLPLANE_KEEP"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
_PORT_IN_USE = "address already in use"


@dataclass
class _Ports:
    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)


class ControlPlane:
    """A real etcd + kube-apiserver on loopback ports (see the module docstring).

    ``controllers=True`` also starts kube-controller-manager and kube-scheduler
    (needs them built); :meth:`start_controllers` does so later on demand.
    ``crd_dirs=None`` installs :func:`nvcre.testing.crds.default_crd_files`
    (the project's CRDs, if any, and the third-party ones, which must exist);
    pass a list of directories (maybe empty) to choose instead.
    ``service_account_admission`` defaults to ``controllers``: without the
    controller-manager no ``default`` ServiceAccount exists and the admission
    plugin would reject every pod.
    """

    def __init__(
        self,
        *,
        controllers: bool = False,
        crd_dirs: Sequence[Path] | None = None,
        root_dir: Path | None = None,
        keep_workdir: bool | None = None,
        start_timeout: float = 120.0,
        binaries: _binaries.Binaries | None = None,
        service_account_admission: bool | None = None,
        verbosity: int = 1,
        controller_manager_flags: Sequence[str] = (),
        apiserver_flags: Sequence[str] = (),
    ) -> None:
        self.controllers = controllers
        self.controller_manager_flags = tuple(controller_manager_flags)
        self.apiserver_flags = tuple(apiserver_flags)
        self._crd_dirs = None if crd_dirs is None else [Path(d) for d in crd_dirs]
        self._root_dir = root_dir
        self.keep_workdir = os.environ.get(KEEP_WORKDIR_ENV) == "1" if keep_workdir is None else keep_workdir
        self.start_timeout = start_timeout
        self._binaries = binaries
        self.service_account_admission = controllers if service_account_admission is None else service_account_admission
        self.verbosity = verbosity
        self.workdir: Path | None = None
        self.processes: dict[str, Process] = {}
        self.installed_crds: list[str] = []
        self._ports: _Ports | None = None
        self._ca: CertificateAuthority | None = None
        self._admin: KeyPair | None = None
        self._sa_keys: KeyPair | None = None
        self._previous_sigterm: Any = None
        self._atexit_registered = False
        self._stopped = True

    # ------------------------------------------------------------ public API

    def __enter__(self) -> "ControlPlane":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def server(self) -> str:
        self._require_started()
        assert self._ports is not None
        return f"https://127.0.0.1:{self._ports.apiserver}"

    @property
    def kubeconfig(self) -> Path:
        self._require_started()
        assert self.workdir is not None
        return self.workdir / "kubeconfig"

    @property
    def ca_cert(self) -> Path:
        """CA that signed every certificate here (also the kubelet client CA)."""
        self._require_started()
        assert self._ca is not None
        return self._ca.cert

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.processes.items() if p.popen.poll() is None}

    def export_line(self) -> str:
        return f"export KUBECONFIG={self.kubeconfig}"

    def start(self) -> None:
        """Start etcd and kube-apiserver, install CRDs; clean up fully if anything fails."""
        if not self._stopped:
            raise ControlPlaneError("this control plane is already running")
        binaries = self._binaries or _binaries.locate(require_controllers=self.controllers)
        self._binaries = binaries
        openssl = _binaries.openssl()
        if openssl is None:
            raise ControlPlaneError("the `openssl` command is needed to make the test PKI")
        crd_paths = self._crd_paths()  # fail before starting anything

        self._stopped = False
        self._install_signal_handlers()
        try:
            self.workdir = Path(tempfile.mkdtemp(prefix="nvcre-cp-", dir=self._root_dir)).resolve()
            (self.workdir / "logs").mkdir()
            self._make_pki(openssl)
            self._start_core()
            self._write_kubeconfig()
            self.installed_crds = self.install_crds(crd_paths)
            if self.controllers:
                self.start_controllers()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every process (newest first) and remove the working directory."""
        if self._stopped:
            return
        self._stopped = True
        for process in reversed(list(self.processes.values())):
            try:
                process.stop()
            except OSError:
                pass
        self.processes.clear()
        self._restore_signal_handlers()
        if self.workdir is not None and self.workdir.exists():
            if self.keep_workdir:
                print(f"control plane files kept in {self.workdir}")
            else:
                _remove_tree(self.workdir)

    def api_client(self, token: str | None = None) -> Any:
        """A ``kubernetes.client.ApiClient``: admin by default, or bearer ``token``."""
        from kubernetes import config

        if token is None:
            return config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        return config.new_client_from_config_dict(  # type: ignore[no-untyped-call]
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "nvcre",
                        "cluster": {
                            "server": self.server,
                            "certificate-authority": str(self.ca_cert),
                        },
                    }
                ],
                "users": [{"name": "token", "user": {"token": token}}],
                "contexts": [{"name": "token", "context": {"cluster": "nvcre", "user": "token"}}],
                "current-context": "token",
            }
        )

    def install_crds(self, paths: Iterable[Path], *, timeout: float = 60.0) -> list[str]:
        """Server-side apply the CRDs in ``paths`` and wait until each is Established."""
        crds = load_crds(paths)
        if not crds:
            return []
        with self.api_client() as api_client:
            return apply_crds(api_client, crds, timeout=timeout)

    def start_controllers(self) -> None:
        """Start kube-controller-manager and kube-scheduler if not running yet."""
        self._require_started()
        if "kube-controller-manager" in self.processes:
            return
        binaries = self._binaries
        assert binaries is not None
        if not binaries.has_controllers:
            binaries = _binaries.locate(require_controllers=True)
            self._binaries = binaries
        assert binaries.kube_controller_manager and binaries.kube_scheduler
        assert self._ca and self._sa_keys and self.workdir
        kubeconfig = str(self.kubeconfig)
        for name, binary, extra in (
            (
                "kube-controller-manager",
                binaries.kube_controller_manager,
                [
                    f"--service-account-private-key-file={self._sa_keys.key}",
                    f"--root-ca-file={self._ca.cert}",
                    f"--cluster-signing-cert-file={self._ca.cert}",
                    f"--cluster-signing-key-file={self._ca.key}",
                    "--use-service-account-credentials=false",
                    "--controllers=*",
                    *self.controller_manager_flags,
                ],
            ),
            ("kube-scheduler", binaries.kube_scheduler, []),
        ):
            port = free_port()
            serving = self._ca.issue(name, common_name=name, dns=["localhost"], ips=["127.0.0.1"], server=True)
            cert_dir = self.workdir / name
            cert_dir.mkdir(exist_ok=True)
            argv = [
                str(binary),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={cert_dir}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--v={self.verbosity}",
                *extra,
            ]
            process = self._spawn(name, argv)
            url = f"https://127.0.0.1:{port}/healthz"
            self._wait(process, functools.partial(self._https_ok, url), f"{name} /healthz")

    # Long: a Node object written out field by field, then its status patched; the fields are data.
    def register_node(
        self,
        name: str,
        kubelet_port: int,
        *,
        labels: Mapping[str, str] | None = None,
        capacity: Mapping[str, str] | None = None,
    ) -> Any:
        """Create a Ready Node whose kubelet is reached at 127.0.0.1:``kubelet_port``.

        With ``--kubelet-preferred-address-types=InternalIP`` the apiserver then
        proxies ``pods/log``, ``exec`` and friends for pods bound to this node to
        that port over TLS: serve it with :meth:`issue_kubelet_serving_cert` and,
        to check the caller, require client certificates signed by :attr:`ca_cert`.
        Returns the Node as read back (``kubernetes.client.V1Node``).
        """
        if not 0 < kubelet_port < 65536:
            raise ValueError(f"kubelet port {kubelet_port} out of range")
        from kubernetes import client

        resources = {"cpu": "8", "memory": "32Gi", "pods": "110", **(capacity or {})}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "simulated kubelet is ready",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "bootID": "",
                "containerRuntimeVersion": "simulated://1",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.36.3",
                "machineID": "",
                "osImage": "simulated",
                "systemUUID": "",
            },
        }
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    **(labels or {}),
                },
            },
        }
        with self.api_client() as api_client:
            api = client.CoreV1Api(api_client)
            api.create_node(cast(Any, body))
            # A merge patch replaces the lists wholesale and, unlike an update,
            # does not conflict with controllers that touch the new Node.
            return api.patch_node_status(name, {"status": status}, _content_type="application/merge-patch+json")

    def issue_kubelet_serving_cert(self, node_name: str) -> KeyPair:
        """A serving certificate for a simulated kubelet on 127.0.0.1, trusted by the apiserver."""
        self._require_started()
        assert self._ca is not None
        safe = "".join(c if c.isalnum() or c in "-." else "-" for c in node_name)
        return self._ca.issue(
            f"kubelet-{safe}",
            common_name=f"system:node:{safe}",
            organizations=["system:nodes"],
            dns=[safe, "localhost"],
            ips=["127.0.0.1"],
            server=True,
        )

    def issue_node_credentials(self, node_name: str, node_ip: str) -> tuple[KeyPair, KeyPair]:
        """A real kubelet's client certificate (``system:node:<name>`` in ``system:nodes``, as the
        Node authorizer expects) and its serving certificate for ``node_ip``, both CA-signed."""
        self._require_started()
        assert self._ca is not None
        safe = "".join(c if c.isalnum() or c in "-." else "-" for c in node_name)
        client = self._ca.issue(
            f"node-{safe}-client", common_name=f"system:node:{safe}", organizations=["system:nodes"], client=True
        )  # fmt: skip
        serving = self._ca.issue(
            f"node-{safe}-serving", common_name=f"system:node:{safe}", organizations=["system:nodes"], dns=[safe], ips=[node_ip],
            server=True,
        )  # fmt: skip
        return client, serving

    def write_kubeconfig(self, path: Path, credential: KeyPair, *, server: str | None = None) -> Path:
        """A kubeconfig at ``path`` for ``credential`` (a client certificate) against ``server`` (default: :attr:`server`)."""
        assert self._ca is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "nvcre", "cluster": {"server": server or self.server, "certificate-authority": str(self._ca.cert)}}],
            "users": [{"name": "user", "user": {"client-certificate": str(credential.cert), "client-key": str(credential.key)}}],
            "contexts": [{"name": "nvcre", "context": {"cluster": "nvcre", "user": "user"}}],
            "current-context": "nvcre",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    @property
    def admin_credential(self) -> KeyPair:
        self._require_started()
        assert self._admin is not None
        return self._admin

    @property
    def port(self) -> int:
        """The API server's port on 127.0.0.1."""
        self._require_started()
        assert self._ports is not None
        return self._ports.apiserver

    def issue_serving_cert(self, name: str) -> KeyPair:
        """A serving certificate for a helper process on 127.0.0.1 (webhooks), CA-signed."""
        self._require_started()
        assert self._ca is not None
        return self._ca.issue(name, common_name=name, dns=["localhost"], ips=["127.0.0.1"], server=True)

    def start_process(
        self,
        name: str,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        ready: Callable[[], bool] | None = None,
        what: str = "",
    ) -> Process:
        """Start a helper process that is stopped with the control plane (newest first).

        ``ready`` is polled (it may raise ``OSError``) until true, failing with the
        process's log tail if it exits first or :attr:`start_timeout` passes.
        """
        self._require_started()
        if name in self.processes and self.processes[name].running():
            raise ControlPlaneError(f"{name} is already running")
        assert self.workdir is not None
        process = spawn(name, argv, cwd=self.workdir, log=self.workdir / "logs" / f"{name}.log", env=env)
        self.processes[name] = process
        if ready is not None:
            self._wait(process, ready, what or f"{name} readiness")
        return process

    def https_ok(self, url: str) -> bool:
        """GET ``url`` with the admin credential and the harness CA; True on HTTP 200."""
        return self._https_ok(url)

    # ---------------------------------------------------------- internals

    def _require_started(self) -> None:
        if self._stopped or self.workdir is None:
            raise ControlPlaneError("the control plane is not running")

    def _crd_paths(self) -> list[Path]:
        if self._crd_dirs is not None:
            return [p for d in self._crd_dirs for p in crd_files(d)]
        return default_crd_files()

    def _make_pki(self, openssl: str) -> None:
        assert self.workdir is not None
        ca = CertificateAuthority(self.workdir / "pki", openssl)
        self._ca = ca
        self._admin = ca.issue("admin", common_name="nvcre-admin", organizations=["system:masters"], client=True)
        self._sa_keys = ca.signing_key_pair("service-account")

    def _start_core(self) -> None:
        """Start etcd then kube-apiserver, retrying with new ports if one was taken."""
        assert self._ca is not None
        for attempt in range(3):
            self._ports = _Ports()
            try:
                self._start_etcd()
                self._start_apiserver()
                return
            except ControlPlaneError as exc:
                if _PORT_IN_USE not in str(exc).lower() or attempt == 2:
                    raise
                for name in ("kube-apiserver", "etcd"):
                    process = self.processes.pop(name, None)
                    if process is not None:
                        process.stop()
                assert self.workdir is not None
                _remove_tree(self.workdir / "etcd")  # it remembers the old peer URL

    def _start_etcd(self) -> None:
        assert self._binaries and self._ports and self.workdir
        client_url = f"http://127.0.0.1:{self._ports.etcd_client}"
        peer_url = f"http://127.0.0.1:{self._ports.etcd_peer}"
        data_dir = self.workdir / "etcd"
        argv = [
            str(self._binaries.etcd),
            "--name=nvcre",
            f"--data-dir={data_dir}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=nvcre={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]
        process = self._spawn("etcd", argv)
        self._wait(process, lambda: self._etcd_healthy(client_url), "etcd /health")

    def _start_apiserver(self) -> None:
        assert self._binaries and self._ports and self._ca and self._sa_keys and self.workdir
        ca = self._ca
        serving = ca.issue(
            "kube-apiserver",
            common_name="kube-apiserver",
            dns=[
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
            ips=["127.0.0.1", "10.0.0.1"],
            server=True,
        )
        kubelet_client = ca.issue(
            "apiserver-kubelet-client",
            common_name="kube-apiserver-kubelet-client",
            organizations=["system:masters"],
            client=True,
        )
        cert_dir = self.workdir / "apiserver"
        cert_dir.mkdir(exist_ok=True)
        plugins = "" if self.service_account_admission else "ServiceAccount"
        argv = [
            str(self._binaries.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self._ports.etcd_client}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self._ports.apiserver}",
            f"--cert-dir={cert_dir}",
            f"--tls-cert-file={serving.cert}",
            f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.cert}",
            "--authorization-mode=Node,RBAC",
            "--anonymous-auth=false",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self._sa_keys.cert}",
            f"--service-account-signing-key-file={self._sa_keys.key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-certificate-authority={ca.cert}",
            f"--kubelet-client-certificate={kubelet_client.cert}",
            f"--kubelet-client-key={kubelet_client.key}",
            "--profiling=false",
            f"--v={self.verbosity}",
        ]
        if plugins:
            argv.append(f"--disable-admission-plugins={plugins}")
        argv.extend(self.apiserver_flags)
        process = self._spawn("kube-apiserver", argv)
        ready_url = f"https://127.0.0.1:{self._ports.apiserver}/readyz"
        self._wait(process, lambda: self._https_ok(ready_url), "kube-apiserver /readyz")

    def _write_kubeconfig(self) -> None:
        assert self._ca and self._admin and self.workdir
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "nvcre",
                    "cluster": {"server": self.server, "certificate-authority": str(self._ca.cert)},
                }
            ],
            "users": [
                {
                    "name": "nvcre-admin",
                    "user": {
                        "client-certificate": str(self._admin.cert),
                        "client-key": str(self._admin.key),
                    },
                }
            ],
            "contexts": [{"name": "nvcre", "context": {"cluster": "nvcre", "user": "nvcre-admin"}}],
            "current-context": "nvcre",
        }
        path = self.workdir / "kubeconfig"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    def _spawn(self, name: str, argv: list[str]) -> Process:
        assert self.workdir is not None
        process = spawn(name, argv, cwd=self.workdir, log=self.workdir / "logs" / f"{name}.log")
        self.processes[name] = process
        return process

    def _wait(self, process: Process, ready: Callable[[], bool], what: str) -> None:
        wait_ready(process, ready, what, self.start_timeout)

    def _ssl_context(self) -> ssl.SSLContext:
        assert self._ca and self._admin
        context = ssl.create_default_context(cafile=str(self._ca.cert))
        context.load_cert_chain(str(self._admin.cert), str(self._admin.key))
        return context

    def _https_ok(self, url: str) -> bool:
        try:
            with urllib.request.urlopen(url, context=self._ssl_context(), timeout=5) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as exc:
            raise OSError(f"HTTP {exc.code} from {url}") from exc

    @staticmethod
    def _etcd_healthy(client_url: str) -> bool:
        with urllib.request.urlopen(f"{client_url}/health", timeout=5) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")

    def _install_signal_handlers(self) -> None:
        """Turn SIGTERM into KeyboardInterrupt so context managers and fixtures unwind."""
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous_sigterm = signal.SIG_DFL
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)

    def _restore_signal_handlers(self) -> None:
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False
        if (
            self._previous_sigterm is not None
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is _raise_keyboard_interrupt
        ):
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"received signal {signum}")


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
