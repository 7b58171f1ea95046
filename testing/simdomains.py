"""Multi-node NVLink on the simulated cluster: the ComputeDomain API and what NVIDIA's DRA driver does with it.

GB200/GB300 workloads that span trays reach each other's GPU memory through an IMEX channel, which
the NVIDIA DRA driver for GPUs hands out per ComputeDomain (``resource.nvidia.com/v1beta1``). The
driver's Go module is not available to the build, so the CRD here is written from the API's field
set as driver release 25.8 serves it (``spec.numNodes``, ``spec.channel.allocationMode`` and
``.resourceClaimTemplate.name``; ``status.status`` and ``status.nodes[]`` with ``name``,
``ipAddress``, ``cliqueID``, ``index`` and ``status``), not copied from the module.

What the driver does, and this module simulates:

* its controller creates, for each ComputeDomain, the workload ResourceClaimTemplate the spec names,
  in the domain's namespace, requesting one device of the ``compute-domain-default-channel.nvidia.com``
  DeviceClass with an opaque ``ComputeDomainChannelConfig`` holding the domain's UID;
* its kubelet plugin publishes an IMEX channel device per node (driver ``compute-domain.nvidia.com``,
  attributes ``type: channel``, ``id: 0``) that the scheduler allocates to each pod's claim;
* the IMEX daemon of every node a workload pod lands on joins the domain: it appears in
  ``status.nodes`` and turns ``Ready``, and stays while the domain exists; the domain is
  ``Ready`` once ``numNodes`` daemons are.

The ``imex-down`` fault keeps a node's daemon ``NotReady``: on a real node the pod then waits in
``ContainerCreating`` for ever; here kwok shows it Running and the workload player never plays it
(:mod:`nvcre.testing.simplayer`), so it makes no progress, as on hardware. Where the real driver
uses a finalizer to delete the claim template, the simulation gives it an owner reference to the
domain, so the garbage collector removes it with the domain.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .simprofiles import PROFILE_LABEL, Profile

GROUP = "resource.nvidia.com"
VERSION = "v1beta1"
PLURAL = "computedomains"
DRIVER = "compute-domain.nvidia.com"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
MNNVL_ARCHITECTURES = ("gb200", "gb300")
POLL_SECONDS = 0.5


def has_mnnvl(prof: Profile) -> bool:
    """Whether nodes of ``prof`` sit in NVLink domains that span trays (GB200/GB300 NVL72)."""
    return prof.gpu_arch in MNNVL_ARCHITECTURES


def _ready_enum() -> dict[str, Any]:
    return {"type": "string", "enum": ["Ready", "NotReady"], "default": "NotReady"}


# Long: the CustomResourceDefinition is data; its schema is written out as the API serves it.
def compute_domain_crd() -> dict[str, Any]:
    """The ``computedomains.resource.nvidia.com`` CustomResourceDefinition (v1beta1, namespaced)."""
    node = {
        "type": "object",
        "required": ["name", "ipAddress", "cliqueID"],
        "properties": {
            "name": {"type": "string"},
            "ipAddress": {"type": "string"},
            "cliqueID": {"type": "string"},
            "index": {"type": "integer"},
            "status": _ready_enum(),
        },
    }
    spec = {
        "type": "object",
        "required": ["channel"],
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "A computeDomain.spec is immutable"}],
        "properties": {
            "numNodes": {"type": "integer", "minimum": 0, "default": 0},
            "channel": {
                "type": "object",
                "required": ["resourceClaimTemplate"],
                "properties": {
                    "allocationMode": {"type": "string", "enum": ["All", "Single"], "default": "Single"},
                    "resourceClaimTemplate": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}},
                    },
                },
            },
        },
    }
    status = {
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": _ready_enum(),
            "nodes": {
                "type": "array",
                "items": node,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "ComputeDomain", "listKind": "ComputeDomainList", "plural": PLURAL, "singular": "computedomain"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def channel_device_class() -> dict[str, Any]:
    """The DeviceClass a workload's channel claim names: channel 0 of the compute-domain driver."""
    selector = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'channel' && device.attributes['{DRIVER}'].id == 0"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CHANNEL_DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


