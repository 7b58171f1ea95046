"""Overlays for GB200/GB300 multi-node NVLink (every platform), on-prem, Nscale NKS and Mistral.

Every case renders a Certification through the real render path and checks what the overlays put
into the Workflow: dependencies, claims, resources, tolerations, forwarded variables, env and
orchestration keys, and that each overlay stays away from the platforms and architectures it does
not name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.facts import load_facts
from nvcre.compiler.mpi_args import forward_pairs
from nvcre.compiler.overlays import OverlaySet, load_overlays
from nvcre.compiler.render import render_certification
from tests.platform_profiles import DCGM, GPU_ANY, GPU_PRESENT, LOOPBACKS, MISTRAL_HCAS, MISTRAL_IB, MPI, NSCALE_IB, ONPREM_IB, TRAINING

FACTS = Path(__file__).parents[1] / "fixtures" / "facts"

ALL_ENTRIES = MPI + LOOPBACKS + [DCGM] + TRAINING

ARM64 = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
CORDON = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}

BASE_MPI_FORWARDS = ["NCCL_DEBUG", "NCCL_MNNVL_ENABLE"]

MY_OVERLAYS = {
    "gb200-gb300-compute-domain",
    "gb200-gb300-clique-topology",
    "onprem-gb200-gb300",
    "onprem-hgx-b200-b300",
    "onprem-nic-request",
    "nscale-dra-claims",
    "nscale-dcgm-dra-host",
    "nscale-ib-env",
    "nscale-tolerations",
    "nscale-gb300-accelerator-domain",
    "mistral-gb300-ib",
}


# --- helpers -------------------------------------------------------------------------------------


def cert(entries: list[str], **spec: Any) -> dict:
    target = spec.pop("target", {"nodeSelector": {"nvidia.com/gpu.present": "true"}})
    categories = []
    for entry in entries:
        domain, variant = entry.split("/")
        category: dict[str, Any] = {"domain": domain, "variant": variant}
        if entry == "training/nemotron5-56b":
            category["options"] = {"nodesPerJob": 8}  # the 56B model needs 32 GPUs
        categories.append(category)
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "cert"},
        "spec": {"target": target, "categories": categories, **spec},
    }


def render(
    platform: str | None, arch: str | None, entries: list[str], facts: str | None = None, overlays: OverlaySet | None = None, **spec: Any
) -> dict[str, dict]:
    """The rendered Workflows keyed by catalog entry ("domain/variant")."""
    rendered = render_certification(
        cert(entries, **spec),
        platform=platform,
        gpu_arch=arch,
        facts=load_facts(FACTS / facts) if facts else None,
        overlays=overlays,
        check_purity=True,
    )
    out = {}
    for workflow in rendered.workflows:
        labels = workflow["metadata"]["labels"]
        out[f"{labels['nvcre.nvidia.com/category-domain']}/{labels['nvcre.nvidia.com/category-variant']}"] = workflow
    return out


def one(platform: str | None, arch: str | None, entry: str, **kwargs: Any) -> dict:
    return render(platform, arch, [entry], **kwargs)[entry]


def applied(workflow: dict) -> list[str]:
    return json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"])


def runtime(workflow: dict) -> dict:
    return next(d for d in workflow["spec"]["dependencies"] if d["kind"] == "TrainingRuntime")


def pod(workflow: dict, job: str = "node") -> dict:
    jobs = runtime(workflow)["spec"]["template"]["spec"]["replicatedJobs"]
    return next(j for j in jobs if j["name"] == job)["template"]["spec"]["template"]["spec"]


def container(workflow: dict, job: str = "node", name: str = "node") -> dict:
    return next(c for c in pod(workflow, job)["containers"] if c["name"] == name)


def dependency(workflow: dict, kind: str, name: str) -> dict | None:
    return next((d for d in workflow["spec"]["dependencies"] if d["kind"] == kind and d["metadata"]["name"] == name), None)


def trainer(workflow: dict) -> dict:
    return workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def forwarded(workflow: dict) -> dict[str, str]:
    """NAME -> VALUE of every ``-x NAME=VALUE`` pair (the test also checks no name repeats)."""
    args = trainer(workflow)["args"]
    names = [name for _, name in forward_pairs(args)]
    assert len(names) == len(set(names)), f"a variable is forwarded twice: {names}"
    return {name: args[index + 1].split("=", 1)[1] for index, name in forward_pairs(args)}


def env_of(items: list[dict] | None) -> dict[str, str]:
    items = items or []
    names = [item["name"] for item in items]
    assert len(names) == len(set(names)), f"an env name repeats: {names}"
    return {item["name"]: item.get("value") for item in items}


def only(*prefixes: str) -> OverlaySet:
    """The overlay set restricted to overlays whose file lives under one of ``prefixes``."""
    full = load_overlays()
    return OverlaySet(root=full.root, overlays=tuple(o for o in full.overlays if o.source.startswith(prefixes)))


# --- the overlay files themselves ----------------------------------------------------------------


def test_my_overlays_exist_and_name_their_architectures_and_entries():
    by_name = {o.name: o for o in load_overlays().overlays}
    assert MY_OVERLAYS <= set(by_name)
    for name in MY_OVERLAYS:
        overlay = by_name[name]
        assert overlay.when.gpu_architecture is not None and not overlay.when.all_architectures, name
        assert overlay.when.entry is not None and overlay.when.entry.in_, name
        assert all(not e.startswith("workloadrun/") for e in overlay.when.entry.in_), name
        if not overlay.source.startswith("common/"):
            assert overlay.when.platform is not None, name


def test_overlay_order_puts_common_first_and_the_nscale_key_after_the_clique_key():
    by_name = {o.name: o for o in load_overlays().overlays}
    assert by_name["gb200-gb300-compute-domain"].order < by_name["onprem-gb200-gb300"].order
    assert by_name["gb200-gb300-clique-topology"].order < by_name["nscale-gb300-accelerator-domain"].order


@pytest.mark.parametrize(
    "platform,arch",
    [
        ("onprem", "gb200"),
        ("onprem", "gb300"),
        ("onprem", "b200"),
        ("onprem", "b300"),
        ("nscale", "b200"),
        ("nscale", "gb300"),
        ("mistral", "gb300"),
        ("mistral", "b300"),
    ],
)
def test_every_entry_renders_without_ownership_clashes(platform, arch):
    workflows = render(platform, arch, ALL_ENTRIES, nodesPerJob=8, nicResourceName="rdma/ib")
    assert set(workflows) == set(ALL_ENTRIES)
    for entry in MPI:
        forwarded(workflows[entry])  # asserts no duplicate -x
        assert forwarded(workflows[entry])["NCCL_DEBUG"] == "INFO"


# --- GB200/GB300 ComputeDomain (every platform) --------------------------------------------------


@pytest.mark.parametrize("platform,arch", [("onprem", "gb200"), ("onprem", "gb300"), ("nscale", "gb300"), ("mistral", "gb300")])
def test_compute_domain_on_every_nccl_and_training_entry(platform, arch):
    workflows = render(platform, arch, MPI + LOOPBACKS + TRAINING, nodesPerJob=8)
    for entry, workflow in workflows.items():
        variant = entry.split("/")[1]
        nodes = 1 if entry in LOOPBACKS else 8
        domain = dependency(workflow, "ComputeDomain", f"{variant}-compute-domain")
        assert domain is not None, entry
        assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
        assert domain["metadata"]["labels"] == {"app": variant}
        assert domain["spec"] == {
            "numNodes": nodes,
            "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": f"{variant}-channel"}},
        }
        claim = "compute-domain" if entry in TRAINING else "compute-domain-channel"
        assert {"name": claim, "resourceClaimTemplateName": f"{variant}-channel"} in pod(workflow)["resourceClaims"]
        assert {"name": claim} in container(workflow)["resources"]["claims"]
        assert "gb200-gb300-compute-domain" in applied(workflow)
        if entry in MPI:
            assert "resourceClaims" not in pod(workflow, "launcher")


def test_compute_domain_follows_enable_mnnvl():
    off = render("onprem", "gb200", MPI[:1] + TRAINING[:1], enableMNNVL=False)
    for workflow in off.values():
        assert "gb200-gb300-compute-domain" not in applied(workflow)
        assert not [d for d in workflow["spec"]["dependencies"] if d["kind"] == "ComputeDomain"]
        assert "resourceClaims" not in pod(workflow)
    assert forwarded(off[MPI[0]])["NCCL_MNNVL_ENABLE"] == "0"


@pytest.mark.parametrize("arch", ["h100", "b200", "b300", "a100"])
def test_compute_domain_and_clique_key_only_on_gb200_gb300(arch):
    workflows = render("onprem", arch, MPI[:1] + [DCGM] + TRAINING[:1], enableMNNVL=True)
    for entry, workflow in workflows.items():
        assert not {"gb200-gb300-compute-domain", "gb200-gb300-clique-topology"} & set(applied(workflow)), entry
        assert not [d for d in workflow["spec"]["dependencies"] if d["kind"] == "ComputeDomain"]
    assert "topology" not in workflows[DCGM]["spec"]["orchestration"]


def test_common_overlays_forward_no_nccl_variables():
    """The cross-platform overlays leave every NCCL variable to the platform profiles."""
    for arch in ("gb200", "gb300"):
        workflows = render("onprem", arch, MPI + LOOPBACKS + TRAINING, overlays=only("common/"))
        for entry in MPI:
            assert list(forwarded(workflows[entry])) == BASE_MPI_FORWARDS
        bare = render("onprem", arch, LOOPBACKS + TRAINING, overlays=OverlaySet(root=load_overlays().root, overlays=()))
        for entry in LOOPBACKS:
            assert trainer(workflows[entry]).get("env") == trainer(bare[entry]).get("env")
        for entry in TRAINING:
            assert container(workflows[entry])["env"] == container(bare[entry])["env"]


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
def test_clique_topology_for_dcgm_and_training(arch):
    workflows = render("onprem", arch, [DCGM] + TRAINING + MPI[:1])
    for entry in [DCGM] + TRAINING:
        assert workflows[entry]["spec"]["orchestration"]["topology"] == {"topologyKey": "nvidia.com/gpu.clique"}
        assert "gb200-gb300-clique-topology" in applied(workflows[entry])
    # the NCCL collectives group by clique only at intra-rack / diagnose scale (catalog template)
    assert "topology" not in workflows[MPI[0]]["spec"]["orchestration"]


@pytest.mark.parametrize("platform,arch", [("onprem", "gb200"), ("onprem", "gb300"), ("mistral", "gb300")])
def test_nvls_is_left_to_nccl_outside_nscale(platform, arch):
    workflows = render(platform, arch, MPI + LOOPBACKS + TRAINING, nicResourceName="rdma/ib")
    for entry in MPI:
        assert "NCCL_NVLS_ENABLE" not in forwarded(workflows[entry])
    for entry in LOOPBACKS:
        assert "NCCL_NVLS_ENABLE" not in env_of(trainer(workflows[entry]).get("env"))
    for entry in TRAINING:
        assert "NCCL_NVLS_ENABLE" not in env_of(container(workflows[entry])["env"])


# --- on-prem GB200/GB300 -------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
def test_onprem_gb_tolerations_env_and_nic_on_mpi_entries(arch):
    workflows = render("onprem", arch, MPI, nicResourceName="rdma/ib")
    for entry, workflow in workflows.items():
        assert applied(workflow) == ["gb200-gb300-compute-domain", "onprem-gb200-gb300", "onprem-nic-request"]
        assert pod(workflow)["tolerations"] == [ARM64, GPU_PRESENT]
        assert pod(workflow, "launcher")["tolerations"] == [ARM64, GPU_PRESENT]
        resources = container(workflow)["resources"]
        assert resources["limits"] == {"nvidia.com/gpu": "4", "rdma/ib": "8"}
        assert resources["requests"] == resources["limits"]
        assert "rdma/ib" not in container(workflow, "launcher")["resources"]["limits"]
        env = forwarded(workflow)
        assert list(env) == BASE_MPI_FORWARDS + list(ONPREM_IB)
        assert {k: env[k] for k in ONPREM_IB} == ONPREM_IB
        for pinned in ("NCCL_IB_HCA", "UCX_NET_DEVICES", "NCCL_NET", "NCCL_NVLS_ENABLE"):
            assert pinned not in env
        # the binary still follows the forwarded variables
        args = trainer(workflow)["args"]
        last_pair = forward_pairs(args)[-1][0]
        assert args[last_pair + 2].startswith("/usr/local/bin/")


def test_onprem_gb_user_env_still_lands_after_the_profile():
    workflow = one(
        "onprem", "gb200", MPI[0], env=[{"name": "NCCL_IB_PCI_RELAXED_ORDERING", "value": "0"}, {"name": "NCCL_IB_HCA", "value": "mlx5_0"}]
    )
    env = forwarded(workflow)
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "0"
    assert env["NCCL_IB_HCA"] == "mlx5_0"


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
def test_onprem_gb_training_env_in_runtime_container(arch):
    workflow = one("onprem", arch, TRAINING[0], nicResourceName="nvidia.com/mlnxnics", mlnxPerNode=4)
    env = env_of(container(workflow)["env"])
    assert {k: env[k] for k in ONPREM_IB} == ONPREM_IB
    assert "NCCL_NVLS_ENABLE" not in env
    assert "env" not in trainer(workflow)
    assert pod(workflow)["tolerations"] == [ARM64, GPU_PRESENT]
    resources = container(workflow)["resources"]
    assert resources["limits"]["nvidia.com/mlnxnics"] == "4"
    assert resources["requests"]["nvidia.com/mlnxnics"] == "4"
    assert resources["limits"]["cpu"] == "128"  # the catalog's own limits stay


def test_onprem_gb_loopbacks_and_dcgm():
    workflows = render("onprem", "gb200", LOOPBACKS + [DCGM], nicResourceName="rdma/ib")
    loopback, nvswitch, dcgm = (workflows[e] for e in LOOPBACKS + [DCGM])
    # nccl-loopback goes through the NICs: NIC request and the IB profile in the trainer env
    assert applied(loopback) == ["gb200-gb300-compute-domain", "onprem-gb200-gb300", "onprem-nic-request"]
    env = env_of(trainer(loopback)["env"])
    assert {k: env[k] for k in ONPREM_IB} == ONPREM_IB
    assert env["NCCL_SHM_DISABLE"] == "1" and env["NCCL_P2P_DISABLE"] == "1"
    assert container(loopback)["resources"]["limits"]["rdma/ib"] == "8"
    # blanket toleration kept on the single-node entries
    assert pod(loopback)["tolerations"] == [{"operator": "Exists"}]
    assert pod(nvswitch)["tolerations"] == [{"operator": "Exists"}]
    # NVLink loopback: the same IB profile and NIC request as NVCRE's on-prem arm, SHM/P2P left on
    assert applied(nvswitch) == ["gb200-gb300-compute-domain", "onprem-gb200-gb300", "onprem-nic-request"]
    env = env_of(trainer(nvswitch)["env"])
    assert {k: env[k] for k in ONPREM_IB} == ONPREM_IB
    assert "NCCL_SHM_DISABLE" not in env and "NCCL_P2P_DISABLE" not in env
    assert container(nvswitch)["resources"]["limits"]["rdma/ib"] == "8"
    assert applied(dcgm) == ["gb200-gb300-clique-topology"]


def test_onprem_gb_tolerations_are_added_to_taint_selectors():
    workflow = one(
        "onprem",
        "gb200",
        MPI[0],
        nodesPerJob=1,
        enableMNNVL=True,
        target={"nodeNames": ["gpu-node-1"], "taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
    )
    for job in ("node", "launcher"):
        assert pod(workflow, job)["tolerations"] == [CORDON, ARM64, GPU_PRESENT]


@pytest.mark.parametrize("arch", ["gb200", "gb300", "b200", "b300"])
@pytest.mark.parametrize("options", [{}, {"nicResourceName": "rdma/ib", "mlnxPerNode": 0}])
def test_onprem_no_nic_request_without_a_name_or_at_zero(arch, options):
    workflows = render("onprem", arch, MPI[:1] + ["communication/nccl-loopback"] + TRAINING[:1], **options)
    for entry, workflow in workflows.items():
        assert "onprem-nic-request" not in applied(workflow), entry
        for section in ("limits", "requests"):
            assert set(container(workflow)["resources"][section]) <= {"nvidia.com/gpu", "cpu", "memory"}


def test_onprem_nic_detected_from_facts():
    workflow = one(None, None, MPI[0], facts="onprem-gb200-rdma.yaml")
    assert "onprem-nic-request" in applied(workflow)
    assert container(workflow)["resources"]["limits"]["rdma/ib"] == "8"
    assert dependency(workflow, "ComputeDomain", "nccl-all-reduce-compute-domain")["spec"]["numNodes"] == 3


def test_onprem_ambiguous_nics_request_nothing():
    workflow = one(None, None, MPI[0], facts="onprem-gb300-ambiguous-nics.yaml")
    assert applied(workflow) == ["gb200-gb300-compute-domain", "onprem-gb200-gb300"]
    limits = container(workflow)["resources"]["limits"]
    assert "rdma/ib" not in limits and "nvidia.com/mlnxnics" not in limits


# --- on-prem HGX B200/B300 -----------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["b200", "b300"])
def test_onprem_hgx_gpu_taint_nic_and_no_nccl_env(arch):
    workflows = render("onprem", arch, MPI + TRAINING, nicResourceName="rdma/ib")
    bare = render("onprem", arch, MPI + TRAINING, overlays=OverlaySet(root=load_overlays().root, overlays=()))
    for entry, workflow in workflows.items():
        assert applied(workflow) == ["onprem-hgx-b200-b300", "onprem-nic-request"]
        assert pod(workflow)["tolerations"] == [GPU_ANY]
        assert container(workflow)["resources"]["limits"]["rdma/ib"] == "8"
        assert container(workflow)["resources"]["requests"]["rdma/ib"] == "8"
        if entry in MPI:
            assert pod(workflow, "launcher")["tolerations"] == [GPU_ANY]
            assert trainer(workflow)["args"] == trainer(bare[entry])["args"]
        else:
            assert container(workflow)["env"] == container(bare[entry])["env"]


def test_onprem_hgx_single_node_entries_untouched():
    workflows = render("onprem", "b300", LOOPBACKS + [DCGM], nicResourceName="rdma/ib")
    assert applied(workflows["communication/nccl-loopback"]) == ["onprem-nic-request"]
    assert applied(workflows["communication/nccl-loopback-nvswitch"]) == ["onprem-nic-request"]
    assert applied(workflows[DCGM]) == []


@pytest.mark.parametrize("arch", ["h100", "a100", "l40s"])
def test_onprem_overlays_stay_off_other_architectures(arch):
    workflows = render("onprem", arch, MPI[:1] + TRAINING[:1], nicResourceName="rdma/ib")
    for workflow in workflows.values():
        assert not set(applied(workflow)) & MY_OVERLAYS


# --- Nscale NKS ----------------------------------------------------------------------------------


@pytest.mark.parametrize("arch,gpus,nics", [("b200", 8, 8), ("gb300", 4, 4)])
def test_nscale_gpu_and_rdma_claims(arch, gpus, nics):
    workflows = render("nscale", arch, MPI + ["communication/nccl-loopback"] + TRAINING)
    for entry, workflow in workflows.items():
        variant = entry.split("/")[1]
        assert "nscale-dra-claims" in applied(workflow)
        gpu = dependency(workflow, "ResourceClaimTemplate", f"{variant}-gpu")
        rdma = dependency(workflow, "ResourceClaimTemplate", f"{variant}-rdma")
        assert gpu["apiVersion"] == rdma["apiVersion"] == "resource.k8s.io/v1"
        assert gpu["spec"]["spec"]["devices"]["requests"] == [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": gpus}}
        ]
        assert rdma["spec"]["spec"]["devices"]["requests"] == [
            {"name": "rdma", "exactly": {"deviceClassName": "rdma.nscale.com", "allocationMode": "ExactCount", "count": nics}}
        ]
        claims = pod(workflow)["resourceClaims"]
        assert {"name": "gpu", "resourceClaimTemplateName": f"{variant}-gpu"} in claims
        assert {"name": "rdma", "resourceClaimTemplateName": f"{variant}-rdma"} in claims
        resources = container(workflow)["resources"]
        assert {"name": "gpu"} in resources["claims"] and {"name": "rdma"} in resources["claims"]
        assert "nvidia.com/gpu" not in resources["limits"] and "nvidia.com/gpu" not in resources["requests"]
        if entry in TRAINING:
            assert resources["limits"]["memory"] == "800Gi"  # only the GPU request is removed
        if entry in MPI:
            assert "resourceClaims" not in pod(workflow, "launcher")


@pytest.mark.parametrize("arch", ["b200", "gb300"])
def test_nscale_no_rdma_claim_at_zero_nics(arch):
    workflow = one("nscale", arch, MPI[0], mlnxPerNode=0)
    assert dependency(workflow, "ResourceClaimTemplate", "nccl-all-reduce-rdma") is None
    assert dependency(workflow, "ResourceClaimTemplate", "nccl-all-reduce-gpu") is not None
    assert {c["name"] for c in pod(workflow)["resourceClaims"]} <= {"gpu", "compute-domain-channel"}
    assert {"name": "rdma"} not in container(workflow)["resources"]["claims"]


@pytest.mark.parametrize("arch", ["b200", "gb300"])
def test_nscale_dcgm_and_nvswitch_claim_gpus_only(arch):
    workflows = render("nscale", arch, ["communication/nccl-loopback-nvswitch", DCGM])
    for entry, workflow in workflows.items():
        variant = entry.split("/")[1]
        assert dependency(workflow, "ResourceClaimTemplate", f"{variant}-rdma") is None
        assert dependency(workflow, "ResourceClaimTemplate", f"{variant}-gpu") is not None
        assert {"name": "gpu", "resourceClaimTemplateName": f"{variant}-gpu"} in pod(workflow)["resourceClaims"]
        assert "rdma" not in {c["name"] for c in pod(workflow)["resourceClaims"]}
        assert "nvidia.com/gpu" not in container(workflow)["resources"]["limits"]
        assert pod(workflow)["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize("arch", ["b200", "gb300"])
def test_nscale_dcgm_host_unless_set(arch):
    default = one("nscale", arch, DCGM)
    args = trainer(default)["args"]
    assert args[args.index("--host") + 1] == "nvidia-dcgm-dra.nvidia-platform.svc:5555"
    assert "nscale-dcgm-dra-host" in applied(default)
    own = one("nscale", arch, DCGM, dcgmHost="nvidia-dcgm.gpu-system.svc:5555")
    args = trainer(own)["args"]
    assert args[args.index("--host") + 1] == "nvidia-dcgm.gpu-system.svc:5555"
    assert "nscale-dcgm-dra-host" not in applied(own)


@pytest.mark.parametrize("arch", ["b200", "gb300"])
def test_nscale_ib_profile(arch):
    workflows = render("nscale", arch, MPI + LOOPBACKS + TRAINING)
    for entry in MPI:
        env = forwarded(workflows[entry])
        assert list(env) == BASE_MPI_FORWARDS + list(NSCALE_IB)
        assert {k: env[k] for k in NSCALE_IB} == NSCALE_IB
        assert "NCCL_NET" not in env and "NCCL_IB_HCA" not in env
    for entry in LOOPBACKS:
        env = env_of(trainer(workflows[entry])["env"])
        assert {k: env[k] for k in NSCALE_IB} == NSCALE_IB and "NCCL_NET" not in env
    for entry in TRAINING:
        env = env_of(container(workflows[entry])["env"])
        assert {k: env[k] for k in NSCALE_IB} == NSCALE_IB and "NCCL_NET" not in env


def test_nscale_tolerations_on_workers_of_both_architectures():
    for arch in ("gb300", "b200"):
        workflows = render("nscale", arch, MPI[:1] + LOOPBACKS + TRAINING[:1])
        assert pod(workflows[MPI[0]])["tolerations"] == [ARM64, GPU_PRESENT], arch
        assert "tolerations" not in pod(workflows[MPI[0]], "launcher"), arch
        assert pod(workflows[TRAINING[0]])["tolerations"] == [ARM64, GPU_PRESENT], arch
        for entry in LOOPBACKS:
            assert pod(workflows[entry])["tolerations"] == [{"operator": "Exists"}], (arch, entry)
            assert "nscale-tolerations" not in applied(workflows[entry])


ACCEL = "topology.nks.nscale.com/accelerator-domain"


def test_nscale_gb300_accelerator_domain_replaces_the_clique_key():
    intra = render("nscale", "gb300", MPI[:1] + [DCGM] + TRAINING[:1], testScale="intra-rack")
    for workflow in intra.values():
        assert workflow["spec"]["orchestration"]["topology"] == {"topologyKey": ACCEL, "strictDomain": True}
    diagnose = render("nscale", "gb300", MPI[:1] + ["communication/nccl-loopback"], testScale="diagnose")
    for workflow in diagnose.values():
        assert workflow["spec"]["orchestration"]["diagnose"]["topologyKey"] == ACCEL
        assert "topology" not in workflow["spec"]["orchestration"]
    full = render("nscale", "gb300", MPI[:1] + [DCGM] + TRAINING)
    assert "topology" not in full[MPI[0]]["spec"]["orchestration"]
    assert "nscale-gb300-accelerator-domain" not in applied(full[MPI[0]])
    for entry in [DCGM] + TRAINING:
        assert full[entry]["spec"]["orchestration"]["topology"] == {"topologyKey": ACCEL}
    text = json.dumps([w["spec"]["orchestration"] for w in [*intra.values(), *diagnose.values(), *full.values()]])
    assert "nvidia.com/gpu.clique" not in text


def test_nscale_b200_keeps_the_clique_free_orchestration():
    workflows = render("nscale", "b200", MPI[:1] + [DCGM], testScale="intra-rack")
    for workflow in workflows.values():
        assert "nscale-gb300-accelerator-domain" not in applied(workflow)
        assert workflow["spec"]["orchestration"]["topology"]["topologyKey"] == "nvidia.com/gpu.clique"


@pytest.mark.parametrize("arch", ["h100", "gb200", "b300"])
def test_nscale_overlays_need_b200_or_gb300(arch):
    workflows = render("nscale", arch, MPI[:1] + [DCGM] + TRAINING[:1])
    for workflow in workflows.values():
        assert not any(name.startswith("nscale-") for name in applied(workflow))
        assert "nvidia.com/gpu" in container(workflow)["resources"]["limits"]


def test_nscale_from_resource_slice_facts():
    workflows = render(None, None, MPI[:1] + [DCGM], facts="nscale-gb300-dra.yaml", testScale="intra-rack")
    allreduce = workflows[MPI[0]]
    assert json.loads(allreduce["metadata"]["annotations"]["nvcre.nvidia.com/render-facts"])["platform"]["value"] == "nscale"
    assert (
        dependency(allreduce, "ResourceClaimTemplate", "nccl-all-reduce-rdma")["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        == 4
    )
    assert workflows[DCGM]["spec"]["orchestration"]["topology"]["topologyKey"] == ACCEL


# --- Mistral -------------------------------------------------------------------------------------


def test_mistral_gb300_profile_nic_and_toleration():
    workflows = render("mistral", "gb300", MPI + LOOPBACKS + TRAINING)
    for entry in MPI:
        workflow = workflows[entry]
        assert applied(workflow) == ["gb200-gb300-compute-domain", "mistral-gb300-ib"]
        env = forwarded(workflow)
        assert list(env) == BASE_MPI_FORWARDS + list(MISTRAL_IB)
        assert {k: env[k] for k in MISTRAL_IB} == MISTRAL_IB
        assert pod(workflow)["tolerations"] == [ARM64, GPU_PRESENT]
        # the launcher tolerates the tray taints too, so it cannot stay Pending on a tainted fleet
        assert pod(workflow, "launcher")["tolerations"] == [ARM64, GPU_PRESENT]
        assert container(workflow)["resources"]["limits"] == {"nvidia.com/gpu": "4", "rdma/ib": "1"}
        assert container(workflow)["resources"]["requests"] == {"nvidia.com/gpu": "4", "rdma/ib": "1"}
        assert trainer(workflow)["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"
        assert container(workflow)["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"
    for entry in TRAINING:
        env = env_of(container(workflows[entry])["env"])
        assert {k: env[k] for k in MISTRAL_IB} == MISTRAL_IB
        assert pod(workflows[entry])["tolerations"] == [ARM64, GPU_PRESENT]
        assert container(workflows[entry])["resources"]["limits"]["rdma/ib"] == "1"
    for entry in LOOPBACKS:
        loopback = workflows[entry]
        assert "mistral-gb300-ib" in applied(loopback)
        env = env_of(trainer(loopback)["env"])
        assert {k: v for k, v in env.items() if k in MISTRAL_IB} == MISTRAL_IB
        assert env.get("NCCL_SHM_DISABLE") == ("1" if entry == "communication/nccl-loopback" else None)
        assert container(loopback)["resources"]["limits"]["rdma/ib"] == "1"
        assert pod(loopback)["tolerations"] == [{"operator": "Exists"}]


def test_mistral_gb300_no_nic_at_zero():
    workflow = one("mistral", "gb300", MPI[0], mlnxPerNode=0)
    assert container(workflow)["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert forwarded(workflow)["NCCL_IB_HCA"] == MISTRAL_HCAS


@pytest.mark.parametrize("arch", ["b300", "b200", "h100", "gb200"])
def test_mistral_overlay_is_gb300_only(arch):
    workflows = render("mistral", arch, MPI[:1] + TRAINING[:1])
    for workflow in workflows.values():
        assert "mistral-gb300-ib" not in applied(workflow)
        assert "NCCL_IB_HCA" not in json.dumps(workflow)


def test_mistral_b300_gets_no_overlay_at_all():
    workflow = one("mistral", "b300", MPI[0])
    assert applied(workflow) == []


def test_metal3_facts_detect_as_mistral():
    workflow = one(None, None, MPI[0], facts="metal3-gb300.yaml")
    assert "mistral-gb300-ib" in applied(workflow)
    assert "onprem-gb200-gb300" not in applied(workflow)


# --- failure modes -------------------------------------------------------------------------------


def test_a_second_owner_of_a_forwarded_name_is_an_error(tmp_path):
    """Another overlay forwarding an on-prem profile name in the same render must fail, not merge."""
    root = tmp_path / "platforms"
    (root / "extra").mkdir(parents=True)
    source = load_overlays().root
    for folder in ("common", "onprem"):
        (root / folder).mkdir()
        for path in (source / folder).iterdir():
            if path.is_file():
                (root / folder / path.name).write_text(path.read_text())
    (root / "extra" / "dup.yaml").write_text(
        "name: extra-dup\nreason: test\norder: 250\n"
        "when: {platform: {in: [onprem]}, gpuArchitecture: {in: [gb200]}, entry: {in: [communication/nccl-all-reduce]}}\n"
        "patches: extra/dup.patches.yaml.j2\n"
    )
    (root / "extra" / "dup.patches.yaml.j2").write_text("- mpiEnv: [{name: NCCL_CUMEM_ENABLE, value: '0'}]\n")
    overlays = load_overlays(str(root))
    with pytest.raises(CompileError, match="NCCL_CUMEM_ENABLE is already forwarded by overlay onprem-gb200-gb300"):
        render("onprem", "gb200", MPI[:1], overlays=overlays)


def test_hgx_nvlink_loopback_requests_the_nic():
    # NVCRE's on-prem HGX runtime patch gives both per-node loopbacks the RDMA NIC, the NVLink one too
    workflows = render("onprem", "b200", LOOPBACKS, nicResourceName="rdma/ib")
    for entry in LOOPBACKS:
        workflow = workflows[entry]
        assert "onprem-nic-request" in applied(workflow), entry
        resources = container(workflow).get("resources") or {}
        assert resources.get("limits", {}).get("rdma/ib") == "8", entry
        assert resources.get("requests", {}).get("rdma/ib") == "8", entry


GB200_BASE_ENV = {"NCCL_CUMEM_ENABLE": "1", "NCCL_P2P_NET_CHUNKSIZE": "2097152"}


@pytest.mark.parametrize(
    "platform, arch, entries",
    [
        ("forge", "gb200", MPI + LOOPBACKS),
        ("forge", "gb300", MPI + LOOPBACKS),
        ("mistral", "gb200", MPI + LOOPBACKS),
        ("nscale", "gb200", MPI + LOOPBACKS),
        ("gcp", "gb200", ["communication/nccl-loopback-nvswitch"]),
        ("gcp", "gb300", ["communication/nccl-loopback-nvswitch"]),
        ("aws", "gb300", ["communication/nccl-loopback-nvswitch"]),
    ],
)
def test_gb200_base_env_where_nvcre_keeps_its_gb200_arm(platform, arch, entries):
    workflows = render(platform, arch, entries)
    for entry in entries:
        workflow = workflows[entry]
        assert "gb200-gb300-base-env" in applied(workflow), entry
        if entry in MPI:
            env = forwarded(workflow)
        else:
            env = env_of(trainer(workflow)["env"])
        assert {k: env.get(k) for k in GB200_BASE_ENV} == GB200_BASE_ENV, (platform, arch, entry)


@pytest.mark.parametrize(
    "platform, arch, entry",
    [
        ("gcp", "gb200", "communication/nccl-all-reduce"),  # NVCRE's GCP arm replaces the GB200 args
        ("gcp", "gb300", "communication/nccl-loopback"),  # and the GB200 loopback env
        ("aws", "gb200", "communication/nccl-loopback-nvswitch"),  # AWS GB200 replaces it with its EFA env
        ("aws", "gb300", "communication/nccl-loopback"),
        ("mistral", "gb300", "communication/nccl-all-reduce"),  # Mistral's IB profile replaces it
        ("mistral", "gb300", "communication/nccl-loopback-nvswitch"),
        ("nscale", "gb300", "communication/nccl-all-reduce"),  # Nscale's own profile owns the names
    ],
)
def test_gb200_base_env_stays_off_where_a_platform_arm_replaces_it(platform, arch, entry):
    assert "gb200-gb300-base-env" not in applied(one(platform, arch, entry))
