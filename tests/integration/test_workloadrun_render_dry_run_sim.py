"""``workloadrun render --dry-run``: detection from the live (simulated) cluster, as NVCRE's render does.

NVCRE's ``workloadrun render`` takes ``--dry-run --kubeconfig --context`` and discovers the nodes;
ours reads the same facts ``certification render --dry-run`` reads and prints one Workflow object
for ``-o json``.
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


def test_workloadrun_render_dry_run_detects_from_the_live_cluster(simcluster, sim_namespace):
    simcluster.add_nodes(profile="h100", count=2, platform="aws", prefix=f"{sim_namespace}-wr")
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    args = [NVCRECTL, "workloadrun", "render", "examples/workloadrun-torch.yaml"]
    live = subprocess.run([*args, "--dry-run", "-o", "json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert live.returncode == 0, live.stderr
    assert "Read " in live.stderr and " nodes and " in live.stderr
    workflow = json.loads(live.stdout)
    assert isinstance(workflow, dict) and workflow["kind"] == "Workflow"
    facts = json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/render-facts"])
    # Other tests may have added nodes to the shared cluster: what matters is that the nodes decided.
    assert facts["platform"]["source"] == facts["gpuArchitecture"]["source"] == "detected"
    explicit = subprocess.run(
        [*args, "--dry-run", "--kubeconfig", str(simcluster.kubeconfig), "-o", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert explicit.returncode == 0 and json.loads(explicit.stdout) == workflow
