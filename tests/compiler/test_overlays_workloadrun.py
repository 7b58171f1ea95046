"""Platform overlays for WorkloadRuns (entries workloadrun/mpi, workloadrun/torch, workloadrun/exec).

Every case renders a WorkloadRun through the real render path and checks what the platform
overlays put into its one Workflow: forwarded variables (MPI) or trainer env (torch, exec),
resources, claims, tolerations, annotations, dependencies and mpirun options. Around those facts:
the user's image, mpirun and binary are never replaced, spec.env wins by name, no variable is
forwarded twice, NCCL_NVLS_ENABLE=1 appears only where a profile keeps it with a reason, every
overlay fires exactly on the platforms and architectures it names, and none of them reaches a
Certification.
"""

from __future__ import annotations

import itertools
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.facts import load_facts
from nvcre.compiler.mpi_args import forward_pairs, forwarded_names
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.workloadrun import render_workloadrun
from tests.platform_profiles import (
    AZURE_A100,
    AZURE_H100_EXTRA,
    AZURE_IB,
    FORGE_IB,
    GB200_BASE,
    GPU_ANY,
    GPU_PRESENT,
    MISTRAL_IB,
    NSCALE_IB,
    ONPREM_IB,
    TOGETHER_IB,
)

FACTS = Path(__file__).parents[1] / "fixtures" / "facts"

IMAGE = "registry.example.com/team/nccl-tests:2.1"
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"
BINARY = "/opt/nccl-tests/build/all_reduce_perf"
BINARY_ARGS = ["-b", "8", "-e", "8G", "-f", "2"]
FRAMEWORK_SPECS = {
    "mpi": {"binary": BINARY, "mpirunPath": MPIRUN, "args": BINARY_ARGS},
    "torch": {"script": "/config/train.py", "args": ["--steps", "10"]},
    "exec": {"command": ["/app/run-nccl"], "args": ["--all"]},
}
FRAMEWORKS = list(FRAMEWORK_SPECS)
LEADING = ["--allow-run-as-root", "--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no"]
WORKLOADRUN_ENTRIES = {"workloadrun/mpi", "workloadrun/torch", "workloadrun/exec"}

ARCHS = sorted(load_catalog().gpu_defaults.architectures)
PLATFORMS = list(platform_names())

ARM64 = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}

# --- the profiles, written out independently of the overlay templates -------------------------------

EFA = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_EFA_FORK_SAFE": "1", "NCCL_SOCKET_IFNAME": "eth0"}
AWS_GB300 = {
    "NCCL_DEBUG_SUBSYS": "NET,INIT",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_NVLS_ENABLE": "1",
    "NCCL_CUMEM_ENABLE": "1",
    "NCCL_NET_GDR_C2C": "1",
}
ROCE_TCP_ARGS = [
    "--mca",
    "pml",
    "ob1",
    "--mca",
    "btl",
    "tcp,self",
    "--mca",
    "btl_tcp_if_include",
    "eth0",
    "--mca",
    "oob",
    "tcp",
    "--mca",
    "oob_tcp_if_include",
    "eth0",
]
UCC_HCOLL_OFF_ARGS = ["--mca", "coll_ucc_enable", "0", "--mca", "coll_hcoll_enable", "0"]
OCI_SHARED = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_TC": "41",
    "NCCL_IB_SL": "0",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_SOCKET_IFNAME": "eth0",
    "OMPI_MCA_coll_hcoll_enable": "0",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
}
OCI_QP = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_SPLIT_DATA_ON_QPS": "0"}
OCI_GB300 = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_ADAPTIVE_ROUTING": "1", "NCCL_IB_SPLIT_DATA_ON_QPS": "1"}
UCX_GID = {"UCX_IB_GID_INDEX": "3"}
AZURE_H100 = {**AZURE_IB, **AZURE_H100_EXTRA}
GKE_DEFAULT_IFNAMES = "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
FASTRAK = {
    "NCCL_FASTRAK_IFNAME": GKE_DEFAULT_IFNAMES,
    "NCCL_FASTRAK_CTRL_DEV": "eth0",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_CROSS_NIC": "0",
    "NCCL_PROTO": "Simple,LL128",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": "131072",
    "NCCL_MIN_NCHANNELS": "4",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_P2P_PCI_CHUNKSIZE": "524288",
    "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
    "NCCL_FASTRAK_NUM_FLOWS": "2",
    "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL": "0",
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_FASTRAK_USE_SNAP": "1",
    "NCCL_FASTRAK_USE_LLCM": "1",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING": "0",
    "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
    "NCCL_TUNER_CONFIG_PATH": "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto",
    "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": "/usr/local/nvidia/lib64/a3plus_guest_config.textproto",
    "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS": "600000",
    "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
    "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
    "NCCL_NVLS_ENABLE": "0",
    "NCCL_CUMEM_ENABLE": "1",
    "NCCL_NET_GDR_C2C": "1",
}
FASTRAK_MPI_ONLY = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64"}