def channel_slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def channel_slice(node: str, prof: Profile) -> dict[str, Any]:
    """The ResourceSlice the driver's kubelet plugin publishes on ``node``: its IMEX channel 0."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": channel_slice_name(node), "labels": {PROFILE_LABEL: prof.name}},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}}],
        },
    }


def claim_template(domain: Mapping[str, Any]) -> dict[str, Any] | None:
    """The workload ResourceClaimTemplate the driver creates for ``domain`` (None without a name)."""
    meta = domain.get("metadata") or {}
    channel = (domain.get("spec") or {}).get("channel") or {}
    name = (channel.get("resourceClaimTemplate") or {}).get("name")
    if not name:
        return None
    uid = str(meta.get("uid") or "")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": {DOMAIN_LABEL: uid, TARGET_LABEL: "Workload"},
            "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ComputeDomain", "name": meta.get("name"), "uid": uid}],
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}],
                    "config": [
                        {
                            "requests": ["channel"],
                            "opaque": {
                                "driver": DRIVER,
                                "parameters": {
                                    "apiVersion": f"{GROUP}/{VERSION}",
                                    "kind": "ComputeDomainChannelConfig",
                                    "domainID": uid,
                                    "allocationMode": channel.get("allocationMode") or "Single",
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


def claims_template(pod: Mapping[str, Any], template: str) -> bool:
    """Whether ``pod`` claims a device from the ResourceClaimTemplate called ``template``."""
    claims = (pod.get("spec") or {}).get("resourceClaims") or []
    return any(c.get("resourceClaimTemplateName") == template for c in claims)


def domain_status(
    domain: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    nodes: Mapping[str, Mapping[str, Any]],
    imex_down: Callable[[str], bool],
) -> dict[str, Any]:
    """The status the driver reports for ``domain`` (pure): one entry per node a workload pod of
    the domain is bound to (a daemon stays once it joined, as long as the domain exists), Ready
    unless that node's IMEX daemon is down."""
    meta = domain.get("metadata") or {}
    spec = domain.get("spec") or {}
    template = ((spec.get("channel") or {}).get("resourceClaimTemplate") or {}).get("name") or ""
    bound = sorted(
        {
            str((p.get("spec") or {}).get("nodeName"))
            for p in pods
            if (p.get("metadata") or {}).get("namespace") == meta.get("namespace")
            and not (p.get("metadata") or {}).get("deletionTimestamp")
            and (p.get("spec") or {}).get("nodeName")
            and claims_template(p, template)
        }
        | {str(n.get("name")) for n in (domain.get("status") or {}).get("nodes") or [] if n.get("name")}
    )
    entries: list[dict[str, Any]] = []
    per_clique: dict[str, int] = {}
    for name in bound:
        node = nodes.get(name) or {}
        clique = str(((node.get("metadata") or {}).get("labels") or {}).get(CLIQUE_LABEL) or "")
        index = per_clique.get(clique, 0)
        per_clique[clique] = index + 1
        address = next(
            (a.get("address") for a in (node.get("status") or {}).get("addresses") or [] if a.get("type") == "InternalIP"),
            None,
        )
        entries.append(
            {
                "name": name,
                "ipAddress": str(address or f"10.200.{len(entries) // 250}.{len(entries) % 250 + 1}"),
                "cliqueID": clique,
                "index": index,
                "status": "NotReady" if imex_down(name) else "Ready",
            }
        )
    ready = sum(1 for e in entries if e["status"] == "Ready")
    wanted = int(spec.get("numNodes") or 0)
    whole = ready >= wanted if wanted > 0 else bool(entries) and ready == len(entries)
    return {"status": "Ready" if whole else "NotReady", "nodes": entries}


class DomainSimulator:
    """A thread that plays the DRA driver's ComputeDomain controller and IMEX daemons (see the module)."""

    def __init__(self, api_factory: Callable[[], Any], imex_down: Callable[[str], bool]) -> None:
        self._factory = api_factory
        self._imex_down = imex_down
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-compute-domains", daemon=True)
        self.errors: list[str] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        from kubernetes import client

        with self._factory() as api_client:
            custom = client.CustomObjectsApi(api_client)
            core = client.CoreV1Api(api_client)
            while not self._stop.is_set():
                try:
                    self.step(custom, core)
                except Exception as exc:  # keep simulating: record and go on
                    if self._stop.is_set():
                        return
                    self.errors = [*self.errors[-19:], f"{type(exc).__name__}: {exc}"]
                self._stop.wait(POLL_SECONDS)

    def step(self, custom: Any, core: Any) -> None:
        """One pass: a claim template for every new domain, and each domain's status brought up to date."""
        from kubernetes.client import ApiException

        listed: Any = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False)
        domains = [d for d in json.loads(listed.data).get("items") or [] if not d["metadata"].get("deletionTimestamp")]
        if not domains:
            return
        raw_pods: Any = core.list_pod_for_all_namespaces(_preload_content=False)
        pods = json.loads(raw_pods.data).get("items") or []
        raw_nodes: Any = core.list_node(label_selector=PROFILE_LABEL, _preload_content=False)
        nodes = {n["metadata"]["name"]: n for n in json.loads(raw_nodes.data).get("items") or []}
        for domain in domains:
            meta = domain["metadata"]
            template = claim_template(domain)
            if template is not None:
                try:
                    custom.create_namespaced_custom_object("resource.k8s.io", "v1", meta["namespace"], "resourceclaimtemplates", template)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
            status = domain_status(domain, pods, nodes, self._imex_down)
            if status != (domain.get("status") or {}):
                custom.patch_namespaced_custom_object_status(GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], {"status": status})
