"""Start the simulated cluster's third-party controllers next to a running control plane.

JobSet and the Kubeflow Trainer run out of cluster with the harness's admin
kubeconfig. Their admission webhooks serve on 127.0.0.1 with a certificate the
harness CA signed, and the webhook configurations that point the API server at them
are created here with ``clientConfig.url`` and the CA bundle (no Service, no cert
rotator). kwok runs as the kubelet of every node labelled ``type=kwok`` and serves
``pods/log`` to the API server over TLS.
"""

from __future__ import annotations

import base64
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .controlplane import ControlPlane
from .errors import ControlPlaneError
from .processes import free_port

JOBSET_POD_SELECTOR = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
WEBHOOK_FIELD_MANAGER = "nvcre-simcluster"


@dataclass(frozen=True)
class Hook:
    """One admission webhook: name, path, kind, rule and (for pods) an object selector."""

    name: str
    path: str
    mutating: bool
    group: str
    version: str
    resource: str
    operations: tuple[str, ...]
    pod_selector: bool = False


JOBSET_HOOKS = (
    Hook("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", True,
         "jobset.x-k8s.io", "v1alpha2", "jobsets", ("CREATE",)),
    Hook("mpod.kb.io", "/mutate--v1-pod", True, "", "v1", "pods", ("CREATE",), True),
    Hook("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", False,
         "jobset.x-k8s.io", "v1alpha2", "jobsets", ("CREATE", "UPDATE")),
    Hook("vpod.kb.io", "/validate--v1-pod", False, "", "v1", "pods", ("CREATE",), True),
)  # fmt: skip

TRAINER_HOOKS = (
    Hook("defaulter.trainjob.trainer.kubeflow.org", "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
         True, "trainer.kubeflow.org", "v1alpha1", "trainjobs", ("CREATE", "UPDATE")),
    Hook("validator.clustertrainingruntime.trainer.kubeflow.org",
         "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime", False,
         "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", ("CREATE", "UPDATE")),
    Hook("validator.trainingruntime.trainer.kubeflow.org",
         "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime", False,
         "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", ("CREATE", "UPDATE")),
    Hook("validator.trainjob.trainer.kubeflow.org", "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
         False, "trainer.kubeflow.org", "v1alpha1", "trainjobs", ("CREATE", "UPDATE")),
)  # fmt: skip