def rank_env(platform: str, arch: str, framework: str) -> dict[str, str]:
    """The variables the platform overlays hand the ranks for a pair, written out by hand."""
    mpi = framework == "mpi"
    if platform == "aws":
        return {"h100": EFA, "gb200": EFA, "gb300": AWS_GB300}.get(arch, {})
    if platform == "onprem":
        return ONPREM_IB if arch in ("gb200", "gb300") else {}
    if platform == "nscale":
        return NSCALE_IB if arch in ("b200", "gb300") else {}
    if platform == "oci":
        tail = OCI_GB300 if arch == "gb300" else OCI_QP
        ucx = UCX_GID if arch in ("gb200", "gb300") and not mpi else {}
        return {**OCI_SHARED, **tail, **ucx}
    if platform == "gcp":
        return {**(FASTRAK_MPI_ONLY if mpi else {}), **FASTRAK} if arch == "h100" else {}
    if platform == "azure":
        return {
            "a100": AZURE_A100,
            "h100": AZURE_H100,
            "h200": AZURE_IB,
            "gb200": {**AZURE_IB, **GB200_BASE},
            "gb300": {**AZURE_IB, **GB200_BASE},
        }.get(arch, {})
    if platform == "togetherai":
        chunk = {"NCCL_P2P_NET_CHUNKSIZE": "2097152"} if arch in ("gb200", "gb300") else {}
        return {**TOGETHER_IB, **chunk}
    if platform == "forge":
        return FORGE_IB if arch == "l40" else {}
    if platform == "mistral":
        return MISTRAL_IB if arch == "gb300" else {}
    raise AssertionError(platform)


#: The intended reach of every WorkloadRun overlay under default options: platform (None: every
#: platform), architectures, frameworks. Written out here so a widened or narrowed ``when`` fails.
ALL_FW = frozenset(FRAMEWORKS)
SCOPE: dict[str, tuple[str | None, set[str], frozenset[str]]] = {
    "workloadrun-compute-domain": (None, {"gb200", "gb300"}, ALL_FW),
    "aws-workloadrun-efa": ("aws", {"h100", "gb200"}, ALL_FW),
    "aws-workloadrun-gb300-roce": ("aws", {"gb300"}, ALL_FW),
    "onprem-workloadrun-gb200-gb300": ("onprem", {"gb200", "gb300"}, ALL_FW),
    "onprem-workloadrun-hgx-b200-b300": ("onprem", {"b200", "b300"}, ALL_FW),
    # needs nicResourceName (field or detection): never under defaults, see its own test
    "onprem-workloadrun-nic-request": ("onprem", set(), ALL_FW),
    "nscale-workloadrun-dra-claims": ("nscale", {"b200", "gb300"}, ALL_FW),
    "nscale-workloadrun-ib-env": ("nscale", {"b200", "gb300"}, ALL_FW),
    "nscale-workloadrun-gb300-tray": ("nscale", {"gb300"}, ALL_FW),
    # every OCI shape whose default mlnxPerNode is above 0 (GB200 and RTX PRO 6000 default to 0)
    "oci-workloadrun-sriov-nics": ("oci", set(ARCHS) - {"gb200", "rtxpro6000"}, ALL_FW),
    "oci-workloadrun-roce-env": ("oci", set(ARCHS), ALL_FW),
    "oci-workloadrun-roce-mpi": ("oci", {"gb200", "gb300"}, frozenset({"mpi"})),
    "gcp-workloadrun-h100-tcpxo": ("gcp", {"h100"}, ALL_FW),
    "azure-workloadrun-ib-topo": ("azure", {"a100", "h100", "h200", "gb200", "gb300"}, ALL_FW),
    "azure-workloadrun-ib-env": ("azure", {"a100", "h100", "h200", "gb200", "gb300"}, ALL_FW),
    "togetherai-workloadrun-ib": ("togetherai", set(ARCHS), ALL_FW),
    "forge-workloadrun-ib": ("forge", {"l40"}, ALL_FW),
    "mistral-workloadrun-gb300-ib": ("mistral", {"gb300"}, ALL_FW),
}
NVLS_KEPT = {("azure", "h100"), ("aws", "gb300"), ("nscale", "b200"), ("nscale", "gb300")}

#: (platform, arch) pairs the platform WorkloadRun overlays are written for (the compute domain
#: reaches GB200/GB300 everywhere on top of these)
COVERED = [
    ("aws", "h100"),
    ("aws", "gb200"),
    ("aws", "gb300"),
    ("onprem", "gb200"),
    ("onprem", "gb300"),
    ("onprem", "b200"),
    ("onprem", "b300"),
    ("nscale", "b200"),
    ("nscale", "gb300"),
    ("oci", "l40s"),
    ("oci", "h100"),
    ("oci", "gb200"),
    ("oci", "gb300"),
    ("gcp", "h100"),
    ("azure", "a100"),
    ("azure", "h100"),
    ("azure", "h200"),
    ("azure", "gb200"),
    ("azure", "gb300"),
    ("togetherai", "h100"),
    ("togetherai", "gb200"),
    ("togetherai", "gb300"),
    ("forge", "l40"),
    ("mistral", "gb300"),
]
COVERED_RUNS = [(p, a, f) for p, a in COVERED for f in FRAMEWORKS]
RUN_IDS = [f"{p}-{a}-{f}" for p, a, f in COVERED_RUNS]
#: the runs whose pair sets variables (on-prem HGX sets none)
ENV_RUNS = [run for run in COVERED_RUNS if run[:2] not in {("onprem", "b200"), ("onprem", "b300")}]


