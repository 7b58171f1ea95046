"""The planner gives the same plan as before on seeded random clusters (stored expected outcomes).

Each case is a cluster and a Workflow drawn from a seeded ``random.Random``: nodes of uneven
racks (some without the rack label), cordoned nodes, nodes short of GPUs, a minority GPU
architecture, a second platform now and then, and Workflows of every grouping (name order,
topology packing, strict domains, both diagnose planners, Unpinned) and job size. Its outcome (the
whole plan as plain data, or the error's reason, message and exclusions) is hashed, and the hashes
were written by the planner as it stood before the planner was made faster
(``tests/fixtures/plan/seeded_plans.json``). A difference prints the case and the new outcome.

``python tests/compiler/plan/test_planner_seeded.py --write`` rewrites the file: only ever for a deliberate change
of what a plan is, never to make this test pass after a speed-up.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import Plan, PlanError, plan_workflow

EXPECTED = Path(__file__).resolve().parents[2] / "fixtures" / "plan" / "seeded_plans.json"
#: small clusters for breadth, then a few large ones where the topology packing does real work
SMALL_CASES = 400
LARGE_CASES = 12

PRODUCTS = ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200", "NVIDIA-A100-SXM4-80GB")


def _cluster(rng: random.Random, count: int) -> list[dict[str, Any]]:
    racks = [f"r{i:02d}" for i in range(rng.randint(1, max(1, count // 3)))]
    weights = [rng.randint(1, 6) for _ in racks]
    minority = rng.random() < 0.2
    other_platform = rng.random() < 0.05
    unlabelled = 0.1 if rng.random() < 0.15 else 0.0
    nodes = []
    order = list(range(count))
    rng.shuffle(order)
    for i in order:
        name = f"{rng.choice(('gpu', 'node', 'dgx'))}-{i:04d}"
        labels = {"kubernetes.io/hostname": name}
        if rng.random() < 0.97:
            labels["nvidia.com/gpu.present"] = "true"
        product = rng.choice(PRODUCTS) if minority else PRODUCTS[0]
        if rng.random() < 0.95:
            labels["nvidia.com/gpu.product"] = product
        if rng.random() >= unlabelled:
            labels["rack"] = rng.choices(racks, weights)[0]
        if rng.random() < 0.5:
            labels["zone"] = rng.choice(("z1", "z2"))
        spec: dict[str, Any] = {}
        if rng.random() < 0.06:
            spec["unschedulable"] = True
        if other_platform and rng.random() < 0.1:
            spec["providerID"] = f"aws:///us-east-1a/i-{i:08x}"
        status: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.85:
            status["allocatable"] = {"nvidia.com/gpu": "8"}
        elif roll < 0.93:
            status["allocatable"] = {"nvidia.com/gpu": rng.choice(("4", "2"))}
        nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec, "status": status})
    return nodes


def _workflow(rng: random.Random, count: int) -> dict[str, Any]:
    trainer: dict[str, Any] = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": rng.choice((8, 8, 8, 4))}}}
    size = rng.choice((None, 1, 2, 3, 4, 5, 8, 16, max(1, count // 2), max(1, count // 3), count + 1))
    if size is not None:
        trainer["numNodes"] = size
    if rng.random() < 0.1:
        trainer["env"] = [{"name": "NCCL_MNNVL_ENABLE", "value": "1"}]
    orchestration: dict[str, Any] = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}
    annotations: dict[str, str] = {}
    mode = rng.choice(("name", "topology", "topology", "strict", "diagnose", "unpinned"))
    if mode in ("topology", "strict"):
        orchestration["topology"] = {"topologyKey": "rack", "strictDomain": mode == "strict"}
    elif mode == "diagnose":
        orchestration["diagnose"] = {"minGroupSize": rng.choice((1, 2, 3))}
        if rng.random() < 0.6:
            orchestration["diagnose"]["topologyKey"] = rng.choice(("rack", "zone"))
        annotations["nvcre.nvidia.com/diagnose-planner"] = rng.choice(("adaptive", "baseline"))
    elif mode == "unpinned":
        orchestration["placement"] = "Unpinned"
        if rng.random() < 0.5:
            orchestration["topology"] = {"topologyKey": "rack"}
    if rng.random() < 0.15:
        orchestration["target"]["matchExpressions"] = [{"key": "zone", "operator": rng.choice(("In", "NotIn")), "values": ["z1"]}]
    if rng.random() < 0.1:
        orchestration["target"]["taintSelectors"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    if rng.random() < 0.1:
        orchestration["iterations"] = rng.randint(1, 3)
    metadata: dict[str, Any] = {
        "name": "seeded-communication-nccl-a-00000",
        "namespace": "ns",
        "uid": "00000000-0000-4000-8000-000000000001",
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": metadata,
        "spec": {
            "jobTemplate": {
                "spec": {"workload": {"trainJob": {"runtimeRef": {"kind": "TrainingRuntime", "name": "rt"}, "trainer": trainer}}}
            },
            "orchestration": orchestration,
        },
    }


def case(index: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The cluster and Workflow of case ``index`` (the same on every run and Python version)."""
    rng = random.Random(f"plan-seeded-{index}")
    count = rng.randint(1, 40) if index < SMALL_CASES else rng.randint(300, 1500)
    return _cluster(rng, count), _workflow(rng, count)


