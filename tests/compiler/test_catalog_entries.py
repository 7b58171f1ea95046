"""Catalog entries rendered through the option, sizing and instantiation passes.

Each test renders a real entry from the packaged catalog for a Certification and checks the
structural facts that entry must keep: object names, images, command lines, environment names
present and absent, per-option behaviour, and the parallelism errors of the training entries.
The scripts the entries ship are also executed with stand-in tools to check what they run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.passes.apply_gpu_defaults import apply_gpu_defaults
from nvcre.compiler.passes.instantiate_catalog import instantiate_catalog
from nvcre.compiler.passes.override_image import override_image
from nvcre.compiler.passes.resolve_options import resolve_options
from nvcre.compiler.passes.size_workload import size_workload
from nvcre.compiler.templating import template_set
from nvcre.compiler.unit import ClusterView, Context, Unit

EARLY_PASSES = (resolve_options, apply_gpu_defaults, size_workload, instantiate_catalog)

ENTRIES = (
    "communication/nccl-all-gather",
    "communication/nccl-all-reduce",
    "communication/nccl-alltoall",
    "communication/nccl-loopback",
    "communication/nccl-loopback-nvswitch",
    "diagnostics/dcgm-level4",
    "training/nemotron5-56b",
    "training/nemotron5-8b",
)
MPI_ENTRIES = ENTRIES[:3]
LOOPBACKS = ("communication/nccl-loopback", "communication/nccl-loopback-nvswitch")
TRAINING = ("training/nemotron5-56b", "training/nemotron5-8b")
#: an architecture the GPU defaults table does not know: sized by the fallback row
UNKNOWN_ARCH = "mi300x"
ARCHES = ("h100", "gb200", "b300", UNKNOWN_ARCH)
GPUS_PER_NODE = {"h100": 8, "gb200": 4, "b300": 8, UNKNOWN_ARCH: 4}

PYTORCH_IMAGE = "nvcr.io/nvidia/pytorch:26.01-py3"
TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:25.08-py3"
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
DEFAULT_DCGM_HOST = "nvidia-dcgm.gpu-operator.svc:5555"
DEFAULT_MEGATRON_REPO = "https://github.com/NVIDIA/Megatron-LM.git"
ATTENTION_FLAG = '--attention-backend "$attention_backend"'
ATTENTION_DEFAULT = "attention_backend=${ATTENTION_BACKEND:-flash}"
FORBIDDEN_ENV = ("NCCL_NVLS_ENABLE", "NVTE_FUSED_ATTN", "NVTE_FLASH_ATTN", "NVTE_UNFUSED_ATTN")
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"

TRAINING_ENV = [
    "NVTE_FWD_LAYERNORM_SM_MARGIN",
    "NVTE_BWD_LAYERNORM_SM_MARGIN",
    "TORCHINDUCTOR_WORKER_START",
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_TIMEOUT",
    "NCCL_P2P_NET_CHUNKSIZE",
    "NCCL_CUMEM_ENABLE",
    "NCCL_NET_GDR_C2C",
    "NCCL_MNNVL_ENABLE",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "TORCH_NCCL_AVOID_RECORD_STREAMS",
    "TORCH_NCCL_HIGH_PRIORITY",
    "PYTORCH_CUDA_ALLOC_CONF",
    "UCX_MEM_MMAP_HOOK_MODE",
    "UCX_MEM_CUDA_HOOK_MODE",
    "UCX_MEM_MALLOC_HOOKS",
    "UCX_ERROR_SIGNALS",
    "EXIT_DURATION_MINS",
    "ENABLE_CHECKPOINT",
    "TRAIN_ITERS",
    "SAVE_INTERVAL",
    "SAVE_RETAIN_INTERVAL",
    "PYTHONPATH",
]


# --- rendering helpers --------------------------------------------------------------------


def render(
    key: str,
    arch: str = "h100",
    options: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    nodes: int = 8,
    platform: str = "onprem",
):
    """(unit, diagnostics) after the early passes; stops at the first error like the runner."""
    domain, variant = key.split("/")
    catalog = load_catalog()
    category: dict[str, Any] = {"domain": domain, "variant": variant}
    if options is not None:
        category["options"] = options
    full_spec = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, **(spec or {}), "categories": [category]}
    entry = catalog.lookup(domain, variant)
    assert entry is not None, f"{key} is not in the catalog"
    ctx = Context(
        "Certification",
        "cert",
        full_spec,
        entry.info(),
        ClusterView(platform, arch, target_nodes=tuple(f"node-{i}" for i in range(nodes))),
        "spec.categories[0]",
        catalog=catalog,
        overlays=load_overlays(),
    )
    unit = Unit(category=category)
    found = []
    for step in EARLY_PASSES:
        unit, diags = step(unit, ctx)
        found.extend(diags)
        if any(d.is_error for d in diags):
            break
    return unit, found, ctx


def workflow(key: str, **kwargs) -> dict:
    unit, diags, _ = render(key, **kwargs)
    errors = [d.render() for d in diags if d.is_error]
    assert not errors, errors
    assert unit.workflow is not None
    return unit.workflow


def spec_of(key: str, **kwargs) -> dict:
    return workflow(key, **kwargs)["spec"]


def dependency(spec: dict, kind: str, name: str) -> dict:
    hits = [d for d in spec["dependencies"] if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"expected one {kind} {name}, found {len(hits)}"
    return hits[0]


def runtime(spec: dict, variant: str) -> dict:
    return dependency(spec, "TrainingRuntime", f"{variant}-runtime")


def replicated_job(spec: dict, variant: str, name: str = "node") -> dict:
    jobs = runtime(spec, variant)["spec"]["template"]["spec"]["replicatedJobs"]
    hits = [job for job in jobs if job["name"] == name]
    assert len(hits) == 1
    return hits[0]


def pod_spec(spec: dict, variant: str, name: str = "node") -> dict:
    return replicated_job(spec, variant, name)["template"]["spec"]["template"]["spec"]


def container(spec: dict, variant: str, job: str = "node", name: str = "node") -> dict:
    hits = [c for c in pod_spec(spec, variant, job)["containers"] if c["name"] == name]
    assert len(hits) == 1
    return hits[0]


def trainer(spec: dict) -> dict:
    return spec["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def env_names(items: list[dict]) -> list[str]:
    return [item["name"] for item in items]


def env_value(items: list[dict], name: str) -> str:
    values = [item["value"] for item in items if item["name"] == name]
    assert len(values) == 1, f"{name} appears {len(values)} times"
    return values[0]


def train_script(spec: dict, variant: str) -> str:
    return dependency(spec, "ConfigMap", f"{variant}-training-config")["data"]["train.sh"]


def clone_init(spec: dict, variant: str) -> dict:
    inits = [c for c in pod_spec(spec, variant)["initContainers"] if c["name"] == "megatron-clone"]
    assert len(inits) == 1
    return inits[0]


def error_codes(diags) -> list[str]:
    return [d.code for d in diags if d.is_error]


# --- every entry, every architecture ------------------------------------------------------


def test_catalog_has_the_eight_categories():
    assert load_catalog().keys() == list(ENTRIES)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("key", ENTRIES)
def test_every_entry_renders_with_its_runtime(key, arch):
    unit, diags, _ = render(key, arch=arch)
    assert not error_codes(diags), [d.render() for d in diags]
    if arch == UNKNOWN_ARCH:
        assert "GPUArchitectureDefaults" in [d.code for d in diags]
    wf = unit.workflow
    variant = key.split("/")[1]
    spec = wf["spec"]
    assert wf["kind"] == "Workflow"
    assert wf["metadata"]["labels"]["nvcre.nvidia.com/category-variant"] == variant
    ref = spec["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimeRef"]
    assert ref == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": f"{variant}-runtime"}
    assert runtime(spec, variant)["metadata"]["labels"]["app"] == variant
    gpus = str(GPUS_PER_NODE[arch])
    node = container(spec, variant)
    assert node["resources"]["limits"]["nvidia.com/gpu"] == gpus
    assert node["resources"]["requests"]["nvidia.com/gpu"] == gpus
    assert spec["orchestration"]["iterations"] == 1


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("key", ENTRIES)
def test_no_entry_pins_nvls_or_attention_kernels(key, arch):
    text = json.dumps(workflow(key, arch=arch))
    for name in FORBIDDEN_ENV:
        assert name not in text, f"{key} on {arch} renders {name}"


@pytest.mark.parametrize(
    "key,timeout",
    [(key, "1h0m0s") for key in MPI_ENTRIES + LOOPBACKS] + [("diagnostics/dcgm-level4", "2h0m0s")] + [(key, "24h0m0s") for key in TRAINING],
)
def test_timeout_per_job_defaults(key, timeout):
    # printed as Kubernetes prints a metav1.Duration back; the catalog itself writes 1h, 2h and 24h
    assert spec_of(key)["orchestration"]["execution"]["timeoutPerJob"] == timeout


@pytest.mark.parametrize("key", ENTRIES)
def test_timeout_per_job_option_and_diagnose_scale(key):
    assert spec_of(key, options={"timeoutPerJob": "3h"})["orchestration"]["execution"]["timeoutPerJob"] == "3h0m0s"
    assert spec_of(key, options={"timeoutPerJob": "90m"})["orchestration"]["execution"]["timeoutPerJob"] == "1h30m0s"
    # Go would print 1500ms as 1.5s, which the API's duration pattern refuses: the text stays as written
    assert spec_of(key, options={"timeoutPerJob": "1500ms"})["orchestration"]["execution"]["timeoutPerJob"] == "1500ms"
    assert spec_of(key, options={"testScale": "diagnose"})["orchestration"]["execution"]["timeoutPerJob"] == "15m0s"


@pytest.mark.parametrize("key", LOOPBACKS + ("diagnostics/dcgm-level4",) + TRAINING)
def test_single_process_and_torch_entries_mark_the_trainer_job(key):
    variant = key.split("/")[1]
    spec = spec_of(key)
    jobs = runtime(spec, variant)["spec"]["template"]["spec"]["replicatedJobs"]
    assert [job["name"] for job in jobs] == ["node"]
    assert jobs[0]["template"]["metadata"]["labels"] == {ANCESTOR_LABEL: "trainer"}


@pytest.mark.parametrize("key", ENTRIES)
def test_taint_selectors_replace_the_blanket_toleration(key):
    variant = key.split("/")[1]
    cordoned = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    target = {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "taintSelectors": [cordoned]}
    spec = spec_of(key, spec={"target": target})
    assert pod_spec(spec, variant)["tolerations"] == [{"key": cordoned["key"], "operator": "Exists", "effect": "NoSchedule"}]
    # A cordon opted in must not read as a hardware failure.
    assert "nodeHealthMonitor" not in spec["jobTemplate"]["spec"]


@pytest.mark.parametrize("key", ENTRIES)
def test_health_monitor_by_default(key):
    monitor = spec_of(key)["jobTemplate"]["spec"]["nodeHealthMonitor"]
    assert monitor == {"cel": {"expression": "node.spec.unschedulable == true"}}


# --- MPI collectives ----------------------------------------------------------------------


@pytest.mark.parametrize("key", MPI_ENTRIES)
def test_mpi_workers_bootstrap_sshd_with_bounded_retries(key):
    variant = key.split("/")[1]
    spec = spec_of(key)
    worker = container(spec, variant)
    script = worker["args"][0]
    assert worker["command"] == ["sh", "-c"]
    assert "if [ ! -x /usr/sbin/sshd ]" in script
    assert "timeout -s KILL 120 apt-get -o Acquire::Retries=3 update" in script
    assert "timeout -s KILL 120 dpkg --configure -a" in script
    assert "sshd install attempt $attempt of 3 failed or timed out" in script
    assert script.rstrip().endswith("exec /usr/sbin/sshd -De")
    assert worker["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_CHROOT"]
    probe = " ".join(worker["readinessProbe"]["exec"]["command"])
    assert "ssh -o BatchMode=yes" in probe
    launcher = replicated_job(spec, variant, "launcher")
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]


@pytest.mark.parametrize(
    "key,binary,extra",
    [
        ("communication/nccl-all-gather", "/usr/local/bin/all_gather_perf_mpi", []),
        ("communication/nccl-all-reduce", "/usr/local/bin/all_reduce_perf_mpi", []),
        ("communication/nccl-alltoall", "/usr/local/bin/alltoall_perf_mpi", ["-d", "uint8"]),
    ],
)
def test_mpi_command_line(key, binary, extra):
    spec = spec_of(key, arch="gb200")
    t = trainer(spec)
    assert t["image"] == PYTORCH_IMAGE
    assert t["command"] == ["timeout", "3600", "/usr/local/mpi/bin/mpirun"]
    assert t["args"] == [
        "-N",
        "4",
        "--allow-run-as-root",
        "--mca",
        "plm_rsh_args",
        "-o StrictHostKeyChecking=no",
        "-x",
        "NCCL_DEBUG=INFO",
        "-x",
        "NCCL_MNNVL_ENABLE=1",
        binary,
        *extra,
        "-b",
        "8",
        "-e",
        "16G",
        "-f",
        "2",
        "-n",
        "100",
        "-N",
        "10",
    ]
    assert t["numNodes"] == 8 and t["numProcPerNode"] == 4


# --- loopbacks ----------------------------------------------------------------------------


def test_loopback_command_env_and_fixed_sweep():
    spec = spec_of("communication/nccl-loopback", options={"numIterations": 7, "numCycles": 3, "maxBytes": "8G"})
    t = trainer(spec)
    assert t["image"] == PYTORCH_IMAGE
    assert t["command"] == ["/usr/local/bin/all_reduce_perf_mpi"]
    assert t["args"] == ["-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-n", "10", "-N", "2"]
    assert t["env"] == [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "NCCL_SHM_DISABLE", "value": "1"},
        {"name": "NCCL_P2P_DISABLE", "value": "1"},
        {"name": "NCCL_MNNVL_ENABLE", "value": "0"},
    ]


def test_loopback_nvswitch_sweep_follows_options():
    key = "communication/nccl-loopback-nvswitch"
    assert trainer(spec_of(key))["args"] == ["-b", "8", "-e", "16G", "-f", "2", "-g", "8", "-n", "100", "-N", "10"]
    assert trainer(spec_of(key, options={"numIterations": 7, "numCycles": 3}))["args"][-4:] == ["-n", "7", "-N", "3"]
    assert trainer(spec_of(key, options={"testScale": "diagnose"}))["args"][-4:] == ["-n", "5", "-N", "1"]
    env = trainer(spec_of(key, arch="gb200"))["env"]
    assert env == [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_MNNVL_ENABLE", "value": "1"}]


@pytest.mark.parametrize("key", LOOPBACKS)
@pytest.mark.parametrize("arch", ARCHES)
def test_loopback_shape(key, arch):
    variant = key.split("/")[1]
    spec = spec_of(key, arch=arch)
    rt = runtime(spec, variant)
    assert rt["metadata"]["labels"] == {"app": variant}
    assert rt["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}  # Trainer 2.2 has no torch.numProcPerNode
    pod = pod_spec(spec, variant)
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["restartPolicy"] == "OnFailure"
    node = container(spec, variant)
    assert node["image"] == PYTORCH_IMAGE
    assert node["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    t = trainer(spec)
    assert (t["numNodes"], t["numProcPerNode"]) == (1, 1)
    assert t["args"][t["args"].index("-g") + 1] == str(GPUS_PER_NODE[arch])
    assert env_value(t["env"], "NCCL_MNNVL_ENABLE") == ("1" if arch == "gb200" else "0")
    patch = spec["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimePatches"]
    assert len(patch) == 1 and patch[0]["manager"] == "nvcre.nvidia.com/catalog"
    patched = patch[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [job["name"] for job in patched] == ["node"]
    patched_pod = patched[0]["template"]["spec"]["template"]["spec"]
    assert patched_pod["containers"] == [{"name": "node", "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}]
    assert patched_pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert spec["jobTemplate"]["spec"]["bandwidthMeasurement"] == {
        "logProfileRef": "nccl-loopback",
        "sampleInterval": "30s",
        "testType": "loopback_all_reduce",
    }


@pytest.mark.parametrize("key", LOOPBACKS)
def test_loopback_is_one_node_whatever_is_asked(key):
    unit, diags, _ = render(key, options={"nodesPerJob": 4})
    assert not error_codes(diags)
    assert unit.options["nodesPerJob"] == 1
    assert trainer(unit.workflow["spec"])["numNodes"] == 1


@pytest.mark.parametrize("key", LOOPBACKS)
def test_loopback_thresholds_render_validation(key):
    spec = spec_of(key, options={"thresholds": {"busBandwidthGBps": "value >= 100"}})
    performance = spec["validation"]["performance"]
    assert performance["plugin"] == "nccl-tests"
    assert performance["thresholds"] == {"thresholds": {"busBandwidthGBps": "value >= 100"}}


# --- DCGM level 4 -------------------------------------------------------------------------


def dcgm_args(host: str) -> list[str]:
    return [
        "diag",
        "--host",
        host,
        "--run",
        "4",
        "--json",
        "--verbose",
        "-p",
        "targeted_power.test_duration=1200s",
        "-p",
        "targeted_stress.test_duration=1200s",
        "-p",
        "nvbandwidth.is_allowed=true",
    ]


@pytest.mark.parametrize("arch", ARCHES)
def test_dcgm_default_host_and_shape(arch):
    spec = spec_of("diagnostics/dcgm-level4", arch=arch)
    t = trainer(spec)
    assert t["image"] == DCGM_IMAGE
    assert t["command"] == ["dcgmi"]
    assert t["args"] == dcgm_args(DEFAULT_DCGM_HOST)
    assert (t["numNodes"], t["numProcPerNode"]) == (1, 1)
    rt = runtime(spec, "dcgm-level4")
    assert rt["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}  # Trainer 2.2 has no torch.numProcPerNode
    job = replicated_job(spec, "dcgm-level4")
    assert job["template"]["spec"]["backoffLimit"] == 0
    pod = pod_spec(spec, "dcgm-level4")
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["restartPolicy"] == "Never"
    assert pod["tolerations"] == [{"operator": "Exists"}]
    node = container(spec, "dcgm-level4")
    assert node["image"] == DCGM_IMAGE
    assert node["securityContext"] == {"privileged": True}
    job_spec = spec["jobTemplate"]["spec"]
    assert "bandwidthMeasurement" not in job_spec and "goodputMeasurement" not in job_spec


def test_dcgm_host_option_levels():
    key = "diagnostics/dcgm-level4"
    own = "nvidia-dcgm.gpu-system.svc:5555"
    site = "dcgm.monitoring.svc:6000"
    assert trainer(spec_of(key, options={"dcgmHost": own}))["args"] == dcgm_args(own)
    assert trainer(spec_of(key, spec={"dcgmHost": site}))["args"] == dcgm_args(site)
    # The category's own value wins over the spec level.
    assert trainer(spec_of(key, options={"dcgmHost": own}, spec={"dcgmHost": site}))["args"] == dcgm_args(own)


def test_dcgm_host_is_one_argument_whatever_it_holds():
    hostile = 'evil:1 --run 1"\n  - --json'
    args = trainer(spec_of("diagnostics/dcgm-level4", options={"dcgmHost": hostile}))["args"]
    assert args == dcgm_args(hostile)


def test_dcgm_ignores_thresholds():
    spec = spec_of("diagnostics/dcgm-level4", spec={"thresholds": {"busBandwidthGBps": "value >= 1"}})
    assert "validation" not in spec


# --- Nemotron training --------------------------------------------------------------------


@pytest.mark.parametrize("key", TRAINING)
@pytest.mark.parametrize("arch", ARCHES)
def test_training_objects_and_images(key, arch):
    variant = key.split("/")[1]
    spec = spec_of(key, arch=arch)
    kinds = [(d["kind"], d["metadata"]["name"]) for d in spec["dependencies"]]
    assert kinds == [("TrainingRuntime", f"{variant}-runtime"), ("ConfigMap", f"{variant}-training-config")]
    rt = runtime(spec, variant)
    assert rt["metadata"]["labels"] == {"app": variant, "trainer.kubeflow.org/framework": "torch"}
    gpus = GPUS_PER_NODE[arch]
    assert rt["spec"]["mlPolicy"] == {"numNodes": 8, "torch": {}}  # ranks per node come from trainer.numProcPerNode
    pod = pod_spec(spec, variant)
    assert pod["schedulerName"] == "default-scheduler"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert "tolerations" not in pod
    assert pod["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": variant}},
        }
    ]
    assert replicated_job(spec, variant)["template"]["spec"]["template"]["metadata"]["labels"] == {"app": variant}
    node = container(spec, variant)
    assert node["image"] == TRAINING_IMAGE
    assert clone_init(spec, variant)["image"] == TRAINING_IMAGE
    assert node["volumeMounts"] == [
        {"name": "workspace", "mountPath": "/mnt/workspace"},
        {"name": "shmem", "mountPath": "/dev/shm"},
        {"name": "training-config", "mountPath": "/config"},
    ]
    assert pod["volumes"] == [
        {"name": "workspace", "emptyDir": {"medium": "Memory"}},
        {"name": "shmem", "emptyDir": {"medium": "Memory"}},
        {"name": "training-config", "configMap": {"name": f"{variant}-training-config", "defaultMode": 0o755}},
    ]
    t = trainer(spec)
    assert t == {
        "image": TRAINING_IMAGE,
        "command": ["/bin/bash"],
        "args": ["/config/train.sh"],
        "numNodes": 8,
        "numProcPerNode": gpus,
    }
    job_spec = spec["jobTemplate"]["spec"]
    assert job_spec["stallMultiplier"] == 3
    assert job_spec["startupStallTimeoutSeconds"] == 1200
    assert job_spec["goodputMeasurement"] == {"logProfileRef": "megatron-training", "sampleInterval": "10s"}
    assert "checkpoint" not in job_spec


@pytest.mark.parametrize("key", TRAINING)
@pytest.mark.parametrize("arch", ARCHES)
def test_training_environment(key, arch):
    variant = key.split("/")[1]
    env = container(spec_of(key, arch=arch), variant)["env"]
    assert env_names(env) == TRAINING_ENV
    assert env_value(env, "NCCL_MNNVL_ENABLE") == ("1" if arch == "gb200" else "0")
    assert env_value(env, "TORCHINDUCTOR_WORKER_START") == "fork"
    assert env_value(env, "CUDA_DEVICE_MAX_CONNECTIONS") == "1"
    assert env_value(env, "UCX_ERROR_SIGNALS") == ""
    assert env_value(env, "PYTHONPATH") == "/mnt/workspace/megatron-lm"
    assert env_value(env, "EXIT_DURATION_MINS") == "30"
    assert env_value(env, "ENABLE_CHECKPOINT") == "false"
    assert env_value(env, "TRAIN_ITERS") == "50"
    assert env_value(env, "SAVE_INTERVAL") == "250"
    assert env_value(env, "SAVE_RETAIN_INTERVAL") == "1000"


def test_training_environment_follows_options():
    options = {"maxSteps": 120, "exitDurationMins": 45, "saveInterval": 20, "saveRetainInterval": 40, "enableMNNVL": True}
    env = container(spec_of("training/nemotron5-8b", options=options), "nemotron5-8b")["env"]
    assert env_value(env, "TRAIN_ITERS") == "120"
    assert env_value(env, "EXIT_DURATION_MINS") == "45"
    assert env_value(env, "SAVE_INTERVAL") == "20"
    assert env_value(env, "SAVE_RETAIN_INTERVAL") == "40"
    assert env_value(env, "NCCL_MNNVL_ENABLE") == "1"


@pytest.mark.parametrize("key", TRAINING)
def test_training_resources_default_and_override(key):
    variant = key.split("/")[1]
    resources = container(spec_of(key), variant)["resources"]
    assert resources == {
        "limits": {"nvidia.com/gpu": "8", "cpu": "128", "memory": "800Gi"},
        "requests": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "500Gi"},
    }
    # Each value can be set on its own; the others keep their defaults.
    wanted = {"limits": {"cpu": 96, "memory": "1Ti"}, "requests": {"cpu": 32}}
    resources = container(spec_of(key, options={"resources": wanted}), variant)["resources"]
    assert resources == {
        "limits": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti"},
        "requests": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "500Gi"},
    }
    resources = container(spec_of(key, options={"resources": {"requests": {"memory": "300Gi"}}}), variant)["resources"]
    assert resources == {
        "limits": {"nvidia.com/gpu": "8", "cpu": "128", "memory": "800Gi"},
        "requests": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "300Gi"},
    }


@pytest.mark.parametrize("key", TRAINING)
def test_checkpoint_volume_only_when_enabled(key):
    variant = key.split("/")[1]
    pvc_name = f"{variant}-pvc"
    off = spec_of(key, options={"enableCheckpoint": False})
    assert all(d["kind"] != "PersistentVolumeClaim" for d in off["dependencies"])
    assert "checkpoint" not in off["jobTemplate"]["spec"]
    assert pvc_name not in json.dumps(off)

    on = spec_of(key, options={"enableCheckpoint": True})
    assert [d["kind"] for d in on["dependencies"]] == ["PersistentVolumeClaim", "TrainingRuntime", "ConfigMap"]
    pvc = dependency(on, "PersistentVolumeClaim", pvc_name)
    assert pvc["apiVersion"] == "v1"
    assert pvc["metadata"]["labels"] == {"app": variant}
    assert pvc["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Ti"}}}
    assert on["jobTemplate"]["spec"]["checkpoint"] == {"pvcName": pvc_name, "maxRestarts": 3}
    workspace = pod_spec(on, variant)["volumes"][0]
    assert workspace == {"name": "workspace", "persistentVolumeClaim": {"claimName": pvc_name}}
    assert env_value(container(on, variant)["env"], "ENABLE_CHECKPOINT") == "true"

    sized = spec_of(key, options={"enableCheckpoint": True, "storageClassName": "shared-fs", "storageSize": "2Ti", "maxRestarts": 0})
    pvc = dependency(sized, "PersistentVolumeClaim", pvc_name)
    assert pvc["spec"]["storageClassName"] == "shared-fs"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Ti"
    assert sized["jobTemplate"]["spec"]["checkpoint"]["maxRestarts"] == 0


def test_startup_stall_budget_option():
    key = "training/nemotron5-8b"
    assert spec_of(key, options={"startupStallTimeoutSeconds": 3000})["jobTemplate"]["spec"]["startupStallTimeoutSeconds"] == 3000
    assert spec_of(key, spec={"startupStallTimeoutSeconds": 900})["jobTemplate"]["spec"]["startupStallTimeoutSeconds"] == 900


@pytest.mark.parametrize("key", TRAINING)
def test_megatron_clone_takes_the_repository_from_the_environment(key):
    variant = key.split("/")[1]
    init = clone_init(spec_of(key), variant)
    assert init["command"] == ["/bin/bash", "-c"]
    assert init["env"] == [{"name": "MEGATRON_REPO", "value": DEFAULT_MEGATRON_REPO}]
    assert init["volumeMounts"] == [{"name": "workspace", "mountPath": "/mnt/workspace"}]
    script = init["args"][0]
    assert "set -euo pipefail" in script
    assert not re.search(r"set -[a-z]*x|xtrace", script), "tracing would print the repository URL"
    assert '"$MEGATRON_REPO"' in script
    assert "--depth 1 --branch core_v0.15.2" in script
    # Workspace first, then the image's copy, then a clone.
    assert script.index('if [ -d "$target" ]') < script.index("if [ -d /opt/megatron-lm ]") < script.index("git clone")

    mirror = "https://robot:s3cr3t@git.example.com/mirrors/Megatron-LM.git"
    spec = spec_of(key, options={"sourceRepo": mirror})
    init = clone_init(spec, variant)
    assert init["env"] == [{"name": "MEGATRON_REPO", "value": mirror}]
    assert init["args"][0] == script
    text = json.dumps(spec)
    assert text.count("s3cr3t") == 1


def test_spec_level_source_repo():
    mirror = "ssh://git@git.example.com/megatron.git"
    init = clone_init(spec_of("training/nemotron5-56b", spec={"sourceRepo": mirror}), "nemotron5-56b")
    assert init["env"] == [{"name": "MEGATRON_REPO", "value": mirror}]


@pytest.mark.parametrize(
    "key,arch,tp,pp",
    [
        ("training/nemotron5-8b", "h100", 2, 1),
        ("training/nemotron5-8b", "gb200", 1, 1),
        ("training/nemotron5-8b", "b300", 1, 1),
        ("training/nemotron5-8b", UNKNOWN_ARCH, 1, 1),
        ("training/nemotron5-56b", "h100", 8, 1),
        ("training/nemotron5-56b", "gb200", 4, 1),
        ("training/nemotron5-56b", "b300", 4, 1),
        ("training/nemotron5-56b", UNKNOWN_ARCH, 4, 1),
    ],
)
def test_train_script_parallelism_and_shape(key, arch, tp, pp):
    variant = key.split("/")[1]
    unit, diags, _ = render(key, arch=arch)
    assert not error_codes(diags)
    assert (unit.options["tensorParallelism"], unit.options["pipelineParallelism"]) == (tp, pp)
    script = train_script(unit.workflow["spec"], variant)
    assert f"TP=${{TENSOR_PARALLELISM:-{tp}}}" in script
    assert f"PP=${{PIPELINE_PARALLELISM:-{pp}}}" in script
    assert f"total_gpus={8 * GPUS_PER_NODE[arch]}" in script
    assert ATTENTION_FLAG in script and ATTENTION_DEFAULT in script
    assert "--attention-backend flash" not in script
    assert "--mock-data" in script
    assert "train_iters=${TRAIN_ITERS:-50}" in script and "exit_duration_mins=${EXIT_DURATION_MINS:-30}" in script
    assert '--train-iters "$train_iters"' in script and '--eval-interval "$train_iters"' in script
    assert '--exit-duration-in-mins "$exit_duration_mins"' in script
    for name in FORBIDDEN_ENV:
        assert name not in script
    shape = {
        "nemotron5-8b": ("32", "4096", "21504", "32", "60"),
        "nemotron5-56b": ("79", "8192", "32768", "64", "230"),
    }[variant]
    for flag, value in zip(
        ("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--distributed-timeout-minutes"), shape
    ):
        assert f"{flag} {value} " in script


def test_train_script_follows_step_options():
    script = train_script(spec_of("training/nemotron5-8b", options={"maxSteps": 7, "exitDurationMins": 9}), "nemotron5-8b")
    assert "train_iters=${TRAIN_ITERS:-7}" in script
    assert "exit_duration_mins=${EXIT_DURATION_MINS:-9}" in script


def test_image_override_moves_the_clone_init_container_too():
    unit, diags, ctx = render("training/nemotron5-8b", options={"image": "registry.example.com/pytorch:custom"})
    assert not error_codes(diags)
    overridden, diags = override_image(unit, ctx)
    assert not error_codes(diags)
    spec = overridden.workflow["spec"]
    assert trainer(spec)["image"] == "registry.example.com/pytorch:custom"
    assert container(spec, "nemotron5-8b")["image"] == "registry.example.com/pytorch:custom"
    assert clone_init(spec, "nemotron5-8b")["image"] == "registry.example.com/pytorch:custom"


# --- training parallelism errors ----------------------------------------------------------


def test_56b_on_one_node_needs_more_gpus():
    unit, diags, _ = render("training/nemotron5-56b", arch="h100", options={"nodesPerJob": 1})
    errors = [d for d in diags if d.is_error]
    assert [d.code for d in errors] == ["InsufficientGPUs"]
    assert errors[0].path == "spec.categories[0].options.nodesPerJob"
    assert errors[0].message == (
        "training/nemotron5-56b: requires at least 32 GPUs (1 nodes x 8 GPUs/node), got 8 GPUs (1 nodes); set nodesPerJob to 4 or higher"
    )
    assert unit.workflow is None


def test_tp_pp_mismatch_is_reported():
    unit, diags, _ = render("training/nemotron5-56b", arch="h100", options={"nodesPerJob": 9, "gpusPerNode": 4})
    errors = [d for d in diags if d.is_error]
    assert [d.code for d in errors] == ["ParallelismMismatch"]
    assert "totalGPUs=36 (9 nodes x 4 GPUs/node) must be divisible by TPxPP=8 (TP=8, PP=1)" in errors[0].message
    assert "try nodesPerJob=8 or 10" in errors[0].message
    assert unit.workflow is None


def test_56b_without_enough_target_nodes():
    _, diags, _ = render("training/nemotron5-56b", arch="gb200", nodes=4)
    assert error_codes(diags) == ["NoValidNodeCount"]


def test_training_walks_down_to_a_valid_node_count():
    # 8B on H100 uses TP=2: with one GPU per node, 5 target nodes size down to 4.
    unit, diags, _ = render("training/nemotron5-8b", arch="h100", options={"gpusPerNode": 1}, nodes=5)
    assert not error_codes(diags)
    assert unit.options["nodesPerJob"] == 4
    assert trainer(unit.workflow["spec"])["numNodes"] == 4


# --- the shipped scripts, executed --------------------------------------------------------


def _scripts():
    catalog = load_catalog()
    return template_set(str(catalog.root), str(load_overlays().root))


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


TRAIN_VALUES = dict(
    total_gpus=16,
    tp=2,
    pp=1,
    seq_length=8192,
    layers=32,
    hidden_size=4096,
    ffn_hidden_size=21504,
    attention_heads=32,
    query_groups=8,
    distributed_timeout_minutes=60,
    max_steps=50,
    exit_duration_mins=30,
    save_interval=250,
    save_retain_interval=1000,
)


@pytest.fixture
def train_run(tmp_path):
    """Run train.sh against a stand-in workspace and torchrun; returns the torchrun argv."""
    workspace = tmp_path / "workspace"
    helpers = workspace / "megatron-lm" / "megatron" / "core" / "datasets"
    helpers.mkdir(parents=True)
    (helpers / "helpers_cpp.cpython-312-x86_64-linux-gnu.so").write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_file = tmp_path / "argv.json"
    _executable(bin_dir / "torchrun", f'#!/usr/bin/env python3\nimport json, sys\njson.dump(sys.argv[1:], open("{argv_file}", "w"))\n')
    script = tmp_path / "train.sh"
    script.write_text(_scripts().render_script("_lib/scripts/train.sh.j2", dict(TRAIN_VALUES, workspace=str(workspace))))

    def run(**env: str) -> list[str]:
        full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PET_NNODES": "2", "PET_NPROC_PER_NODE": "8", **env}
        subprocess.run(["bash", str(script)], env=full, check=True, capture_output=True, text=True)
        return json.loads(argv_file.read_text())

    run.workspace = workspace
    return run


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_train_script_defaults(train_run):
    argv = train_run()
    assert argv[:4] == ["--nnodes", "2", "--nproc-per-node", "8"]
    assert argv[4].endswith("/megatron-lm/pretrain_gpt.py")
    assert _flag(argv, "--attention-backend") == "flash"
    assert _flag(argv, "--tensor-model-parallel-size") == "2"
    assert _flag(argv, "--pipeline-model-parallel-size") == "1"
    assert _flag(argv, "--global-batch-size") == "16"
    assert _flag(argv, "--train-iters") == "50"
    assert _flag(argv, "--eval-interval") == "50"
    assert _flag(argv, "--exit-duration-in-mins") == "30"
    assert "--mock-data" in argv
    for flag in ("--save", "--load", "--save-interval", "--save-retain-interval", "--recompute-granularity"):
        assert flag not in argv


def test_train_script_environment_overrides(train_run):
    argv = train_run(
        ATTENTION_BACKEND="auto",
        TENSOR_PARALLELISM="4",
        PIPELINE_PARALLELISM="2",
        SEQ_LENGTH="2048",
        TRAIN_ITERS="12",
        RECOMPUTE_ARGS="--recompute-granularity full --recompute-method block",
    )
    assert _flag(argv, "--attention-backend") == "auto"
    assert _flag(argv, "--tensor-model-parallel-size") == "4"
    assert _flag(argv, "--pipeline-model-parallel-size") == "2"
    assert _flag(argv, "--seq-length") == "2048"
    assert _flag(argv, "--train-iters") == "12"
    assert _flag(argv, "--recompute-granularity") == "full"
    assert _flag(argv, "--recompute-method") == "block"


def test_train_script_checkpoints_only_when_enabled(train_run):
    argv = train_run(ENABLE_CHECKPOINT="true", SAVE_INTERVAL="25")
    checkpoints = str(train_run.workspace / "checkpoints")
    assert _flag(argv, "--save") == checkpoints
    assert _flag(argv, "--save-interval") == "25"
    assert _flag(argv, "--save-retain-interval") == "1000"
    assert "--load" not in argv
    (train_run.workspace / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("25")
    assert _flag(train_run(ENABLE_CHECKPOINT="true"), "--load") == checkpoints
    assert "--save" not in train_run(ENABLE_CHECKPOINT="false")


@pytest.fixture
def clone_run(tmp_path):
    """Run the megatron-clone script with its paths moved under tmp_path."""
    target = tmp_path / "workspace" / "megatron-lm"
    image_copy = tmp_path / "image" / "megatron-lm"
    script = tmp_path / "clone.sh"
    values = {"target": str(target), "image_copy": str(image_copy), "branch": "core_v0.15.2"}
    script.write_text(_scripts().render_script("_lib/scripts/megatron-clone.sh.j2", values))

    def run(repo: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "MEGATRON_REPO": repo, "GIT_TERMINAL_PROMPT": "0"}
        return subprocess.run(["bash", str(script)], env=env, check=check, capture_output=True, text=True)

    run.target, run.image_copy = target, image_copy
    return run


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_clone_script_clones_the_pinned_branch(clone_run, tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    _git("init", "-q", "-b", "main", cwd=upstream)
    (upstream / "pretrain_gpt.py").write_text("main\n")
    _git("add", ".", cwd=upstream)
    _git("commit", "-q", "-m", "main", cwd=upstream)
    _git("checkout", "-q", "-b", "core_v0.15.2", cwd=upstream)
    (upstream / "pretrain_gpt.py").write_text("pinned\n")
    _git("commit", "-q", "-am", "pinned", cwd=upstream)
    _git("checkout", "-q", "main", cwd=upstream)

    clone_run(f"file://{upstream}")
    assert (clone_run.target / "pretrain_gpt.py").read_text() == "pinned\n"
    assert not list(clone_run.target.parent.glob("*.staging.*"))
    # A second start finds the checkout and leaves it alone.
    (clone_run.target / "marker").write_text("kept")
    result = clone_run("file:///nonexistent")
    assert "already at" in result.stdout
    assert (clone_run.target / "marker").read_text() == "kept"


def test_clone_script_prefers_the_copy_in_the_image(clone_run):
    clone_run.image_copy.mkdir(parents=True)
    (clone_run.image_copy / "pretrain_gpt.py").write_text("from image\n")
    clone_run("https://unused.invalid/megatron.git")
    assert (clone_run.target / "pretrain_gpt.py").read_text() == "from image\n"


@needs_git
def test_clone_script_never_prints_credentials(clone_run):
    result = clone_run("https://robot:s3cr3t@127.0.0.1:9/megatron.git", check=False)
    assert result.returncode != 0
    assert "s3cr3t" not in result.stdout + result.stderr
    assert not clone_run.target.exists()
    assert not list(clone_run.target.parent.glob("*.staging.*"))


def test_clone_script_scrubs_credentials_from_git_messages(clone_run, tmp_path):
    # A git that repeats the URL it was given, credentials included, before failing.
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    _executable(
        bin_dir / "git",
        '#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done\necho "fatal: unable to access \'$2\'" >&2\nexit 128\n',
    )
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "MEGATRON_REPO": "https://robot:s3cr3t@git.example.com/m.git"}
    result = subprocess.run(["bash", str(tmp_path / "clone.sh")], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "unable to access 'https://***@git.example.com/m.git'" in result.stderr
    assert "s3cr3t" not in result.stdout + result.stderr
