"""``workloadrun render --dry-run`` names the platform and architecture it detected, as NVCRE's render does.

NVCRE's ``runWorkloadRunRenderDryRun`` writes ``nvcrectl.nvidia.com/detected-platform`` and
``nvcrectl.nvidia.com/detected-gpu-architecture`` from the nodes it discovered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"


def test_a_dry_run_names_the_detected_platform_and_architecture(simcluster, sim_namespace):
    simcluster.add_nodes(profile="h100", count=2, platform="aws", prefix=f"{sim_namespace}-named")
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    done = subprocess.run(
        [NVCRECTL, "workloadrun", "render", "examples/workloadrun-torch.yaml", "--dry-run", "-o", "json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    annotations = json.loads(done.stdout)["metadata"]["annotations"]
    facts = json.loads(annotations["nvcre.nvidia.com/render-facts"])
    # Other tests may have added nodes to the shared cluster: the annotations name what was decided.
    assert facts["platform"]["source"] == facts["gpuArchitecture"]["source"] == "detected"
    assert annotations["nvcrectl.nvidia.com/detected-platform"] == facts["platform"]["value"]
    assert annotations["nvcrectl.nvidia.com/detected-gpu-architecture"] == facts["gpuArchitecture"]["value"]
