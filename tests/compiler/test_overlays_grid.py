"""Every platform x GPU architecture x catalog entry, rendered: rules no single overlay test can see.

* no MPI command line forwards a variable twice, and no trainer or container env repeats a name;
* ``NCCL_NVLS_ENABLE=1`` reaches a workload only on the platforms whose profiles keep it with a
  recorded reason (Azure H100, AWS GB300, Nscale); everywhere else NCCL's own probe decides;
* no overlay changes the output for a platform or architecture it does not name: rendering with
  only the overlays whose clauses name the pair gives the same bytes as rendering with all of them;
* no pair's render fails.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import pytest

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.mpi_args import forwarded_names
from nvcre.compiler.overlays import OverlaySet, load_overlays
from nvcre.compiler.render import render_certification

ARCHS = sorted(load_catalog().gpu_defaults.architectures)
PAIRS = list(itertools.product(platform_names(), ARCHS))
NVLS_ALLOWED = {("azure", "h100"), ("aws", "gb300"), ("nscale", "b200"), ("nscale", "gb300")}


def _certification() -> dict:
    categories = []
    for key in load_catalog().keys():
        domain, variant = key.split("/")
        categories.append({"domain": domain, "variant": variant, "options": {"nodesPerJob": 8}})
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "grid"},
        "spec": {"target": {}, "categories": categories, "rdmaDeviceAccess": "hostPath"},
    }


@lru_cache(maxsize=None)
def _render(platform: str, arch: str, only_named: bool) -> tuple[str, tuple]:
    overlays = load_overlays()
    if only_named:
        overlays = OverlaySet(
            root=overlays.root,
            overlays=tuple(
                o
                for o in overlays.overlays
                if (o.when.platform is None or o.when.platform.matches(platform))
                and (o.when.gpu_architecture is None or o.when.gpu_architecture.matches(arch))
            ),
        )
    rendered = render_certification(_certification(), platform=platform, gpu_arch=arch, overlays=overlays)
    return dump_yaml_stream(rendered.workflows), tuple(rendered.workflows)


def _envs(workflow: dict):
    """(where, env list) for the trainer and every container of the runtime."""
    trainer = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]
    yield "trainer", trainer.get("env") or []
    for dep in workflow["spec"].get("dependencies") or []:
        if dep.get("kind") != "TrainingRuntime":
            continue
        for job in dep["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = job["template"]["spec"]["template"]["spec"]
            for container in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                yield f"{job['name']}/{container['name']}", container.get("env") or []


@pytest.mark.parametrize("platform, arch", PAIRS, ids=[f"{p}-{a}" for p, a in PAIRS])
def test_pair_renders_without_duplicates_and_with_nvls_only_where_kept(platform: str, arch: str) -> None:
    _, workflows = _render(platform, arch, False)
    for workflow in workflows:
        variant = workflow["metadata"]["labels"]["nvcre.nvidia.com/category-variant"]
        args = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"].get("args") or []
        names = forwarded_names(args)
        assert len(names) == len(set(names)), f"{variant}: forwarded twice: {sorted(n for n in names if names.count(n) > 1)}"
        values = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if "=" in a}
        nvls = [values.get("NCCL_NVLS_ENABLE")]
        for where, env in _envs(workflow):
            env_names = [e["name"] for e in env]
            assert len(env_names) == len(set(env_names)), f"{variant} {where}: env repeats a name"
            nvls += [e.get("value") for e in env if e["name"] == "NCCL_NVLS_ENABLE"]
        if (platform, arch) not in NVLS_ALLOWED:
            assert "1" not in nvls, f"{variant} on {platform}/{arch} forces NCCL_NVLS_ENABLE=1"


@pytest.mark.parametrize("platform, arch", PAIRS, ids=[f"{p}-{a}" for p, a in PAIRS])
def test_overlays_that_do_not_name_a_pair_do_not_touch_it(platform: str, arch: str) -> None:
    assert _render(platform, arch, True)[0] == _render(platform, arch, False)[0]


def test_nvls_is_kept_where_the_profiles_record_why() -> None:
    for platform, arch in sorted(NVLS_ALLOWED):
        _, workflows = _render(platform, arch, False)
        all_reduce = next(w for w in workflows if w["metadata"]["labels"]["nvcre.nvidia.com/category-variant"] == "nccl-all-reduce")
        args = all_reduce["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["args"]
        assert "NCCL_NVLS_ENABLE=1" in args, f"{platform}/{arch}"
