"""expand_certification / expand_workloadrun: the render, placed in the source's namespace and owned by it."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand import expand_certification, expand_workloadrun
from nvcre.compiler.render import render_certification
from nvcre.compiler.workloadrun import render_workloadrun

CERT = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {
        "name": "gold",
        "namespace": "burn",
        "uid": "cafe0000-0000-4000-8000-000000000001",
        "resourceVersion": "7",
        "creationTimestamp": "2026-12-01T10:00:00Z",
        "generation": 1,
    },
    "spec": {
        "target": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "categories": [
            {"domain": "communication", "variant": "nccl-all-reduce"},
            {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "intra-node"}},
        ],
    },
    "status": {"phase": "InProgress"},
}


def test_certification_workflows_are_the_render_plus_namespace_owner_and_scale() -> None:
    workflows = expand_certification(CERT, None, check_purity=True)
    bare = {k: v for k, v in CERT.items() if k != "status"}
    bare["metadata"] = {"name": "gold"}
    rendered = render_certification(bare).workflows
    assert len(workflows) == 2
    for got, want, scale in zip(workflows, rendered, ("full-scale", "intra-node")):
        assert got["spec"] == want["spec"]
        assert got["metadata"]["name"] == want["metadata"]["name"]
        assert got["metadata"]["labels"] == want["metadata"]["labels"]
        assert got["metadata"]["namespace"] == "burn"
        assert got["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "nvcre.nvidia.com/v1alpha1",
                "kind": "Certification",
                "name": "gold",
                "uid": "cafe0000-0000-4000-8000-000000000001",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert got["metadata"]["annotations"]["nvcre.nvidia.com/requested-test-scale"] == scale


def test_a_source_without_uid_or_namespace_is_refused() -> None:
    for field in ("uid", "namespace"):
        document = copy.deepcopy(CERT)
        del document["metadata"][field]
        with pytest.raises(CompileError) as caught:
            expand_certification(document, None)
        assert caught.value.diagnostics[0].path == f"metadata.{field}"


def test_workloadrun_workflow_omits_the_scale_under_unpinned() -> None:
    run = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "WorkloadRun",
        "metadata": {"name": "adhoc", "namespace": "burn", "uid": "beef0000-0000-4000-8000-000000000002"},
        "spec": {
            "image": "nvcr.io/nvidia/pytorch:26.01-py3",
            "numNodes": 2,
            "target": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "framework": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun"}},
            "orchestration": {"placement": "Unpinned"},
        },
    }
    workflow = expand_workloadrun(run, None, check_purity=True)
    assert workflow["metadata"]["ownerReferences"][0]["kind"] == "WorkloadRun"
    assert "nvcre.nvidia.com/requested-test-scale" not in workflow["metadata"].get("annotations", {})
    bare = {**run, "metadata": {"name": "adhoc"}}
    assert workflow["spec"] == render_workloadrun(bare).workflows[0]["spec"]