# --- helpers -------------------------------------------------------------------------------------


def run_doc(framework: str = "mpi", **spec: Any) -> dict:
    body: dict[str, Any] = {"image": IMAGE, "numNodes": 2, "framework": {framework: dict(FRAMEWORK_SPECS[framework])}}
    body.update(spec)
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "wr"}, "spec": body}


def render(platform: str, arch: str | None, framework: str = "mpi", facts: str | None = None, **spec: Any) -> dict:
    rendered = render_workloadrun(
        run_doc(framework, **spec),
        platform=platform,
        gpu_arch=arch,
        facts=load_facts(FACTS / facts) if facts else None,
        check_purity=True,
    )
    (workflow,) = rendered.workflows
    return workflow


@lru_cache(maxsize=None)
def _cached(platform: str, arch: str, framework: str) -> str:
    return json.dumps(render(platform, arch, framework))


def default_render(platform: str, arch: str, framework: str) -> dict:
    """The render with no extra spec fields, cached (callers get a private copy)."""
    return json.loads(_cached(platform, arch, framework))


def applied(workflow: dict) -> list[str]:
    return json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"])


def trainer(workflow: dict) -> dict:
    return workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def dependencies(workflow: dict, kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in workflow["spec"]["dependencies"] if d["kind"] == kind}


def runtime(workflow: dict) -> dict:
    (rt,) = dependencies(workflow, "TrainingRuntime").values()
    return rt


def jobs(workflow: dict) -> dict[str, dict]:
    return {j["name"]: j for j in runtime(workflow)["spec"]["template"]["spec"]["replicatedJobs"]}


def pod(workflow: dict, job: str = "node") -> dict:
    return jobs(workflow)[job]["template"]["spec"]["template"]


def container(workflow: dict, job: str = "node", name: str = "node") -> dict:
    return next(c for c in pod(workflow, job)["spec"]["containers"] if c["name"] == name)


def forwarded(workflow: dict) -> dict[str, str]:
    args = trainer(workflow)["args"]
    return dict(str(args[i + 1]).split("=", 1) for i, _ in forward_pairs(args))


def trainer_env(workflow: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in trainer(workflow).get("env") or []}


def rank_vars(workflow: dict, framework: str) -> dict[str, str]:
    """What the ranks receive: the forwarded pairs (MPI) or the trainer env (torch, exec)."""
    return forwarded(workflow) if framework == "mpi" else trainer_env(workflow)


def base_vars(framework: str, arch: str) -> dict[str, str]:
    mnnvl = "1" if arch in ("gb200", "gb300") else "0"
    return {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": mnnvl} if framework == "mpi" else {"NCCL_MNNVL_ENABLE": mnnvl}


def my_overlay_names() -> set[str]:
    return {o.name for o in load_overlays().overlays if o.source.split("/")[1].startswith("workloadrun-")}


def every_env(workflow: dict):
    """(where, env list) for the trainer and every container of the runtime."""
    yield "trainer", trainer(workflow).get("env") or []
    for name, job in jobs(workflow).items():
        spec = job["template"]["spec"]["template"]["spec"]
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            yield f"{name}/{c['name']}", c.get("env") or []


# --- the overlay files themselves ------------------------------------------------------------------


def test_every_workloadrun_overlay_is_listed_and_names_only_workloadrun_entries():
    mine = [o for o in load_overlays().overlays if o.source.split("/")[1].startswith("workloadrun-")]
    assert {o.name for o in mine} == set(SCOPE)
    for overlay in mine:
        when = overlay.when
        assert when.entry is not None and when.entry.in_ and set(when.entry.in_) <= WORKLOADRUN_ENTRIES, overlay.name
        assert when.source_kind is not None and when.source_kind.equals == "WorkloadRun", overlay.name
        assert overlay.reason and "\n" not in overlay.reason, overlay.name
        folder = overlay.source.split("/")[0]
        if folder == "common":
            assert when.platform is None, overlay.name
        else:
            assert when.platform is not None and when.platform.in_ == (folder,), overlay.name
            assert overlay.name.startswith(f"{folder}-workloadrun-"), overlay.name
        if when.all_architectures:
            assert folder in ("oci", "togetherai"), overlay.name  # the fabric is the same on every shape
        else:
            assert when.gpu_architecture is not None and when.gpu_architecture.in_, overlay.name


def test_no_catalog_overlay_reaches_a_workloadrun_entry():
    for overlay in load_overlays().overlays:
        if overlay.name in SCOPE:
            continue
        entries = set(overlay.when.entry.in_ or ()) if overlay.when.entry else None
        assert entries is not None and not entries & WORKLOADRUN_ENTRIES, overlay.name


# --- scope -----------------------------------------------------------------------------------------

GRID = list(itertools.product(PLATFORMS, ARCHS, FRAMEWORKS))


@pytest.mark.parametrize(("platform", "arch", "framework"), GRID, ids=[f"{p}-{a}-{f}" for p, a, f in GRID])
def test_overlays_fire_exactly_where_intended_and_keep_the_global_rules(platform, arch, framework):
    wf = default_render(platform, arch, framework)
    expected = sorted(name for name, (p, archs, fws) in SCOPE.items() if p in (None, platform) and arch in archs and framework in fws)
    assert sorted(n for n in applied(wf) if n in SCOPE) == expected
    # no variable forwarded twice, no env list repeating a name
    if framework == "mpi":
        names = forwarded_names(trainer(wf)["args"])
        assert len(names) == len(set(names)), names
    nvls = [rank_vars(wf, framework).get("NCCL_NVLS_ENABLE")]
    for where, env in every_env(wf):
        env_names = [e["name"] for e in env]
        assert len(env_names) == len(set(env_names)), where
        nvls += [e.get("value") for e in env if e["name"] == "NCCL_NVLS_ENABLE"]
    # NVLS forced on only where a profile keeps it with a recorded reason
    assert ("1" in nvls) == ((platform, arch) in NVLS_KEPT), nvls


@pytest.mark.parametrize(("platform", "arch"), COVERED, ids=[f"{p}-{a}" for p, a in COVERED])
def test_no_workloadrun_overlay_fires_for_a_certification(platform, arch):
    categories = []
    for key in load_catalog().keys():
        domain, variant = key.split("/")
        categories.append({"domain": domain, "variant": variant, "options": {"nodesPerJob": 8}})
    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "cert"},
        "spec": {"target": {}, "categories": categories, "nicResourceName": "rdma/ib"},
    }
    rendered = render_certification(cert, platform=platform, gpu_arch=arch)
    mine = my_overlay_names()
    assert len(rendered.workflows) == len(categories)
    for workflow in rendered.workflows:
        assert not set(applied(workflow)) & mine, workflow["metadata"]["name"]


