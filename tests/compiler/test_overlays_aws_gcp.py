"""AWS and GCP platform overlays, rendered through the real compiler front door.

Every test renders a Certification with ``render_certification`` (what ``nvcrectl certification
render`` runs) and reads the Workflow it produces: images, mpirun command lines and forwarded
variables, container env, resources, claims, annotations, tolerations and dependencies, per
(platform, GPU architecture, entry). The last group checks the other direction: these overlays
never reach a platform, architecture or entry they do not name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.facts import load_facts
from nvcre.compiler.mpi_args import forward_pairs
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from tests.platform_profiles import GPU_PRESENT, LOOPBACKS, MPI, TRAINING

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facts"

ALL_ENTRIES = MPI + LOOPBACKS + TRAINING + ["diagnostics/dcgm-level4"]

EFA_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
EFA_MPIRUN = "/opt/amazon/openmpi/bin/mpirun"
PERF = {
    "communication/nccl-all-reduce": "all_reduce_perf",
    "communication/nccl-all-gather": "all_gather_perf",
    "communication/nccl-alltoall": "alltoall_perf",
}
LEADING = ["-N", "--allow-run-as-root", "--mca", "plm_rsh_args"]
TRANSPORT_ARGS = [
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
GB200_MPIRUN = [
    "-bind-to",
    "none",
    "--mca",
    "pml",
    "^cm,ucx",
    "--mca",
    "btl",
    "tcp,self",
    "--mca",
    "btl_tcp_if_exclude",
    "lo,docker0,veth_def_agent",
    "--mca",
    "plm_rsh_agent",
    "ssh",
]
EFA_CLEANUP = "rm -rf /opt/amazon/efa /opt/amazon/ofi-nccl /opt/aws-ofi-nccl"
DEFAULT_GKE_NETWORKS = [f"gpu-nic{i}" for i in range(8)]
TCPXO_V1015 = {
    "ncclImage": "nvcr.io/nvidia/pytorch:25.06-py3",
    "trainingImage": "nvcr.io/nvidia/pytorch:25.06-py3",
    "daemonImage": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
}
RDMA_NETWORKS = [f"rdma-{i}" for i in range(4)]
EFA_SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/amazon/efa/bin"
GB200_LIBRARY_PATH = (
    "/opt/amazon/openmpi/lib:/opt/nccl/build/lib:/opt/amazon/efa/lib:/opt/aws-ofi-nccl/install/lib:"
    "/usr/local/nvidia/lib:/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu"
)


# --- rendering and reading ------------------------------------------------------------------


def certification(entries: list[str], options: dict | None = None, spec: dict | None = None) -> dict:
    categories = []
    for key in entries:
        domain, variant = key.split("/")
        category: dict[str, Any] = {"domain": domain, "variant": variant}
        wanted = dict(options or {})
        if key == "training/nemotron5-56b":
            wanted.setdefault("nodesPerJob", 8)  # 32+ GPUs on every architecture here
        if wanted:
            category["options"] = wanted
        categories.append(category)
    body = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, **(spec or {}), "categories": categories}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "cert"}, "spec": body}


def render_all(entries: list[str], platform: str | None, arch: str | None, facts: Any = None, **kwargs) -> list[dict]:
    rendered = render_certification(certification(entries, **kwargs), facts=facts, platform=platform, gpu_arch=arch)
    assert len(rendered.workflows) == len(entries)
    return rendered.workflows


def render(entry: str, platform: str, arch: str, **kwargs) -> dict:
    return render_all([entry], platform, arch, **kwargs)[0]


def applied(workflow: dict) -> list[str]:
    return json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"])


def trainer(workflow: dict) -> dict:
    return workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def runtime(workflow: dict) -> dict:
    return next(d for d in workflow["spec"]["dependencies"] if d["kind"] == "TrainingRuntime")


def pod(workflow: dict, job: str = "node") -> dict:
    jobs = runtime(workflow)["spec"]["template"]["spec"]["replicatedJobs"]
    return next(j for j in jobs if j["name"] == job)["template"]["spec"]["template"]


def container(workflow: dict, job: str = "node", name: str = "node", init: bool = False) -> dict:
    spec = pod(workflow, job)["spec"]
    return next(c for c in spec.get("initContainers" if init else "containers") or [] if c["name"] == name)


def init_names(workflow: dict, job: str = "node") -> list[str]:
    return [c["name"] for c in pod(workflow, job)["spec"].get("initContainers") or []]


def env_of(item: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in item.get("env") or []}


def forwarded(workflow: dict) -> dict[str, str | None]:
    """``-x`` pairs of the trainer args as name -> value (None for ``-x NAME``); repeats fail."""
    args = [str(a) for a in trainer(workflow)["args"]]
    out: dict[str, str | None] = {}
    for index, name in forward_pairs(args):
        assert name not in out, f"{name} is forwarded twice"
        text = args[index + 1]
        out[name] = text.split("=", 1)[1] if "=" in text else None
    return out


def contains_run(items: list, run: list) -> int:
    """Index where ``run`` occurs contiguously in ``items`` (fails when it does not)."""
    for start in range(len(items) - len(run) + 1):
        if items[start : start + len(run)] == run:
            return start
    raise AssertionError(f"{run} not found in {items}")


def dependency(workflow: dict, kind: str, name: str) -> dict | None:
    return next((d for d in workflow["spec"]["dependencies"] if d["kind"] == kind and d["metadata"]["name"] == name), None)


def all_env_names(workflow: dict) -> set[str]:
    names = set(env_of(trainer(workflow)))
    for job in runtime(workflow)["spec"]["template"]["spec"]["replicatedJobs"]:
        spec = job["template"]["spec"]["template"]["spec"]
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            names |= set(env_of(c))
    return names


# --- AWS H100 and GB200: EFA ----------------------------------------------------------------


@pytest.mark.parametrize("arch", ["h100", "gb200"])
@pytest.mark.parametrize("entry", MPI)
def test_aws_efa_collectives_run_nccl_tests_with_the_efa_provider(arch, entry):
    wf = render(entry, "aws", arch)
    assert "aws-efa-nccl-mpi" in applied(wf)
    spec = trainer(wf)
    assert spec["image"] == EFA_IMAGE
    for item in (container(wf), container(wf, "launcher"), container(wf, "launcher", "fix-ssh-permissions", init=True)):
        assert item["image"] == EFA_IMAGE
    assert spec["command"] == ["timeout", "3600", EFA_MPIRUN]
    binary = f"/opt/nccl-tests/build/{PERF[entry]}"
    assert binary in spec["args"] and not any(str(a).endswith("_perf_mpi") for a in spec["args"])
    env = forwarded(wf)
    assert {k: env[k] for k in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE")} == {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_EFA_FORK_SAFE": "1",
    }
    # PATH written out with the EFA tools, never a literal "$PATH:..."
    assert env["PATH"] == EFA_SEARCH_PATH
    if arch == "gb200":
        # NVCRE's GB200 EFA env: the library path with its value, no socket interface
        assert env["LD_LIBRARY_PATH"] == GB200_LIBRARY_PATH and "NCCL_SOCKET_IFNAME" not in env
    else:
        # H100 forwards the launcher's own library path by name, as NVCRE's H100 arm
        assert env["LD_LIBRARY_PATH"] is None and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_MNNVL_ENABLE"] == ("1" if arch == "gb200" else "0")
    assert "NCCL_NVLS_ENABLE" not in env
    # the forwards sit between mpirun's options and the binary
    args = spec["args"]
    last_pair = max(i for i, _ in forward_pairs([str(a) for a in args]))
    assert args[last_pair + 2] == binary
    worker = container(wf)
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    # EFA's userspace stays: the cleanup belongs to GB300 alone
    assert EFA_CLEANUP not in worker["args"][0] and "/opt/amazon" not in worker["args"][0]


def test_aws_alltoall_keeps_its_own_binary_arguments():
    args = trainer(render("communication/nccl-alltoall", "aws", "h100"))["args"]
    start = args.index("/opt/nccl-tests/build/alltoall_perf")
    assert args[start + 1 : start + 3] == ["-d", "uint8"]


@pytest.mark.parametrize("entry", MPI + LOOPBACKS)
def test_aws_h100_workers_request_all_32_efa_interfaces(entry):
    wf = render(entry, "aws", "h100")
    assert "aws-h100-efa-devices" in applied(wf)
    resources = container(wf)["resources"]
    for side in ("limits", "requests"):
        assert resources[side]["vpc.amazonaws.com/efa"] == "32"
        assert resources[side]["nvidia.com/gpu"] == "8"
        assert "hugepages-2Mi" not in resources[side]
    if entry in MPI:
        assert "vpc.amazonaws.com/efa" not in container(wf, "launcher")["resources"]["limits"]


@pytest.mark.parametrize("entry", MPI + LOOPBACKS)
def test_aws_gb200_workers_request_efa_hugepages_and_memory(entry):
    wf = render(entry, "aws", "gb200")
    assert "aws-gb200-efa-devices" in applied(wf)
    resources = container(wf)["resources"]
    assert resources["limits"] == resources["requests"]
    assert {k: resources["limits"][k] for k in ("vpc.amazonaws.com/efa", "hugepages-2Mi", "memory", "nvidia.com/gpu")} == {
        "vpc.amazonaws.com/efa": "4",
        "hugepages-2Mi": "10256Mi",
        "memory": "800Gi",
        "nvidia.com/gpu": "4",
    }


@pytest.mark.parametrize("entry", MPI)
def test_aws_gb200_mpirun_options_follow_the_leading_ones(entry):
    wf = render(entry, "aws", "gb200")
    assert "aws-gb200-efa-mpirun" in applied(wf)
    args = trainer(wf)["args"]
    assert args[:6] == ["-N", "4", "--allow-run-as-root", "--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no"]
    assert args[6 : 6 + len(GB200_MPIRUN)] == GB200_MPIRUN
    assert args[6 + len(GB200_MPIRUN)] == "-x"
    # the ranks get the library path as a value; the launcher itself gets it and the EFA search
    # path as NVCRE's GB200 runtime patch sets them
    assert forwarded(wf)["LD_LIBRARY_PATH"] == GB200_LIBRARY_PATH
    assert env_of(container(wf, "launcher")) == {"LD_LIBRARY_PATH": GB200_LIBRARY_PATH, "PATH": EFA_SEARCH_PATH}
    # H100 keeps the catalog's mpirun options untouched
    h100 = trainer(render(entry, "aws", "h100"))["args"]
    assert "-bind-to" not in h100 and h100[6] == "-x"


@pytest.mark.parametrize("arch", ["h100", "gb200"])
@pytest.mark.parametrize("entry", LOOPBACKS)
def test_aws_efa_loopbacks_run_the_nccl_tests_binary_with_the_provider_env(arch, entry):
    wf = render(entry, "aws", arch)
    assert "aws-efa-nccl-loopback" in applied(wf)
    spec = trainer(wf)
    assert spec["image"] == EFA_IMAGE and container(wf)["image"] == EFA_IMAGE
    assert spec["command"] == ["/opt/nccl-tests/build/all_reduce_perf"]
    env = env_of(spec)
    assert {k: env[k] for k in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE")} == {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_EFA_FORK_SAFE": "1",
    }
    if arch == "gb200":
        # NVCRE's GB200 EFA env: the aarch64 OFI plugin directory and the EFA tools, no socket pin
        assert env["LD_LIBRARY_PATH"] == GB200_LIBRARY_PATH
        assert "NCCL_SOCKET_IFNAME" not in env
    else:
        # NVCRE's H100 EFA comm env: PATH with the EFA tools; the image's library path applies
        assert env["NCCL_SOCKET_IFNAME"] == "eth0"
        assert "LD_LIBRARY_PATH" not in env
    assert env["PATH"] == EFA_SEARCH_PATH
    # the plain loopback still routes through the NIC
    if entry == "communication/nccl-loopback":
        assert env["NCCL_SHM_DISABLE"] == "1" and env["NCCL_P2P_DISABLE"] == "1"
    assert pod(wf)["spec"]["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize("arch", ["h100", "gb200"])
@pytest.mark.parametrize("entry", TRAINING)
def test_aws_efa_training_env_attention_backend_and_ipc_lock(arch, entry):
    wf = render(entry, "aws", arch)
    assert "aws-efa-training" in applied(wf)
    worker = container(wf)
    env = env_of(worker)
    assert env["ATTENTION_BACKEND"] == "auto"
    assert {k: env[k] for k in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE")} == {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_EFA_FORK_SAFE": "1",
    }
    assert env["OPAL_PREFIX"] == "/opt/amazon-efa-ofi/openmpi"
    assert env["LD_LIBRARY_PATH"].startswith("/opt/amazon-efa-ofi/ofi/lib:")
    assert env["PATH"].startswith("/opt/amazon/efa/bin:")
    # Megatron derives the NVTE attention switches from --attention-backend and rejects conflicts
    assert not {n for n in all_env_names(wf) if n.startswith("NVTE_") and n.endswith("_ATTN")}
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    assert worker["image"] == "nvcr.io/nvidia/pytorch:25.08-py3"  # training keeps the catalog image


@pytest.mark.parametrize("entry", TRAINING)
def test_aws_h100_training_resources(entry):
    wf = render(entry, "aws", "h100")
    resources = container(wf)["resources"]
    assert {k: resources["limits"][k] for k in ("vpc.amazonaws.com/efa", "memory", "cpu", "nvidia.com/gpu")} == {
        "vpc.amazonaws.com/efa": "32",
        "memory": "1800Gi",
        "cpu": "192",
        "nvidia.com/gpu": "8",
    }
    assert {k: resources["requests"][k] for k in ("vpc.amazonaws.com/efa", "memory", "cpu", "nvidia.com/gpu")} == {
        "vpc.amazonaws.com/efa": "32",
        "memory": "1200Gi",
        "cpu": "128",
        "nvidia.com/gpu": "8",
    }


@pytest.mark.parametrize("entry", TRAINING)
def test_aws_gb200_training_resources(entry):
    resources = container(render(entry, "aws", "gb200"))["resources"]
    for side in ("limits", "requests"):
        assert resources[side]["vpc.amazonaws.com/efa"] == "4"
        assert resources[side]["hugepages-2Mi"] == "10256Mi"
        assert resources[side]["nvidia.com/gpu"] == "4"


@pytest.mark.parametrize(
    ("platform", "arch"), [("aws", "gb300"), ("aws", "b200"), ("gcp", "h100"), ("gcp", "gb200"), ("gcp", "rtxpro6000"), ("onprem", "h100")]
)
def test_every_other_platform_keeps_the_flash_default(platform, arch):
    wf = render("training/nemotron5-8b", platform, arch)
    assert "ATTENTION_BACKEND" not in all_env_names(wf)
    train_sh = next(d for d in wf["spec"]["dependencies"] if d["kind"] == "ConfigMap")["data"]["train.sh"]
    assert "attention_backend=${ATTENTION_BACKEND:-flash}" in train_sh
    assert '--attention-backend "$attention_backend"' in train_sh


def test_aws_user_env_still_wins_and_is_forwarded_once():
    wf = render(
        "communication/nccl-all-reduce",
        "aws",
        "h100",
        spec={"env": [{"name": "NCCL_SOCKET_IFNAME", "value": "ens5"}, {"name": "FI_LOG_LEVEL", "value": "warn"}]},
    )
    env = forwarded(wf)
    assert env["NCCL_SOCKET_IFNAME"] == "ens5" and env["FI_LOG_LEVEL"] == "warn"


def test_aws_user_image_replaces_the_efa_image_on_trainer_and_containers():
    image = "registry.example.com/nccl-tests:efa"
    wf = render("communication/nccl-all-reduce", "aws", "h100", options={"image": image})
    assert trainer(wf)["image"] == image
    assert container(wf)["image"] == image and container(wf, "launcher")["image"] == image
    assert container(wf, "launcher", "fix-ssh-permissions", init=True)["image"] == image


# --- AWS GB300: RoCE --------------------------------------------------------------------------


@pytest.mark.parametrize("entry", MPI)
def test_aws_gb300_claims_roce_devices(entry):
    wf = render(entry, "aws", "gb300")
    assert "aws-gb300-roce-devices" in applied(wf)
    name = entry.split("/")[1]
    template = dependency(wf, "ResourceClaimTemplate", f"{name}-roce")
    assert template is not None and template["apiVersion"] == "resource.k8s.io/v1"
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "roce.networking.k8s.aws"
    assert request["exactly"]["count"] == 8
    claims = {c["name"]: c["resourceClaimTemplateName"] for c in pod(wf)["spec"]["resourceClaims"]}
    assert claims["roce-channel"] == f"{name}-roce"
    container_claims = [c["name"] for c in container(wf)["resources"]["claims"]]
    assert "roce-channel" in container_claims
    assert len(container_claims) == len(set(container_claims)) and set(container_claims) == set(claims)
    # the launcher claims nothing
    assert "resourceClaims" not in pod(wf, "launcher")["spec"]
    # no EFA on GB300
    for side in ("limits", "requests"):
        assert not {k for k in container(wf)["resources"][side] if k.startswith("vpc.amazonaws.com") or k.startswith("hugepages")}


def test_aws_gb300_no_nics_means_no_roce_claim():
    wf = render("communication/nccl-all-reduce", "aws", "gb300", options={"mlnxPerNode": 0})
    assert "aws-gb300-roce-devices" not in applied(wf)
    assert dependency(wf, "ResourceClaimTemplate", "nccl-all-reduce-roce") is None
    assert "roce-channel" not in {c["name"] for c in pod(wf)["spec"].get("resourceClaims") or []}
    assert "aws-gb300-roce-nccl" in applied(wf)  # the transport profile still applies


@pytest.mark.parametrize("entry", MPI)
def test_aws_gb300_transport(entry):
    wf = render(entry, "aws", "gb300")
    assert "aws-gb300-roce-nccl" in applied(wf)
    spec = trainer(wf)
    assert spec["command"] == [
        "/usr/bin/env",
        "-u",
        "OMPI_MCA_btl_tcp_if_include",
        "-u",
        "OMPI_MCA_btl_tcp_if_exclude",
        "-u",
        "OMPI_MCA_oob_tcp_if_include",
        "-u",
        "OMPI_MCA_oob_tcp_if_exclude",
        EFA_MPIRUN,
    ]
    args = spec["args"]
    start = contains_run(args, TRANSPORT_ARGS)
    assert start < min(i for i, _ in forward_pairs([str(a) for a in args]))
    contains_run(args, ["--prefix", "/opt/amazon/openmpi"])
    assert "-o StrictHostKeyChecking=no -o ConnectionAttempts=10" in args
    assert f"/opt/nccl-tests/build/{PERF[entry]}" in args
    env = forwarded(wf)
    assert {
        k: env[k]
        for k in (
            "NCCL_DEBUG_SUBSYS",
            "NCCL_SOCKET_IFNAME",
            "NCCL_IB_GID_INDEX",
            "NCCL_NVLS_ENABLE",
            "NCCL_CUMEM_ENABLE",
            "NCCL_NET_GDR_C2C",
        )
    } == {
        "NCCL_DEBUG_SUBSYS": "NET,INIT",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_NVLS_ENABLE": "1",
        "NCCL_CUMEM_ENABLE": "1",
        "NCCL_NET_GDR_C2C": "1",
    }
    assert "FI_PROVIDER" not in env
    # NVCRE's GB300 RoCE env, written out: the system directories, and Open MPI, NCCL and the driver
    assert env["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert env["LD_LIBRARY_PATH"] == "/opt/amazon/openmpi/lib:/opt/nccl/build/lib:/usr/local/nvidia/lib"
    assert spec["image"] == EFA_IMAGE
    assert container(wf, "launcher")["image"] == EFA_IMAGE


def test_aws_gb300_worker_removes_the_efa_stack_before_serving_ssh():
    wf = render("communication/nccl-all-reduce", "aws", "gb300")
    worker = container(wf)
    assert worker["image"] == EFA_IMAGE and worker["command"] == ["sh", "-c"]
    (script,) = worker["args"]
    lines = script.splitlines()
    cleanup = lines.index(EFA_CLEANUP)
    assert lines.index("unset NCCL_NET_PLUGIN") > cleanup and lines.index("unset NCCL_TUNER_PLUGIN") > cleanup
    assert lines[-1] == "exec /usr/sbin/sshd -De"
    assert "cp /tmp/mpi-ssh-raw/* /root/.ssh/" in lines
    assert "apt-get" not in script  # the image ships sshd


@pytest.mark.parametrize("entry", LOOPBACKS + TRAINING)
def test_aws_gb300_loopbacks_and_training_clear_efa_and_claim_roce(entry):
    wf = render(entry, "aws", "gb300")
    assert [o for o in applied(wf) if o.startswith("aws-")] == ["aws-gb300-efa-cleanup", "aws-gb300-roce-devices"]
    command = trainer(wf)["command"]
    shell = "/bin/bash" if entry.startswith("training/") else "/bin/sh"
    assert command[:2] == [shell, "-c"]
    lines = command[2].splitlines()
    assert lines[:3] == ["rm -rf /opt/amazon", "unset NCCL_NET_PLUGIN", "unset NCCL_TUNER_PLUGIN"]
    if entry.startswith("training/"):
        assert lines[3:] == ["unset AWS_OFI_NCCL_VERSION", 'exec /bin/bash "$0" "$@"']
        assert len(command) == 3 and trainer(wf)["args"] == ["/config/train.sh"]
    else:
        assert lines[3:] == ['exec "$0" "$@"']
        assert command[3:] == ["/usr/local/bin/all_reduce_perf_mpi"] and trainer(wf)["args"][:2] == ["-b", "8"]
    claim = next(d for d in wf["spec"]["dependencies"] if d["kind"] == "ResourceClaimTemplate")
    request = claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["deviceClassName"] == "roce.networking.k8s.aws" and request["count"] == 8
    assert {"name": "roce-channel", "resourceClaimTemplateName": f"{entry.split('/')[1]}-roce"} in pod(wf)["spec"]["resourceClaims"]
    assert {"name": "roce-channel"} in container(wf)["resources"]["claims"]


@pytest.mark.parametrize("entry", LOOPBACKS)
def test_aws_gb300_cleanup_prologue_runs_the_program_with_its_arguments_as_data(entry, tmp_path):
    import shutil
    import subprocess

    command = render(entry, "aws", "gb300")["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["command"]
    prologue = command[2].replace("rm -rf /opt/amazon", "true")  # keep the test away from the filesystem
    hostile = "$(touch pwned)"
    done = subprocess.run(
        [shutil.which("sh") or "/bin/sh", "-c", prologue, "printf", "%s|", "-b", hostile],
        env={"NCCL_NET_PLUGIN": "ofi", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert done.stdout == "-b|$(touch pwned)|"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("arch", ["h100", "gb200"])
def test_aws_efa_architectures_keep_the_efa_userspace(arch):
    for entry in LOOPBACKS + TRAINING:
        assert "aws-gb300-efa-cleanup" not in applied(render(entry, "aws", arch))


# --- GCP H100: TCPXO --------------------------------------------------------------------------


def tcpxo_plumbing(wf: dict, networks: list[str], daemon_image: str) -> None:
    metadata = pod(wf)["metadata"]["annotations"]
    assert metadata["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(metadata["networking.gke.io/interfaces"])
    assert interfaces == [{"interfaceName": "eth0", "network": "default"}] + [
        {"interfaceName": f"eth{i + 1}", "network": n} for i, n in enumerate(networks)
    ]
    devices = [line for line in metadata["devices.gke.io/container.tcpxo-daemon"].splitlines() if line]
    assert devices == [f"- path: /dev/nvidia{i}" for i in range(8)] + [
        "- path: /dev/nvidiactl",
        "- path: /dev/nvidia-uvm",
        "- path: /dev/dmabuf_import_helper",
    ]
    spec = pod(wf)["spec"]
    assert GPU_PRESENT in spec["tolerations"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert volumes == {
        "nvtcpxo-libraries": "/home/kubernetes/bin/nvidia",
        "nvtcpxo-sys": "/sys",
        "nvtcpxo-proc-sys": "/proc/sys",
        "nvtcpxo-aperture-devices": "/dev/aperture_devices",
    }
    daemon = container(wf, name="tcpxo-daemon", init=True)
    assert daemon["restartPolicy"] == "Always" and daemon["image"] == daemon_image
    assert set(daemon["securityContext"]["capabilities"]["add"]) == {"NET_ADMIN", "NET_BIND_SERVICE"}
    assert env_of(daemon) == {"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"}
    assert "exec /fts/entrypoint_rxdm_container.sh --num_hops=2" in daemon["args"][0]
    assert "--enforce_kernel_ipv6_support" not in daemon["args"][0]
    mounts = {m["name"]: m for m in daemon["volumeMounts"]}
    assert mounts["nvtcpxo-libraries"]["mountPath"] == "/usr/local/nvidia" and mounts["nvtcpxo-libraries"]["readOnly"]
    assert mounts["nvtcpxo-sys"]["mountPath"] == "/hostsysfs" and mounts["nvtcpxo-sys"]["readOnly"]
    assert mounts["nvtcpxo-proc-sys"]["mountPath"] == "/hostprocsysfs" and not mounts["nvtcpxo-proc-sys"].get("readOnly")
    worker_mounts = {m["name"]: m["mountPath"] for m in container(wf)["volumeMounts"]}
    assert worker_mounts["nvtcpxo-libraries"] == "/usr/local/nvidia"
    assert worker_mounts["nvtcpxo-aperture-devices"] == "/dev/aperture_devices"


@pytest.mark.parametrize("entry", MPI)
def test_gcp_h100_collectives_use_tcpxo(entry):
    wf = render(entry, "gcp", "h100")
    assert applied(wf) == ["gcp-h100-tcpxo-daemon", "gcp-h100-tcpxo-nccl"]
    tcpxo_plumbing(wf, DEFAULT_GKE_NETWORKS, TCPXO_V1015["daemonImage"])
    image = TCPXO_V1015["ncclImage"]
    assert trainer(wf)["image"] == image
    for item in (container(wf), container(wf, "launcher"), container(wf, "launcher", "fix-ssh-permissions", init=True)):
        assert item["image"] == image
    # the launcher gets no TCPXO plumbing
    assert "tcpxo-daemon" not in init_names(wf, "launcher") and "tolerations" not in pod(wf, "launcher")["spec"]
    env = forwarded(wf)
    assert env["NCCL_FASTRAK_IFNAME"] == "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
    assert env["NCCL_FASTRAK_CTRL_DEV"] == "eth0" and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["NCCL_PROTO"] == "Simple,LL128" and "NCCL_ALGO" not in env
    assert env["NCCL_NVLS_ENABLE"] == "0"  # the FasTrak profile's value, kept
    assert env["LD_LIBRARY_PATH"] == "/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64"
    assert env["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto"
    assert env["NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"] == "/usr/local/nvidia/lib64/a3plus_guest_config.textproto"
    assert env["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] == "/dev/aperture_devices"
    assert env["NCCL_P2P_NET_CHUNKSIZE"] == "524288" and env["NCCL_BUFFSIZE"] == "8388608"
    # the catalog's pytorch binaries and mpirun stay
    assert trainer(wf)["command"][-1] == "/usr/local/mpi/bin/mpirun"
    assert any(str(a).endswith("_perf_mpi") for a in trainer(wf)["args"])


@pytest.mark.parametrize("entry", TRAINING)
def test_gcp_h100_training_uses_tcpxo_and_the_training_image(entry):
    wf = render(entry, "gcp", "h100")
    assert applied(wf) == ["gcp-h100-tcpxo-daemon", "gcp-h100-tcpxo-training"]
    tcpxo_plumbing(wf, DEFAULT_GKE_NETWORKS, TCPXO_V1015["daemonImage"])
    image = TCPXO_V1015["trainingImage"]
    assert trainer(wf)["image"] == image and container(wf)["image"] == image
    assert container(wf, name="megatron-clone", init=True)["image"] == image
    assert init_names(wf) == ["megatron-clone", "tcpxo-daemon"]
    env = env_of(container(wf))
    assert env["TRITON_LIBCUDA_PATH"] == "/usr/local/nvidia/lib64"
    assert env["NCCL_FASTRAK_IFNAME"] == "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
    assert env["NCCL_PROTO"] == "Simple,LL128" and env["NCCL_NVLS_ENABLE"] == "0"
    assert env["NCCL_P2P_NET_CHUNKSIZE"] == "524288"  # the FasTrak value replaces the catalog's by name
    assert "LD_LIBRARY_PATH" not in env and "NCCL_ALGO" not in env
    names = [e["name"] for e in container(wf)["env"]]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("entry", LOOPBACKS)
def test_gcp_h100_loopbacks_take_the_tcpxo_plumbing_image_and_fastrak_env(entry):
    wf = render(entry, "gcp", "h100")
    assert applied(wf) == ["gcp-h100-nccl-image-loopback", "gcp-h100-tcpxo-daemon"]
    assert trainer(wf)["image"] == TCPXO_V1015["ncclImage"] and container(wf)["image"] == TCPXO_V1015["ncclImage"]
    assert container(wf, name="tcpxo-daemon", init=True)["restartPolicy"] == "Always"
    assert "networking.gke.io/interfaces" in pod(wf)["metadata"]["annotations"]
    # the blanket toleration already covers the GPU taint
    assert pod(wf)["spec"]["tolerations"] == [{"operator": "Exists"}]
    env = {e["name"]: e["value"] for e in trainer(wf)["env"]}
    assert env["NCCL_FASTRAK_IFNAME"] == ",".join(f"eth{i}" for i in range(1, 9))
    assert env["NCCL_FASTRAK_CTRL_DEV"] == "eth0" and env["NCCL_DEBUG"] == "INFO"
    # the whole FasTrak profile, loader path and device connections included, as NVCRE's loopback arms
    assert env["LD_LIBRARY_PATH"] == "/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64"
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert (env.get("NCCL_SHM_DISABLE"), env.get("NCCL_P2P_DISABLE")) == (
        ("1", "1") if entry == "communication/nccl-loopback" else (None, None)
    )


def test_gcp_h100_cluster_facts_pick_networks_and_images():
    facts = load_facts(FIXTURES / "gcp-h100-a3mega.yaml")
    collective, training = render_all(["communication/nccl-all-reduce", "training/nemotron5-8b"], None, None, facts=facts)
    networks = [f"aicr-7f3a-gpu-nic-{i}" for i in range(8)]
    daemon = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.22"
    tcpxo_plumbing(collective, networks, daemon)
    tcpxo_plumbing(training, networks, daemon)
    assert trainer(collective)["image"] == "nvcr.io/nvidia/pytorch:25.06-py3"
    assert trainer(training)["image"] == "nvcr.io/nvidia/pytorch:25.06-py3"


def test_gcp_h100_user_image_leaves_the_tcpxo_daemon_alone():
    image = "registry.example.com/pytorch:26.01-py3"
    for entry in ("communication/nccl-all-reduce", "training/nemotron5-8b"):
        wf = render(entry, "gcp", "h100", options={"image": image})
        assert trainer(wf)["image"] == image and container(wf)["image"] == image
        assert container(wf, name="tcpxo-daemon", init=True)["image"] == TCPXO_V1015["daemonImage"]


def test_gcp_gpu_toleration_keeps_the_users_tolerations():
    cordoned = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    for arch in ("h100", "rtxpro6000"):
        wf = render(
            "communication/nccl-all-reduce",
            "gcp",
            arch,
            spec={"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "taintSelectors": [cordoned]}},
        )
        tolerations = pod(wf)["spec"]["tolerations"]
        assert tolerations == [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}, GPU_PRESENT]
        # a selector for the GPU taint itself is not repeated
        wf = render(
            "communication/nccl-all-reduce",
            "gcp",
            arch,
            spec={
                "target": {
                    "nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "taintSelectors": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                }
            },
        )
        assert pod(wf)["spec"]["tolerations"] == [GPU_PRESENT]


# --- GCP GB200 / GB300: RoCE over GKE multi-networking ------------------------------------------


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("entry", MPI + LOOPBACKS + TRAINING)
def test_gcp_gb_rdma_networks(arch, entry):
    wf = render(entry, "gcp", arch)
    assert "gcp-gb200-gb300-rdma-networks" in applied(wf)
    annotations = pod(wf)["metadata"]["annotations"]
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert [i["network"] for i in interfaces[1:]] == RDMA_NETWORKS
    assert [i["interfaceName"] for i in interfaces[1:]] == ["rdma0", "rdma1", "rdma2", "rdma3"]
    # the node Job's template carries the same annotations, where NVCRE's runtime patch puts them
    jobs = runtime(wf)["spec"]["template"]["spec"]["replicatedJobs"]
    node_job = next(j for j in jobs if j["name"] == "node")
    assert node_job["template"]["metadata"]["annotations"] == annotations
    resources = container(wf)["resources"]
    for side in ("limits", "requests"):
        assert {k: v for k, v in resources[side].items() if k.startswith("networking.gke.io.networks/")} == {
            f"networking.gke.io.networks/{n}": "1" for n in RDMA_NETWORKS
        }
    if entry in MPI:
        assert "annotations" not in pod(wf, "launcher").get("metadata", {})


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("entry", MPI)
def test_gcp_gb_roce_env(arch, entry):
    wf = render(entry, "gcp", arch)
    assert "gcp-gb200-gb300-roce-env" in applied(wf)
    env = forwarded(wf)
    assert env["NCCL_NET_GDR_LEVEL"] == "5" and env["NCCL_DEBUG"] == "INFO"
    assert "NCCL_NVLS_ENABLE" not in env  # left to NCCL's probe
    assert trainer(wf)["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("entry", LOOPBACKS + TRAINING)
def test_gcp_gb_loopbacks_and_training_keep_gpudirect_rdma_on(arch, entry):
    wf = render(entry, "gcp", arch)
    env = {e["name"]: e["value"] for e in (trainer(wf) if entry in LOOPBACKS else container(wf))["env"]}
    assert env["NCCL_NET_GDR_LEVEL"] == "5" and env["NCCL_DEBUG"] == "INFO"


ARM64_NO_SCHEDULE = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("entry", MPI + LOOPBACKS + TRAINING)
def test_gcp_gb_workers_tolerate_the_a4x_taints(arch, entry):
    wf = render(entry, "gcp", arch)
    if entry in LOOPBACKS:
        assert pod(wf)["spec"]["tolerations"] == [{"operator": "Exists"}]
        return
    assert "gcp-gb200-gb300-tolerations" in applied(wf)
    assert pod(wf)["spec"]["tolerations"] == [ARM64_NO_SCHEDULE, GPU_PRESENT]
    if entry in MPI:
        assert not pod(wf, "launcher")["spec"].get("tolerations")


def test_gcp_gb_no_nics_means_no_networks():
    wf = render("communication/nccl-all-reduce", "gcp", "gb200", options={"mlnxPerNode": 0})
    assert "gcp-gb200-gb300-rdma-networks" not in applied(wf)
    assert "annotations" not in pod(wf).get("metadata", {})
    assert not [k for k in container(wf)["resources"]["limits"] if k.startswith("networking.gke.io")]


# --- GCP RTX PRO 6000: TCP --------------------------------------------------------------------


@pytest.mark.parametrize(("gpus", "level"), [(8, "SYS"), (4, "PHB"), (2, "PHB"), (6, None), (1, None)])
@pytest.mark.parametrize("entry", MPI)
def test_gcp_rtxpro6000_collectives_over_tcp(entry, gpus, level):
    wf = render(entry, "gcp", "rtxpro6000", options={"gpusPerNode": gpus})
    assert applied(wf) == ["gcp-rtxpro6000-tcp-nccl"]
    env = forwarded(wf)
    assert env["NCCL_IB_DISABLE"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0" and env["NCCL_NET_PLUGIN"] == "none"
    assert env.get("NCCL_P2P_LEVEL") == level
    assert pod(wf)["spec"]["tolerations"] == [GPU_PRESENT]
    resources = container(wf)["resources"]
    assert set(resources["limits"]) == {"nvidia.com/gpu"} == set(resources["requests"])
    assert "annotations" not in pod(wf).get("metadata", {})


@pytest.mark.parametrize(("gpus", "nodes", "level"), [(8, 1, "SYS"), (4, 1, "PHB"), (6, 2, None)])
def test_gcp_rtxpro6000_training_over_tcp(gpus, nodes, level):
    wf = render("training/nemotron5-8b", "gcp", "rtxpro6000", options={"gpusPerNode": gpus, "nodesPerJob": nodes})
    assert applied(wf) == ["gcp-rtxpro6000-tcp-training"]
    env = env_of(container(wf))
    assert env["NCCL_IB_DISABLE"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0" and env["NCCL_NET_PLUGIN"] == "none"
    assert env.get("NCCL_P2P_LEVEL") == level
    assert pod(wf)["spec"]["tolerations"] == [GPU_PRESENT]
    assert not [k for k in container(wf)["resources"]["limits"] if "rdma" in k or "mlnx" in k or "networking" in k]


@pytest.mark.parametrize("entry", LOOPBACKS + ["training/nemotron5-56b", "diagnostics/dcgm-level4"])
def test_gcp_rtxpro6000_leaves_other_entries_alone(entry):
    assert not [o for o in applied(render(entry, "gcp", "rtxpro6000")) if o.startswith("gcp-")]


# --- scope: never beyond what an overlay names -------------------------------------------------


def own_overlays():
    return [o for o in load_overlays().overlays if o.source.startswith(("aws/", "gcp/")) and "/workloadrun-" not in o.source]


def test_every_overlay_names_platform_architectures_and_entries():
    overlays = own_overlays()
    assert len(overlays) >= 16
    for overlay in overlays:
        when = overlay.when
        assert not when.all_architectures, overlay.name
        assert when.platform is not None and when.platform.in_ == (overlay.source.split("/")[0],), overlay.name
        assert when.gpu_architecture is not None and when.gpu_architecture.in_, overlay.name
        assert when.entry is not None and when.entry.in_, overlay.name
        assert set(when.entry.in_) <= set(ALL_ENTRIES) - {"diagnostics/dcgm-level4"}, overlay.name
        assert overlay.reason and "\n" not in overlay.reason, overlay.name


#: The intended reach of every AWS/GCP overlay: platform, architectures, entries. Written out
#: here, independently of the overlay files, so a widened or narrowed ``when`` fails a test.
SCOPE = {
    "aws-efa-nccl-mpi": ("aws", {"h100", "gb200"}, MPI),
    "aws-efa-nccl-loopback": ("aws", {"h100", "gb200"}, LOOPBACKS),
    "aws-h100-efa-devices": ("aws", {"h100"}, MPI + LOOPBACKS),
    "aws-gb200-efa-devices": ("aws", {"gb200"}, MPI + LOOPBACKS),
    "aws-gb200-efa-mpirun": ("aws", {"gb200"}, MPI),
    "aws-efa-training": ("aws", {"h100", "gb200"}, TRAINING),
    "aws-h100-efa-training-resources": ("aws", {"h100"}, TRAINING),
    "aws-gb200-efa-training-resources": ("aws", {"gb200"}, TRAINING),
    "aws-gb300-roce-devices": ("aws", {"gb300"}, MPI + LOOPBACKS + TRAINING),
    "aws-gb300-efa-cleanup": ("aws", {"gb300"}, LOOPBACKS + TRAINING),
    "aws-gb300-roce-nccl": ("aws", {"gb300"}, MPI),
    "gcp-h100-tcpxo-daemon": ("gcp", {"h100"}, MPI + LOOPBACKS + TRAINING),
    "gcp-h100-tcpxo-nccl": ("gcp", {"h100"}, MPI),
    "gcp-h100-tcpxo-training": ("gcp", {"h100"}, TRAINING),
    "gcp-h100-nccl-image-loopback": ("gcp", {"h100"}, LOOPBACKS),
    "gcp-gb200-gb300-rdma-networks": ("gcp", {"gb200", "gb300"}, MPI + LOOPBACKS + TRAINING),
    "gcp-gb200-gb300-roce-env": ("gcp", {"gb200", "gb300"}, MPI + LOOPBACKS + TRAINING),
    "gcp-gb200-gb300-tolerations": ("gcp", {"gb200", "gb300"}, MPI + TRAINING),
    "gcp-rtxpro6000-tcp-nccl": ("gcp", {"rtxpro6000"}, MPI),
    "gcp-rtxpro6000-tcp-training": ("gcp", {"rtxpro6000"}, ["training/nemotron5-8b"]),
}


def test_the_scope_table_lists_every_overlay():
    assert {o.name for o in own_overlays()} == set(SCOPE)


GRID = [(p, a) for p in ("aws", "gcp", "onprem") for a in ("h100", "h200", "gb200", "gb300", "rtxpro6000", "b200", "a100", "l40s")]


@pytest.mark.parametrize(("platform", "arch"), GRID, ids=[f"{p}-{a}" for p, a in GRID])
def test_overlays_fire_exactly_where_intended(platform, arch):
    workflows = render_all(ALL_ENTRIES, platform, arch)
    for key, wf in zip(ALL_ENTRIES, workflows):
        expected = sorted(name for name, (p, archs, entries) in SCOPE.items() if p == platform and arch in archs and key in entries)
        assert sorted(n for n in applied(wf) if n in SCOPE) == expected, (platform, arch, key)


@pytest.mark.parametrize(
    ("overlay", "platform", "arch", "entry", "other_archs"),
    [
        ("aws-efa-nccl-mpi", "aws", "h100", "communication/nccl-all-reduce", ["gb300", "b200", "a100"]),
        ("aws-efa-nccl-loopback", "aws", "gb200", "communication/nccl-loopback", ["gb300", "h200"]),
        ("aws-efa-training", "aws", "h100", "training/nemotron5-8b", ["gb300", "b200"]),
        ("aws-gb300-roce-nccl", "aws", "gb300", "communication/nccl-alltoall", ["gb200", "h100"]),
        ("aws-gb300-roce-devices", "aws", "gb300", "communication/nccl-all-reduce", ["gb200"]),
        ("gcp-h100-tcpxo-daemon", "gcp", "h100", "communication/nccl-all-reduce", ["h200", "b200", "gb200"]),
        ("gcp-h100-tcpxo-training", "gcp", "h100", "training/nemotron5-8b", ["h200", "a100"]),
        ("gcp-gb200-gb300-rdma-networks", "gcp", "gb200", "communication/nccl-all-reduce", ["h100", "b200"]),
        ("gcp-rtxpro6000-tcp-nccl", "gcp", "rtxpro6000", "communication/nccl-all-gather", ["l40s", "h100"]),
    ],
)
def test_overlay_absent_on_another_architecture_and_platform(overlay, platform, arch, entry, other_archs):
    assert overlay in applied(render(entry, platform, arch))
    for other in other_archs:
        assert overlay not in applied(render(entry, platform, other)), other
    other_platform = "gcp" if platform == "aws" else "aws"
    assert overlay not in applied(render(entry, other_platform, arch))
    assert overlay not in applied(render(entry, "onprem", arch))