def _plan_data(plan: Plan) -> dict[str, Any]:
    data = plan.as_dict()
    data["groupFlags"] = [[g.name, g.overflow, g.loopback, g.no_nvl] for g in plan.groups]
    data["status"] = plan.as_status()
    data["workflowSpec"] = plan.workflow_spec
    return data


def outcome(index: int) -> dict[str, Any]:
    """What planning case ``index`` gives, as plain data."""
    nodes, workflow = case(index)
    try:
        plan = plan_workflow(workflow, facts_from_documents(nodes))
    except PlanError as exc:
        return {"error": exc.reason, "message": exc.message, "excluded": list(exc.excluded_nodes), "why": exc.exclusion_reason}
    except CompileError as exc:
        return {"compileError": [d.render() for d in exc.errors]}
    return {"plan": _plan_data(plan)}


def digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _all_indexes() -> list[int]:
    return list(range(SMALL_CASES + LARGE_CASES))


def _expected() -> dict[str, str]:
    return dict(json.loads(EXPECTED.read_text(encoding="utf-8"))["digests"])


@pytest.mark.parametrize("chunk", range(8))
def test_plans_equal_the_stored_outcomes(chunk: int) -> None:
    expected = _expected()
    assert len(expected) == SMALL_CASES + LARGE_CASES
    for index in _all_indexes()[chunk::8]:
        got = outcome(index)
        assert digest(got) == expected[str(index)], f"case {index} plans differently now: {json.dumps(got, sort_keys=True)[:4000]}"


def test_the_cases_cover_every_grouping_and_failure() -> None:
    kinds: set[str] = set()
    for index in range(0, SMALL_CASES, 3):
        got = outcome(index)
        if "plan" in got:
            plan = got["plan"]
            kinds.add("diagnose" if "diagnose" in plan else plan["placement"])
            if any(g.get("overflow") for g in plan["groups"]):
                kinds.add("overflow")
            if any(g.get("domainNodeCounts") for g in plan["groups"]):
                kinds.add("multi-domain")
        else:
            kinds.add(got.get("error", "compile"))
    assert {"Pinned", "Unpinned", "diagnose", "overflow", "multi-domain", "PartitionError"} <= kinds, kinds


def _write() -> None:
    digests = {str(i): digest(outcome(i)) for i in _all_indexes()}
    EXPECTED.parent.mkdir(parents=True, exist_ok=True)
    EXPECTED.write_text(json.dumps({"cases": len(digests), "digests": digests}, indent=0, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/compiler/plan/test_planner_seeded.py --write")
    _write()