def webhook_configurations(owner: str, hooks: Sequence[Hook], port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Mutating and validating configurations sending ``hooks`` to 127.0.0.1:``port``."""
    encoded = base64.b64encode(ca_bundle).decode()
    out = []
    for mutating, kind in ((True, "MutatingWebhookConfiguration"), (False, "ValidatingWebhookConfiguration")):
        entries = []
        for hook in (h for h in hooks if h.mutating == mutating):
            entry: dict[str, Any] = {
                "name": hook.name,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "clientConfig": {"url": f"https://127.0.0.1:{port}{hook.path}", "caBundle": encoded},
                "rules": [
                    {
                        "apiGroups": [hook.group],
                        "apiVersions": [hook.version],
                        "operations": list(hook.operations),
                        "resources": [hook.resource],
                    }
                ],
            }
            if hook.pod_selector:
                entry["objectSelector"] = JOBSET_POD_SELECTOR
            entries.append(entry)
        if entries:
            prefix = "mutating" if mutating else "validating"
            out.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": {"name": f"{owner}-{prefix}-webhook-configuration"},
                    "webhooks": entries,
                }
            )
    return out


def apply_objects(api_client: Any, objects: Sequence[dict[str, Any]]) -> None:
    """Server-side apply cluster or namespaced objects through the dynamic client."""
    import tempfile

    from kubernetes import dynamic

    # The dynamic client keeps its discovery in a file, by default one left in the system's
    # temporary directory for good; this one goes when the objects are applied.
    with tempfile.TemporaryDirectory(prefix="nvcre-discovery-") as scratch:
        client = dynamic.DynamicClient(api_client, cache_file=f"{scratch}/discovery.json")  # type: ignore[no-untyped-call]
        _apply_each(client, objects)


def _apply_each(client: Any, objects: Sequence[dict[str, Any]]) -> None:
    from kubernetes.client import ApiException

    for obj in objects:
        resource = client.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        namespace = obj["metadata"].get("namespace")
        try:
            resource.server_side_apply(
                body=obj,
                name=obj["metadata"]["name"],
                namespace=namespace,
                field_manager=WEBHOOK_FIELD_MANAGER,
                force_conflicts=True,
            )
        except ApiException as exc:
            raise ControlPlaneError(f"the apiserver refused {obj['kind']} {obj['metadata']['name']}: {exc.status} {exc.reason}") from exc


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return bool(resp.status == 200)
    except urllib.error.HTTPError as exc:
        raise OSError(f"HTTP {exc.code} from {url}") from exc


@dataclass
class ControllerPaths:
    """Binaries of the three controllers."""

    jobset: Path
    trainer: Path
    kwok: Path


def start_jobset(plane: ControlPlane, binary: Path) -> int:
    """Start the JobSet controller and register its webhooks; returns the webhook port."""
    assert plane.workdir is not None
    home = plane.workdir / "jobset"
    certs = home / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    serving = plane.issue_serving_cert("jobset-webhook")
    (certs / "tls.crt").write_bytes(serving.cert.read_bytes())
    (certs / "tls.key").write_bytes(serving.key.read_bytes())
    (certs / "tls.key").chmod(0o600)
    port, health = free_port(), free_port()
    config = {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(certs)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plane.start_process(
        "jobset-controller",
        [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--config={home / 'config.yaml'}"],
        ready=lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"),
        what="jobset /readyz",
    )
    with plane.api_client() as api_client:
        apply_objects(api_client, webhook_configurations("jobset", JOBSET_HOOKS, port, plane.ca_cert.read_bytes()))
    return port


def trainer_config(port: int, health: int, *, qps: int | None = None, workers: int | None = None) -> dict[str, Any]:
    """The Trainer's Configuration: webhook and health on loopback, no leader election or cert
    management; ``qps`` sets its client's requests per second (burst twice that), ``workers``
    how many TrainJobs it reconciles at once (controller-runtime's default is one)."""
    config: dict[str, Any] = {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": "0", "secureServing": False},
        "webhook": {"port": port, "host": "127.0.0.1"},
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
    }
    if qps:
        config["clientConnection"] = {"qps": qps, "burst": 2 * qps}
    if workers:
        config["controller"] = {"groupKindConcurrency": {"TrainJob.trainer.kubeflow.org": workers}}
    return config


def start_trainer(plane: ControlPlane, binary: Path, *, qps: int | None = None, workers: int | None = None) -> int:
    """Start the Trainer controller manager and register its webhooks; returns the port.
    ``qps`` and ``workers`` as in :func:`trainer_config`; None keeps the Trainer's default."""
    assert plane.workdir is not None
    home = plane.workdir / "trainer"
    # The Trainer has no cert directory option: controller-runtime's default is under TMPDIR.
    certs = home / "tmp" / "k8s-webhook-server" / "serving-certs"
    certs.mkdir(parents=True, exist_ok=True)
    serving = plane.issue_serving_cert("trainer-webhook")
    (certs / "tls.crt").write_bytes(serving.cert.read_bytes())
    (certs / "tls.key").write_bytes(serving.key.read_bytes())
    (certs / "tls.key").chmod(0o600)
    port, health = free_port(), free_port()
    config = trainer_config(port, health, qps=qps, workers=workers)
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "TMPDIR": str(home / "tmp")}
    plane.start_process(
        "trainer-controller-manager",
        [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--config={home / 'config.yaml'}"],
        env=env,
        ready=lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"),
        what="trainer /readyz",
    )
    with plane.api_client() as api_client:
        apply_objects(api_client, webhook_configurations("trainer", TRAINER_HOOKS, port, plane.ca_cert.read_bytes()))
    return port


#: kwok's options as its own defaults set them; a configuration file is not defaulted (an option
#: it leaves out is zero: no stage worker at all), so the file states every one
KWOK_DEFAULT_OPTIONS: dict[str, Any] = {
    "cidr": "10.0.0.0/24",
    "manageAllNodes": False,
    "enableDebuggingHandlers": True,
    "enableContentionProfiling": False,
    "enableProfilingHandler": True,
    "podPlayStageParallelism": 4,
    "nodePlayStageParallelism": 4,
    "nodeLeaseParallelism": 4,
    "podsOnNodeSyncParallelism": 1,
    "enablePodsOnNodeSyncListPager": True,
    "enablePodsOnNodeSyncStreamWatch": False,
}


def kwok_config(lease_parallelism: int) -> dict[str, Any]:
    """kwok's own configuration file, for what it takes no flag for: how many node Leases it
    renews at once (upstream 4, which on a saturated API server renews about 20 a second)."""
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {**KWOK_DEFAULT_OPTIONS, "nodeLeaseParallelism": lease_parallelism},
    }


def start_kwok(plane: ControlPlane, binary: Path, *, lease_seconds: int = 40, lease_parallelism: int | None = None) -> int:
    """Start kwok for the ``type=kwok`` nodes; returns its kubelet port."""
    assert plane.workdir is not None
    home = plane.workdir / "kwok"
    (home / "home").mkdir(parents=True, exist_ok=True)
    serving = plane.issue_kubelet_serving_cert("kwok")
    port = free_port()
    argv = [
        str(binary),
        f"--kubeconfig={plane.kubeconfig}",
        "--manage-nodes-with-label-selector=type=kwok",
        "--node-ip=127.0.0.1",
        f"--node-port={port}",
        f"--server-address=127.0.0.1:{port}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        "--enable-crds=Stage,Logs,ClusterLogs",
        f"--node-lease-duration-seconds={lease_seconds}",
    ]
    if lease_parallelism:
        config = home / "kwok.yaml"
        config.write_text(yaml.safe_dump(kwok_config(lease_parallelism)))
        argv.append(f"--config={config}")
    # kwok reads ~/.kwok/kwok.yaml by default: give it an empty home.
    env = {**os.environ, "HOME": str(home / "home")}
    plane.start_process(
        "kwok",
        argv,
        env=env,
        ready=lambda: _kwok_ready(plane, port),
        what="kwok kubelet endpoint",
    )
    return port


def _kwok_ready(plane: ControlPlane, port: int) -> bool:
    import ssl

    context = ssl.create_default_context(cafile=str(plane.ca_cert))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=3):
            return True
    except urllib.error.HTTPError:
        return True  # it answers TLS with the harness certificate: serving