# --- env, image and binary on every covered pair ------------------------------------------------


@pytest.mark.parametrize(("platform", "arch", "framework"), COVERED_RUNS, ids=RUN_IDS)
def test_the_ranks_receive_exactly_the_platform_profile(platform, arch, framework):
    wf = default_render(platform, arch, framework)
    assert rank_vars(wf, framework) == {**base_vars(framework, arch), **rank_env(platform, arch, framework)}
    if framework == "mpi":
        assert "env" not in trainer(wf)  # ranks start under sshd: -x pairs only
    else:
        assert "args" not in trainer(wf) or "-x" not in trainer(wf)["args"]


@pytest.mark.parametrize(("platform", "arch", "framework"), COVERED_RUNS, ids=RUN_IDS)
def test_the_users_image_mpirun_and_binary_are_untouched(platform, arch, framework):
    wf = default_render(platform, arch, framework)
    spec = trainer(wf)
    assert spec["image"] == IMAGE
    for job in jobs(wf).values():
        pod_spec = job["template"]["spec"]["template"]["spec"]
        for c in pod_spec["containers"] + (pod_spec.get("initContainers") or []):
            if c["name"] != "tcpxo-daemon":  # GCP's RxDM sidecar keeps its own image
                assert c["image"] == IMAGE, c["name"]
    if framework == "mpi":
        args = spec["args"]
        assert spec["command"] == [MPIRUN]
        assert args[:2] == ["-N", str(spec["numProcPerNode"])] and args[2:6] == LEADING
        assert args[-len(BINARY_ARGS) - 1 :] == [BINARY, *BINARY_ARGS] and args.count(BINARY) == 1
        last_pair = forward_pairs(args)[-1][0]
        assert args[last_pair + 2] == BINARY  # every -x pair (and any option) comes before the binary
    elif framework == "torch":
        assert spec["command"] == ["torchrun"] and spec["args"] == ["/config/train.py", "--steps", "10"]
    else:
        assert spec["command"] == ["/app/run-nccl"] and spec["args"] == ["--all"]


@pytest.mark.parametrize(("platform", "arch", "framework"), ENV_RUNS, ids=[f"{p}-{a}-{f}" for p, a, f in ENV_RUNS])
def test_spec_env_wins_over_every_overlay_value_by_name(platform, arch, framework):
    profile = rank_env(platform, arch, framework)
    assert profile
    user = [{"name": name, "value": f"user-{index}"} for index, name in enumerate(profile)]
    wf = render(platform, arch, framework, env=user)
    got = rank_vars(wf, framework)
    assert got == {**base_vars(framework, arch), **{e["name"]: e["value"] for e in user}}
    if framework == "mpi":
        names = forwarded_names(trainer(wf)["args"])
        assert len(names) == len(set(names))
    else:
        names = [e["name"] for e in trainer(wf)["env"]]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_spec_env_switches_forced_nvls_off(framework):
    for platform, arch in sorted(NVLS_KEPT):
        wf = render(platform, arch, framework, env=[{"name": "NCCL_NVLS_ENABLE", "value": "0"}])
        assert rank_vars(wf, framework)["NCCL_NVLS_ENABLE"] == "0"
        if framework == "mpi":
            assert forwarded_names(trainer(wf)["args"]).count("NCCL_NVLS_ENABLE") == 1


