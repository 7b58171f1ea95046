"""override_image: the user's image replaces the trainer's, the primary container's and its twins'."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.passes.override_image import override_image
from nvcre.compiler.passes.rewrite_gang import rewrite_gang
from nvcre.compiler.unit import ClusterView, Context, GangSpec, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import ENTRIES, FIXTURES, pod_specs

IMAGE = "registry.example.com/mirror/pytorch:26.01-py3"


def render(fixture: str, options: dict, gang: GangSpec | None = None):
    workflow = load_file(FIXTURES / f"{fixture}.yaml")[0]
    ctx = Context("Certification", "demo", {}, ENTRIES[fixture], ClusterView("onprem", "h100"), "spec.categories[0]", gang=gang)
    return Unit(category={}, options=options, workflow=workflow), ctx


def trainer_image(workflow: dict) -> str:
    return workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["image"]


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
@pytest.mark.parametrize("options", [{}, {"image": ""}, {"image": None}])
def test_no_image_is_a_strict_no_op(fixture, options):
    unit, ctx = render(fixture, options)
    out, diags = override_image(unit, ctx)
    assert out is unit and diags == []


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_trainer_and_primary_containers_take_the_image(fixture):
    unit, ctx = render(fixture, {"image": IMAGE})
    out, diags = override_image(unit, ctx)
    assert diags == []
    assert trainer_image(out.workflow) == IMAGE
    for spec in pod_specs(out.workflow).values():
        assert spec["containers"][0]["image"] == IMAGE


def test_ssh_init_follows_the_launcher_primary():
    unit, ctx = render("mpi-all-reduce", {"image": IMAGE})
    out, _ = override_image(unit, ctx)
    assert pod_specs(out.workflow)["launcher"]["initContainers"][0]["image"] == IMAGE


def test_megatron_clone_follows_the_training_primary():
    unit, ctx = render("nemotron5-8b", {"image": IMAGE})
    out, _ = override_image(unit, ctx)
    assert pod_specs(out.workflow)["node"]["initContainers"][0]["image"] == IMAGE


def test_distinct_inits_and_further_containers_keep_their_images():
    unit, ctx = render("mpi-all-reduce", {"image": IMAGE})
    node = pod_specs(unit.workflow)["node"]
    node["initContainers"] = [{"name": "tcpxo-daemon", "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.16"}]
    node["containers"].append({"name": "sidecar", "image": node["containers"][0]["image"]})
    out, _ = override_image(unit, ctx)
    spec = pod_specs(out.workflow)["node"]
    assert spec["initContainers"][0]["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.16"
    assert spec["containers"][1]["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"


def test_inits_follow_the_pre_override_image_of_their_own_pod():
    """An overlay may give the workers another image than the launcher; each pod keeps its own twins."""
    unit, ctx = render("mpi-all-reduce", {"image": IMAGE})
    trainer = unit.workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]
    trainer["image"] = "public.ecr.aws/hpc-cloud/nccl-tests:latest-efa"
    launcher = pod_specs(unit.workflow)["launcher"]
    launcher["initContainers"].append({"name": "unrelated", "image": "public.ecr.aws/hpc-cloud/nccl-tests:latest-efa"})
    out, _ = override_image(unit, ctx)
    inits = {c["name"]: c["image"] for c in pod_specs(out.workflow)["launcher"]["initContainers"]}
    assert inits == {"fix-ssh-permissions": IMAGE, "unrelated": "public.ecr.aws/hpc-cloud/nccl-tests:latest-efa"}


def test_the_kai_barrier_follows_the_launcher_image():
    unit, ctx = render("mpi-all-reduce", {"image": IMAGE}, gang=GangSpec("kai-scheduler"))
    unit, _ = rewrite_gang(unit, ctx)
    out, _ = override_image(unit, ctx)
    inits = {c["name"]: c["image"] for c in pod_specs(out.workflow)["launcher"]["initContainers"]}
    assert inits == {"fix-ssh-permissions": IMAGE, "wait-for-workers": IMAGE}


def test_nothing_but_images_changes():
    unit, ctx = render("nemotron5-8b", {"image": IMAGE})
    out, _ = override_image(unit, ctx)
    restored = copy.deepcopy(out.workflow)
    restored["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["image"] = "nvcr.io/nvidia/pytorch:25.08-py3"
    spec = pod_specs(restored)["node"]
    spec["containers"][0]["image"] = spec["initContainers"][0]["image"] = "nvcr.io/nvidia/pytorch:25.08-py3"
    assert restored == unit.workflow
    assert out.provenance == unit.provenance


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_input_unit_is_untouched(fixture):
    unit, ctx = render(fixture, {"image": IMAGE})
    snapshot = copy.deepcopy(unit)
    override_image(unit, ctx)
    assert unit == snapshot
