"""``workloadrun render`` says what it rendered for, with the annotations NVCRE's render writes.

NVCRE's ``runWorkloadRunRender`` and ``runWorkloadRunRenderDryRun`` (``pkg/workloadrun/workloadrun.go``
in ``NVIDIA/cluster-readiness-engine``) annotate the printed Workflow with
``nvcrectl.nvidia.com/detected-gpu-architecture`` always, and with
``nvcrectl.nvidia.com/detected-platform`` when ``--platform`` names the platform or ``--dry-run``
detected it; an offline render without ``--platform`` names no platform. Ours treats a platform
detected from a facts file as detected. ``tests/integration/test_workloadrun_render_annotations_sim.py``
checks ``--dry-run`` against a cluster.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"
EXAMPLE = "examples/workloadrun-torch.yaml"
FACTS = str(REPO / "tests" / "fixtures" / "facts" / "aws-h100-2nodes.yaml")
ARCH = "nvcrectl.nvidia.com/detected-gpu-architecture"
PLATFORM = "nvcrectl.nvidia.com/detected-platform"


def rendered(*flags: str) -> dict:
    """The Workflow ``nvcrectl workloadrun render`` prints for the example with ``flags``."""
    done = subprocess.run(
        [NVCRECTL, "workloadrun", "render", EXAMPLE, *flags], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "json" in flags else yaml.safe_load(done.stdout)


def stamped(**inputs: Any) -> dict:
    """The same Workflow in process: the render, then the command's stamping."""
    from nvcre.cli.workflow import stamp_detected
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.workloadrun import render_workloadrun

    document = yaml.safe_load((REPO / EXAMPLE).read_text(encoding="utf-8"))
    facts = load_facts(Path(inputs.pop("facts"))) if "facts" in inputs else None
    (workflow,) = stamp_detected(render_workloadrun(document, facts=facts, **inputs)).workflows
    return dict(workflow)


def ours(workflow: dict) -> dict[str, str]:
    return {k: v for k, v in workflow["metadata"]["annotations"].items() if k.startswith("nvcrectl.nvidia.com/")}


@pytest.mark.parametrize("output", [(), ("-o", "json")], ids=["yaml", "json"])
def test_platform_and_architecture_given_are_both_annotated(output: tuple[str, ...]) -> None:
    assert ours(rendered("--platform", "aws", "--gpu-arch", "h100", *output)) == {ARCH: "h100", PLATFORM: "aws"}


def test_a_defaulted_platform_is_not_named_but_the_architecture_is() -> None:
    assert ours(stamped(gpu_arch="gb200")) == {ARCH: "gb200"}


def test_a_platform_detected_from_cluster_objects_is_named() -> None:
    assert ours(stamped(facts=FACTS)) == {ARCH: "h100", PLATFORM: "aws"}


def test_the_render_facts_of_ours_stay_beside_nvcres_annotations() -> None:
    annotations = stamped(platform="oci", gpu_arch="gb200")["metadata"]["annotations"]
    facts = json.loads(annotations["nvcre.nvidia.com/render-facts"])
    assert (facts["platform"]["value"], facts["gpuArchitecture"]["value"]) == (annotations[PLATFORM], annotations[ARCH])


def test_the_stamp_leaves_the_render_it_was_given_alone() -> None:
    from nvcre.cli.workflow import stamp_detected
    from nvcre.compiler.workloadrun import render_workloadrun

    document = yaml.safe_load((REPO / EXAMPLE).read_text(encoding="utf-8"))
    plain = render_workloadrun(document, platform="aws", gpu_arch="h100")
    before = json.dumps(plain.workflows, sort_keys=True)
    stamp_detected(plain)
    assert json.dumps(plain.workflows, sort_keys=True) == before and not ours(plain.workflows[0])


def test_the_certification_render_is_not_annotated() -> None:
    done = subprocess.run(
        [NVCRECTL, "certification", "render", "examples/certification.yaml", "--platform", "aws", "--gpu-arch", "h100", "-o", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not [w for w in json.loads(done.stdout) if ours(w)]