# --- GB200/GB300 ComputeDomain, every platform ------------------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_gb200_gb300_get_a_compute_domain_sized_to_the_job(platform, framework):
    wf = render(platform, "gb300", framework, numNodes=3)
    prefix = "wr"  # objects overlays add are named after the run
    (domain,) = dependencies(wf, "ComputeDomain").values()
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert domain["metadata"] == {"name": f"{prefix}-compute-domain", "labels": {"app": prefix}}
    assert domain["spec"] == {
        "numNodes": 3,
        "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": f"{prefix}-channel"}},
    }
    claim = "compute-domain-channel" if framework == "mpi" else "compute-domain"
    assert {"name": claim, "resourceClaimTemplateName": f"{prefix}-channel"} in pod(wf)["spec"]["resourceClaims"]
    assert {"name": claim} in container(wf)["resources"]["claims"]
    if framework == "mpi":
        assert "resourceClaims" not in pod(wf, "launcher")["spec"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_compute_domain_follows_enable_mnnvl(framework):
    wf = render("onprem", "gb200", framework, enableMNNVL=False)
    assert "workloadrun-compute-domain" not in applied(wf)
    assert not dependencies(wf, "ComputeDomain")
    assert "resourceClaims" not in pod(wf)["spec"]
    assert rank_vars(wf, framework)["NCCL_MNNVL_ENABLE"] == "0"


# --- AWS ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arch", "count"), [("h100", "32"), ("gb200", "4")])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_aws_efa_devices_and_ipc_lock_on_the_worker(arch, count, framework):
    wf = render("aws", arch, framework)
    worker = container(wf)
    gpus = "8" if arch == "h100" else "4"
    for kind in ("limits", "requests"):
        assert worker["resources"][kind] == {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": count}
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    if framework == "mpi":
        assert worker["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_CHROOT"]  # sshd keeps its own
        launcher = container(wf, "launcher")
        assert launcher["resources"] == {"limits": {"cpu": "2", "memory": "1Gi"}}
        assert "env" not in launcher
    assert not dependencies(wf, "ResourceClaimTemplate")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_aws_gb300_claims_roce_devices_and_omits_them_at_zero(framework):
    wf = render("aws", "gb300", framework)
    prefix = "wr"  # objects overlays add are named after the run
    (template,) = dependencies(wf, "ResourceClaimTemplate").values()
    assert template["metadata"]["name"] == f"{prefix}-roce"
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "roce", "exactly": {"deviceClassName": "roce.networking.k8s.aws", "allocationMode": "ExactCount", "count": 8}}
    ]
    assert {"name": "roce-channel", "resourceClaimTemplateName": f"{prefix}-roce"} in pod(wf)["spec"]["resourceClaims"]
    assert {"name": "roce-channel"} in container(wf)["resources"]["claims"]
    assert "vpc.amazonaws.com/efa" not in container(wf)["resources"]["limits"]

    wf = render("aws", "gb300", framework, mlnxPerNode=0)
    assert not dependencies(wf, "ResourceClaimTemplate")
    assert [c["name"] for c in pod(wf)["spec"]["resourceClaims"]] == ["compute-domain-channel" if framework == "mpi" else "compute-domain"]
    assert rank_vars(wf, framework)["NCCL_IB_GID_INDEX"] == "3"  # the transport env stays


def test_aws_gb300_mpi_transport_goes_after_the_leading_options_and_keeps_the_anchor():
    doc_env = [{"name": "NCCL_IB_GID_INDEX", "value": "5"}, {"name": "MY_VAR", "value": "x"}]
    wf = render("aws", "gb300", "mpi", env=doc_env)
    args = trainer(wf)["args"]
    assert args[:6] == ["-N", "4", *LEADING]
    assert args[6 : 6 + len(ROCE_TCP_ARGS)] == ROCE_TCP_ARGS
    assert args[6 + len(ROCE_TCP_ARGS)] == "-x"
    assert UCC_HCOLL_OFF_ARGS[1] not in args  # AWS does not disable UCC/HCOLL
    got = forwarded(wf)
    assert got["NCCL_IB_GID_INDEX"] == "5" and got["MY_VAR"] == "x"
    # the user's variable went to the anchor: after the last platform pair, before the binary
    assert args[args.index("MY_VAR=x") + 1] == BINARY


def test_aws_gb300_mpi_keeps_the_users_mpi_args_before_the_binary():
    doc = run_doc("mpi")
    doc["spec"]["framework"]["mpi"]["mpiArgs"] = ["--bind-to", "none", "-x", "SITE_VAR=1"]
    (wf,) = render_workloadrun(doc, platform="aws", gpu_arch="gb300", check_purity=True).workflows
    args = trainer(wf)["args"]
    assert args[-len(BINARY_ARGS) - 1 :] == [BINARY, *BINARY_ARGS]
    assert args[args.index("--bind-to") : args.index("--bind-to") + 4] == ["--bind-to", "none", "-x", "SITE_VAR=1"]
    assert args.index("NCCL_NET_GDR_C2C=1") < args.index(BINARY)
    names = forwarded_names(args)
    assert names.count("SITE_VAR") == 1 and len(names) == len(set(names))


# --- on-prem -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_onprem_gb200_gb300_tolerations_on_workers_and_launcher(arch, framework):
    wf = render("onprem", arch, framework)
    assert pod(wf)["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    if framework == "mpi":
        assert pod(wf, "launcher")["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    else:
        assert list(jobs(wf)) == ["node"]
    assert "NCCL_NVLS_ENABLE" not in rank_vars(wf, framework)
    assert "NCCL_IB_HCA" not in rank_vars(wf, framework) and "UCX_NET_DEVICES" not in rank_vars(wf, framework)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_onprem_tolerations_keep_the_taint_selectors_and_the_blanket_one(framework):
    selector = {"key": "burn-in", "value": "yes", "effect": "NoSchedule"}
    own = {"key": "burn-in", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    target = {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "taintSelectors": [selector]}
    wf = render("onprem", "gb300", framework, target=target)
    assert pod(wf)["spec"]["tolerations"] == [own, ARM64, GPU_PRESENT]
    wf = render("onprem", "b200", framework, target=target)
    assert pod(wf)["spec"]["tolerations"] == [own, GPU_ANY]
    # a selector that is already one of the added tolerations is not repeated
    target = {
        "nodeSelector": {"nvidia.com/gpu.present": "true"},
        "taintSelectors": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    wf = render("onprem", "gb200", framework, target=target)
    assert pod(wf)["spec"]["tolerations"] == [GPU_PRESENT, ARM64]


@pytest.mark.parametrize("arch", ["b200", "b300"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_onprem_hgx_tolerates_the_gpu_taint_and_sets_no_nccl_env(arch, framework):
    wf = render("onprem", arch, framework)
    assert pod(wf)["spec"]["tolerations"] == [GPU_ANY]
    if framework == "mpi":
        assert pod(wf, "launcher")["spec"]["tolerations"] == [GPU_ANY]
    assert rank_vars(wf, framework) == base_vars(framework, arch)
    assert not dependencies(wf, "ComputeDomain")


@pytest.mark.parametrize("arch", ["gb200", "gb300", "b200", "b300"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_onprem_nic_request_from_the_field(arch, framework):
    wf = render("onprem", arch, framework, nicResourceName="nvidia.com/mlnxnics", mlnxPerNode=4)
    assert "onprem-workloadrun-nic-request" in applied(wf)
    for kind in ("limits", "requests"):
        assert container(wf)["resources"][kind]["nvidia.com/mlnxnics"] == "4"
    if framework == "mpi":
        assert "nvidia.com/mlnxnics" not in json.dumps(container(wf, "launcher"))
    for spec in ({"nicResourceName": "rdma/ib", "mlnxPerNode": 0}, {}):
        wf = render("onprem", arch, framework, **spec)
        assert "onprem-workloadrun-nic-request" not in applied(wf)
        assert "rdma/ib" not in json.dumps(container(wf)["resources"])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_onprem_nic_request_from_detection(framework):
    wf = render("onprem", None, framework, facts="onprem-gb200-rdma.yaml")
    assert "onprem-workloadrun-nic-request" in applied(wf)
    for kind in ("limits", "requests"):
        assert container(wf)["resources"][kind]["rdma/ib"] == "8"
    # two candidates qualify: no name is detected, so nothing is requested and the pods still schedule
    wf = render("onprem", None, framework, facts="onprem-gb300-ambiguous-nics.yaml")
    assert "onprem-workloadrun-nic-request" not in applied(wf)
    assert set(container(wf)["resources"]["limits"]) == {"nvidia.com/gpu"}


def test_onprem_overlays_leave_h100_alone():
    for framework in FRAMEWORKS:
        wf = render("onprem", "h100", framework, nicResourceName="rdma/ib")
        assert not set(applied(wf)) & set(SCOPE)
        assert "tolerations" not in pod(wf)["spec"]


# --- Nscale ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arch", "gpus", "nics"), [("b200", 8, 8), ("gb300", 4, 4)])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_nscale_claims_gpus_and_rdma_through_dra(arch, gpus, nics, framework):
    wf = render("nscale", arch, framework)
    prefix = "wr"  # objects overlays add are named after the run
    templates = dependencies(wf, "ResourceClaimTemplate")
    assert templates[f"{prefix}-gpu"]["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": gpus}}
    ]
    assert templates[f"{prefix}-rdma"]["spec"]["spec"]["devices"]["requests"] == [
        {"name": "rdma", "exactly": {"deviceClassName": "rdma.nscale.com", "allocationMode": "ExactCount", "count": nics}}
    ]
    claims = pod(wf)["spec"]["resourceClaims"]
    assert {"name": "gpu", "resourceClaimTemplateName": f"{prefix}-gpu"} in claims
    assert {"name": "rdma", "resourceClaimTemplateName": f"{prefix}-rdma"} in claims
    resources = container(wf)["resources"]
    assert "nvidia.com/gpu" not in json.dumps(resources)
    assert "limits" not in resources and "requests" not in resources  # nothing else was asked for
    assert {"name": "gpu"} in resources["claims"] and {"name": "rdma"} in resources["claims"]
    assert trainer(wf)["numProcPerNode"] == gpus


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_nscale_keeps_the_users_other_resources_and_omits_rdma_at_zero(framework):
    resources = {"limits": {"cpu": "16", "nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": 8}}
    wf = render("nscale", "b200", framework, resources=resources, mlnxPerNode=0)
    got = container(wf)["resources"]
    assert got["limits"] == {"cpu": "16"} and "requests" not in got
    assert got["claims"] == [{"name": "gpu"}]
    assert set(dependencies(wf, "ResourceClaimTemplate")) == {"wr-gpu"}
    assert [c["name"] for c in pod(wf)["spec"]["resourceClaims"]] == ["gpu"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_nscale_gb300_tolerations_and_accelerator_domain(framework):
    wf = render("nscale", "gb300", framework, orchestration={"testScale": "intra-rack"})
    assert pod(wf)["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    if framework == "mpi":
        assert pod(wf, "launcher")["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    assert wf["spec"]["orchestration"]["topology"] == {"topologyKey": "topology.nks.nscale.com/accelerator-domain", "strictDomain": True}
    assert "topology" not in render("nscale", "gb300", framework)["spec"]["orchestration"]
    b200 = render("nscale", "b200", framework, orchestration={"testScale": "intra-rack"})
    assert "tolerations" not in pod(b200)["spec"]
    assert b200["spec"]["orchestration"]["topology"]["topologyKey"] == "nvidia.com/gpu.clique"


def test_nscale_does_not_pin_nccl_net():
    for arch in ("b200", "gb300"):
        assert "NCCL_NET" not in forwarded(render("nscale", arch, "mpi"))


# --- OCI ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arch", "nics"), [("gb300", 4), ("l40s", 2), ("h100", 8), ("gb200", 0)])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_oci_sriov_attachments_and_mlnxnics(arch, nics, framework):
    wf = render("oci", arch, framework)
    annotations = (pod(wf).get("metadata") or {}).get("annotations") or {}
    resources = container(wf)["resources"]
    if nics:
        assert annotations["k8s.v1.cni.cncf.io/networks"] == ",".join(["network-operator/sriov-net"] * nics)
        assert resources["limits"]["nvidia.com/mlnxnics"] == resources["requests"]["nvidia.com/mlnxnics"] == str(nics)
    else:
        assert "k8s.v1.cni.cncf.io/networks" not in annotations
        assert "nvidia.com/mlnxnics" not in json.dumps(resources)
    if framework == "mpi":
        assert "annotations" not in (pod(wf, "launcher").get("metadata") or {})


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_oci_gb200_opts_back_into_nics_with_mlnx_per_node(framework):
    wf = render("oci", "gb200", framework, mlnxPerNode=2)
    assert pod(wf)["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "network-operator/sriov-net,network-operator/sriov-net"


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
def test_oci_gb_mpi_args_and_launcher_ucx(arch):
    wf = render("oci", arch, "mpi")
    args = trainer(wf)["args"]
    inserted = ROCE_TCP_ARGS + UCC_HCOLL_OFF_ARGS
    assert args[:6] == ["-N", "4", *LEADING]
    assert args[6 : 6 + len(inserted)] == inserted
    assert args[6 + len(inserted) : 6 + len(inserted) + 2] == ["-x", "NCCL_DEBUG=INFO"]
    assert container(wf, "launcher")["env"] == [{"name": "UCX_IB_GID_INDEX", "value": "3"}]
    assert "UCX_IB_GID_INDEX" not in forwarded(wf)
    assert "env" not in container(wf)


@pytest.mark.parametrize("arch", ["l40s", "h100"])
def test_oci_other_shapes_keep_the_catalog_mpirun_options(arch):
    wf = render("oci", arch, "mpi")
    args = trainer(wf)["args"]
    assert args[6] == "-x" and "ob1" not in args
    assert "env" not in container(wf, "launcher")


def test_oci_gb300_owns_its_gid_and_split_values():
    for framework in FRAMEWORKS:
        got = rank_vars(render("oci", "gb300", framework), framework)
        assert got["NCCL_IB_SPLIT_DATA_ON_QPS"] == "1" and got["NCCL_IB_GID_INDEX"] == "3"
        got = rank_vars(render("oci", "l40s", framework), framework)
        assert got["NCCL_IB_SPLIT_DATA_ON_QPS"] == "0" and "NCCL_IB_ADAPTIVE_ROUTING" not in got


# --- GCP H100 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_gcp_h100_tcpxo_sidecar_networks_and_mounts(framework):
    wf = render("gcp", "h100", framework)
    worker_pod = pod(wf)
    annotations = worker_pod["metadata"]["annotations"]
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert interfaces[1:] == [{"interfaceName": f"eth{i + 1}", "network": f"gpu-nic{i}"} for i in range(8)]
    assert "/dev/dmabuf_import_helper" in annotations["devices.gke.io/container.tcpxo-daemon"]
    (daemon,) = worker_pod["spec"]["initContainers"]
    assert daemon["name"] == "tcpxo-daemon" and daemon["restartPolicy"] == "Always"
    assert daemon["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
    assert "--num_hops=2" in daemon["args"][0]
    mounts = {m["mountPath"] for m in container(wf)["volumeMounts"]}
    assert {"/usr/local/nvidia", "/dev/aperture_devices", "/dev/shm"} <= mounts
    assert worker_pod["spec"]["tolerations"] == [GPU_PRESENT]
    if framework == "mpi":
        launcher = pod(wf, "launcher")
        assert "tolerations" not in launcher["spec"] and "annotations" not in (launcher.get("metadata") or {})


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_gcp_h100_networks_and_plugin_come_from_the_facts(framework):
    wf = render("gcp", None, framework, facts="gcp-h100-a3mega.yaml")
    interfaces = json.loads(pod(wf)["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert [i["network"] for i in interfaces[1:]] == [f"aicr-7f3a-gpu-nic-{i}" for i in range(8)]
    assert rank_vars(wf, framework)["NCCL_FASTRAK_IFNAME"] == GKE_DEFAULT_IFNAMES
    assert trainer(wf)["image"] == IMAGE and container(wf)["image"] == IMAGE


def test_gcp_other_architectures_get_no_tcpxo():
    for arch in ("h200", "gb200", "rtxpro6000"):
        wf = render("gcp", arch, "mpi")
        assert "gcp-workloadrun-h100-tcpxo" not in applied(wf)
        assert "initContainers" not in pod(wf)["spec"]


# --- Azure ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arch", "topo"), [("a100", "ND A100 v4"), ("h100", "ND H100 v5"), ("gb300", "ND H100 v5")])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_azure_topology_configmap_mount_and_hcas(arch, topo, framework):
    wf = render("azure", arch, framework)
    name = "wr-azure-topo"
    config_map = dependencies(wf, "ConfigMap")[name]
    assert topo in config_map["data"]["topo.xml"]
    assert {"name": "nccl-topo", "configMap": {"name": name}} in pod(wf)["spec"]["volumes"]
    assert {"name": "nccl-topo", "mountPath": "/etc/nccl", "readOnly": True} in container(wf)["volumeMounts"]
    assert container(wf)["resources"]["limits"]["nvidia.com/mlnxnics"] == "8"
    assert "IPC_LOCK" in container(wf)["securityContext"]["capabilities"]["add"]
    if framework == "mpi":
        assert all(v["name"] != "nccl-topo" for v in pod(wf, "launcher")["spec"]["volumes"])
    wf = render("azure", arch, framework, mlnxPerNode=0)
    assert "nvidia.com/mlnxnics" not in json.dumps(container(wf)["resources"])
    assert dependencies(wf, "ConfigMap")[name]


def test_azure_user_config_and_topology_configmaps_coexist():
    wf = render("azure", "h100", "torch", config={"inline": {"train.py": "print(1)"}})
    assert set(dependencies(wf, "ConfigMap")) == {"wr-config", "wr-azure-topo"}
    assert {v["name"] for v in pod(wf)["spec"]["volumes"]} == {"dshm", "config-volume", "nccl-topo"}


# --- TogetherAI, Forge, Mistral --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "arch", "resource", "count"),
    [
        ("togetherai", "h100", "nvidia.com/mlnxnics", "8"),
        ("togetherai", "gb300", "nvidia.com/mlnxnics", "8"),
        ("forge", "l40", "nvidia.com/mlnxnics", "4"),
        ("mistral", "gb300", "rdma/ib", "1"),
    ],
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_nic_requests_and_their_omission_at_zero(platform, arch, resource, count, framework):
    wf = render(platform, arch, framework)
    resources = container(wf)["resources"]
    assert resources["limits"][resource] == resources["requests"][resource] == count
    if framework == "mpi":
        assert resource not in json.dumps(container(wf, "launcher"))
    wf = render(platform, arch, framework, mlnxPerNode=0)
    assert resource not in json.dumps(container(wf)["resources"])
    assert rank_vars(wf, framework) == {**base_vars(framework, arch), **rank_env(platform, arch, framework)}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_mistral_gb300_tolerates_arm64_and_gpu_taints_on_workers_and_launcher(framework):
    wf = render("mistral", "gb300", framework)
    assert pod(wf)["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    if framework == "mpi":
        assert pod(wf, "launcher")["spec"]["tolerations"] == [ARM64, GPU_PRESENT]
    b300 = render("mistral", "b300", framework)
    assert not set(applied(b300)) & set(SCOPE) and "tolerations" not in pod(b300)["spec"]
