"""plan_workflow: node discovery, filters, sizing, placement and grouping over live facts."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand import job_name
from nvcre.compiler.expand.dependencies import dependency_suffix
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import Plan, PlanError, plan_workflow

H100 = "NVIDIA-H100-80GB-HBM3"
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def node(
    name: str,
    *,
    product: str | None = H100,
    gpus: Any = "8",
    provider: str = "",
    cordoned: bool = False,
    present: bool = True,
    **labels: str,
) -> dict[str, Any]:
    meta_labels = {k.replace("__", "/").replace("_", "."): v for k, v in labels.items()}
    if present:
        meta_labels["nvidia.com/gpu.present"] = "true"
    if product:
        meta_labels["nvidia.com/gpu.product"] = product
    spec: dict[str, Any] = {"providerID": provider} if provider else {}
    if cordoned:
        spec["unschedulable"] = True
        spec["taints"] = [CORDON]
    status = {"allocatable": {"nvidia.com/gpu": gpus}} if gpus is not None else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": meta_labels}, "spec": spec, "status": status}


def facts(*nodes: dict[str, Any]):
    return facts_from_documents(list(nodes))


def workflow(num_nodes: int | None = None, *, gpus: int = 8, target: dict[str, Any] | None = None, **orchestration: Any) -> dict[str, Any]:
    trainer: dict[str, Any] = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": gpus}}}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "cert-communication-nccl-a-21481", "namespace": "ns", "uid": "0123456789abcdef"},
        "spec": {
            "jobTemplate": {
                "spec": {"workload": {"trainJob": {"runtimeRef": {"kind": "TrainingRuntime", "name": "rt"}, "trainer": trainer}}}
            },
            "orchestration": {
                "target": target if target is not None else {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                **orchestration,
            },
        },
    }


def groups(plan: Plan) -> list[tuple[str, tuple[str, ...]]]:
    return [(g.name, g.nodes) for g in plan.groups]


def test_full_scale_is_one_group_of_every_node() -> None:
    plan = plan_workflow(workflow(), facts(*(node(f"n{i}") for i in range(4))))
    assert groups(plan) == [("group-0", ("n0", "n1", "n2", "n3"))]
    assert plan.nodes_per_job == 4
    assert plan.message == "Discovered 4 nodes, partitioned into 1 groups (4 nodes/job)"
    assert plan.gpu_products == (H100,) and plan.platform == "onprem" and plan.gpu_architecture == "h100"
    assert plan.events == () and plan.excluded_nodes == () and not plan.health_monitor_cleared


def test_target_filters_are_anded_and_non_gpu_nodes_never_count() -> None:
    cluster = facts(node("a", pool="x"), node("b", pool="y"), node("c", pool="x"), node("cpu", product=None, present=False, pool="x"))
    target = {
        "nodeSelector": {"pool": "x"},
        "matchExpressions": [{"key": "pool", "operator": "In", "values": ["x", "y"]}],
        "nodeNames": ["a", "b", "cpu"],
    }
    assert plan_workflow(workflow(target=target), cluster).target_nodes == ("a",)


def test_cordoned_nodes_are_excluded_with_an_event_and_a_reason() -> None:
    plan = plan_workflow(workflow(), facts(node("a"), node("b", cordoned=True), node("c", cordoned=True)))
    assert plan.target_nodes == ("a",)
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "CordonedNodesExcluded", "Excluded 2 cordoned node(s) from certification: b, c")
    ]
    assert plan.excluded_nodes == ("b", "c")
    assert plan.exclusion_reason == "2 node(s) matched the target but were unschedulable (cordoned): b, c"


def test_selecting_the_cordon_taint_opts_cordoned_nodes_in_and_clears_the_monitor() -> None:
    target = {"taintSelectors": [CORDON]}
    plan = plan_workflow(workflow(target=target), facts(node("a"), node("b", cordoned=True)))
    assert plan.target_nodes == ("b",)  # taint selectors are an AND: the uncordoned node is not selected
    assert plan.health_monitor_cleared and plan.events == ()


def test_minority_gpu_architecture_is_filtered_out() -> None:
    cluster = facts(node("a"), node("b"), node("c", product="NVIDIA-A100-SXM4-80GB"), node("d", product=None))
    plan = plan_workflow(workflow(), cluster)
    assert plan.target_nodes == ("a", "b")
    assert plan.events[0].reason == "HeterogeneousGPU"
    assert plan.events[0].message == "Filtered 2/4 nodes to primary GPU architecture h100; excluded: c, d"
    assert plan.exclusion_reason == "target set has more than one GPU architecture; certified h100 only"


def test_gpu_product_from_resource_slices_votes_but_is_not_an_affinity_label() -> None:
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "b-gpu"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "b",
            "pool": {"name": "b", "generation": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"}}}
                for i in range(8)
            ],
        },
    }
    plan = plan_workflow(workflow(), facts_from_documents([node("a"), node("b", product=None), slice_]))
    assert plan.target_nodes == ("a", "b")
    assert plan.gpu_products == (H100,)


def test_under_capacity_nodes_are_dropped_and_unknown_capacity_is_kept() -> None:
    cluster = facts(node("a"), node("b", gpus="4"), node("c", gpus=None), node("d", gpus="2"))
    plan = plan_workflow(workflow(), cluster)
    assert plan.target_nodes == ("a", "c")
    assert plan.events[-1].message == "Excluded 2 node(s) with fewer than 8 allocatable nvidia.com/gpu: b has 4, d has 2"
    assert plan.excluded_nodes == ("b", "d")
    assert plan.exclusion_reason.endswith("the workload requests 8 nvidia.com/gpu per node: b has 4, d has 2")


A100 = "NVIDIA-A100-SXM4-40GB"
#: GPU Feature Discovery's product label under the MIG ``single`` strategy (seven 1g.5gb devices)
MIG_SINGLE = "A100-SXM4-40GB-MIG-1g.5gb"


def test_a_node_whose_gpus_are_mig_devices_is_dropped_whatever_the_request() -> None:
    # Its allocatable nvidia.com/gpu (7) counts MIG devices: not enough for 8 whole GPUs, and not
    # whole GPUs for a request of 1 either.
    for gpus in (8, 1):
        plan = plan_workflow(workflow(gpus=gpus), facts(node("a", product=A100), node("m", product=MIG_SINGLE, gpus="7")))
        assert plan.target_nodes == ("a",)
        assert plan.excluded_nodes == ("m",)
        assert plan.events[-1].reason == "MIGDevicesNotGPUs"
        assert plan.events[-1].message == (
            "Excluded 1 node(s) matched the target but their nvidia.com/gpu are MIG devices, not whole GPUs: m; "
            "the workload needs whole GPUs"
        )
        assert plan.exclusion_reason == "1 node(s) matched the target but their nvidia.com/gpu are MIG devices, not whole GPUs: m"


def test_a_node_of_mig_devices_only_under_the_mixed_strategy_is_dropped() -> None:
    # nvidia.com/gpu 0 beside MIG device resources: every GPU split, none whole to give
    split = node("s", product=A100, gpus="0")
    split["status"]["allocatable"]["nvidia.com/mig-3g.20gb"] = "14"
    plan = plan_workflow(workflow(gpus=1), facts(node("a", product=A100), split, node("r", product=A100, gpus="0")))
    assert plan.target_nodes == ("a", "r")  # r advertises 0 and no MIG device: a device plugin still starting
    assert plan.excluded_nodes == ("s",)
    assert [e.reason for e in plan.events] == ["MIGDevicesNotGPUs"]


def test_a_node_that_offers_its_gpus_only_as_shared_replicas_is_dropped() -> None:
    # nvidia.com/gpu 0 beside nvidia.com/gpu.shared: the device plugin runs and shares every GPU
    # under the renamed resource, so no GPU can be held whole; an advertised 0 alone is still kept
    shared = node("s", product=A100, gpus="0")
    shared["status"]["allocatable"]["nvidia.com/gpu.shared"] = "128"
    emptied = node("e", product=A100, gpus="0")
    emptied["status"]["allocatable"]["nvidia.com/gpu.shared"] = "0"
    plan = plan_workflow(workflow(gpus=1), facts(node("a", product=A100), shared, emptied))
    assert plan.target_nodes == ("a", "e")
    assert plan.excluded_nodes == ("s",)
    assert plan.events[-1].message == "Excluded 1 node(s) with fewer than 1 allocatable nvidia.com/gpu: s has 0"


def test_a_shortfall_caused_by_mig_nodes_names_them_and_the_remedy() -> None:
    cluster = facts(node("a", product=A100), node("m", product=MIG_SINGLE, gpus="7"))
    with pytest.raises(PlanError) as caught:
        plan_workflow(workflow(2, gpus=1), cluster)
    assert caught.value.message == (
        "Not enough schedulable nodes: need 2, found 1. 1 node(s) matched the target but were excluded because their "
        "nvidia.com/gpu are MIG devices, not whole GPUs: m. Set nodesPerJob to 1, or disable MIG on those nodes"
    )
    with pytest.raises(PlanError) as alone:
        plan_workflow(workflow(gpus=1), facts(node("m", product=MIG_SINGLE, gpus="7")))
    assert alone.value.reason == "PartitionError"
    assert (
        alone.value.message
        == "No node can supply the 1 nvidia.com/gpu the workload requests per node; the target's nodes have MIG devices, not whole GPUs"
    )
    assert alone.value.excluded_nodes == ("m",)
    assert [e.reason for e in alone.value.events] == ["MIGDevicesNotGPUs"]


def test_no_capable_node_is_a_partition_error_with_the_exclusion_record() -> None:
    with pytest.raises(PlanError) as caught:
        plan_workflow(workflow(), facts(node("a", gpus="4"), node("b", gpus="2")))
    assert caught.value.reason == "PartitionError"
    assert caught.value.message == "No node can supply the 8 nvidia.com/gpu the workload requests per node; best available is 4"
    assert caught.value.excluded_nodes == ("a", "b")
    assert [e.reason for e in caught.value.events] == ["InsufficientGPUCapacity"]


def test_discovery_failures() -> None:
    with pytest.raises(PlanError, match="NodeDiscoveryError: No target nodes found matching orchestration target"):
        plan_workflow(workflow(), facts(node("cpu", product=None, present=False)))
    with pytest.raises(PlanError, match=r"HeterogeneousPlatform: heterogeneous platforms detected: map\[aws:1 onprem:1\]"):
        plan_workflow(workflow(), facts(node("a", provider="aws:///us-east-1a/i-1"), node("b")))
    with pytest.raises(PlanError, match="NodeDiscoveryError: Node discovery failed: .*operator"):
        plan_workflow(workflow(target={"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["one"]}]}), facts(node("a")))


def test_shortfall_names_the_filters_that_caused_it() -> None:
    cluster = facts(node("a"), node("b", product="NVIDIA-A100-SXM4-80GB"), node("c", gpus="4"))
    with pytest.raises(PlanError) as caught:
        plan_workflow(workflow(3), cluster)
    assert caught.value.message == (
        "Not enough schedulable nodes: need 3, found 1. 1 node(s) matched the target but were excluded for not being GPU "
        "architecture h100: b. 1 node(s) matched the target but were excluded for having fewer than the 8 allocatable "
        "nvidia.com/gpu the workload requests per node: c has 4. Set nodesPerJob to 1, or narrow the target to one "
        "architecture, or lower gpusPerNode"
    )
    with pytest.raises(PlanError, match="^PartitionError: Not enough schedulable nodes: need 3, found 2$"):
        plan_workflow(workflow(3), facts(node("a"), node("b")))


def test_unpinned_runs_one_group_of_exactly_the_asked_size() -> None:
    cluster = facts(*(node(f"n{i}") for i in range(4)))
    plan = plan_workflow(workflow(2, placement="Unpinned", topology={"topologyKey": "rack"}), cluster)
    assert groups(plan) == [("group-0", ())]
    assert plan.message == "Discovered 4 nodes, running 1 unpinned job of 2 nodes (2 target nodes not exercised)"
    assert plan.ignored_topology_key == "rack" and plan.placement == "Unpinned"
    with pytest.raises(PlanError, match="need 5, found 4; Unpinned runs the requested job size exactly"):
        plan_workflow(workflow(5, placement="Unpinned"), cluster)
    with pytest.raises(PlanError, match="Unpinned requires an explicit job size"):
        plan_workflow(workflow(placement="Unpinned"), cluster)
    with pytest.raises(PlanError, match="incompatible with orchestration.diagnose"):
        plan_workflow(workflow(2, placement="Unpinned", diagnose={"minGroupSize": 2}), cluster)
    with pytest.raises(PlanError, match="incompatible with orchestration.topology.strictDomain"):
        plan_workflow(workflow(2, placement="Unpinned", topology={"topologyKey": "rack", "strictDomain": True}), cluster)


def test_intra_rack_groups_follow_the_cliques() -> None:
    cluster = facts(node("a", nvidia_com__gpu_clique="c1"), node("b", nvidia_com__gpu_clique="c2"), node("c", nvidia_com__gpu_clique="c1"))
    plan = plan_workflow(workflow(topology={"topologyKey": "nvidia.com/gpu.clique", "strictDomain": True}), cluster)
    assert [(g.name, g.nodes, g.domains) for g in plan.groups] == [("group-0", ("a", "c"), ("c1",)), ("group-1", ("b",), ("c2",))]
    with pytest.raises(PlanError, match='Failed to partition nodes: node "a" missing topology label "rack"'):
        plan_workflow(workflow(topology={"topologyKey": "rack"}), cluster)


def test_diagnose_plans_the_adaptive_local_screen_by_default() -> None:
    cluster = facts(*(node(f"n{i}", nvidia_com__gpu_clique=f"c{i % 2}") for i in range(4)))
    plan = plan_workflow(workflow(diagnose={"minGroupSize": 1, "topologyKey": "nvidia.com/gpu.clique"}), cluster)
    assert [(g.name, g.nodes, g.loopback, g.domains) for g in plan.groups] == [
        (f"local-{i}", (f"n{i}",), True, (f"c{i % 2}",)) for i in range(4)
    ]
    assert plan.diagnose is not None and plan.diagnose.planner == "adaptive"
    assert (plan.diagnose.stage, plan.diagnose.round_stage) == ("intra-screening", "local-screen")
    assert plan.nodes_per_job == 1
    assert job_name("wf", plan, plan.groups[0], 1) == "wf-local-0-iter-1"


def test_an_unknown_diagnose_planner_is_refused_at_its_annotation() -> None:
    document = workflow(diagnose={"minGroupSize": 1})
    document["metadata"]["annotations"] = {"nvcre.nvidia.com/diagnose-planner": "magic"}
    with pytest.raises(CompileError, match=r"diagnose-planner\]: unknown diagnose planner 'magic'"):
        plan_workflow(document, facts(node("n0"), node("n1")))


def test_diagnose_plans_the_screening_round_under_the_baseline() -> None:
    cluster = facts(*(node(f"n{i}", nvidia_com__gpu_clique=f"c{i % 2}") for i in range(4)))
    document = workflow(diagnose={"minGroupSize": 1, "topologyKey": "nvidia.com/gpu.clique"})
    document["metadata"]["annotations"] = {"nvcre.nvidia.com/diagnose-planner": "baseline"}
    plan = plan_workflow(document, cluster)
    assert [(g.name, g.nodes) for g in plan.groups] == [("screen-0", ("n0", "n2")), ("screen-1", ("n1", "n3"))]
    assert plan.diagnose is not None and plan.diagnose.stage == "intra-screening" and plan.diagnose.min_group_size == 1
    assert plan.nodes_per_job == 2
    assert job_name("wf", plan, plan.groups[0], 1) == "wf-screen-0-iter-1"


def test_overflow_leftovers_are_reported_and_inputs_are_untouched() -> None:
    document = workflow(2)
    cluster = facts(*(node(f"n{i}") for i in range(5)))
    before = (copy.deepcopy(document), copy.deepcopy(cluster.nodes))
    plan = plan_workflow(document, cluster)
    assert groups(plan)[-1] == ("group-2-overflow", ("n3", "n4"))
    assert plan.leftover_nodes == ("n4",)
    assert (document, cluster.nodes) == before


def test_status_projection_keeps_nodes_as_a_list() -> None:
    plan = plan_workflow(workflow(2, placement="Unpinned"), facts(node("a"), node("b")))
    status = plan.as_status()
    assert status["groups"] == [{"name": "group-0", "nodes": [], "phase": "Pending"}]
    assert status["totalNodes"] == 2 and status["totalGroups"] == 1 and status["placement"] == "Unpinned"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda w: w["spec"].pop("jobTemplate"), "spec.jobTemplate"),
        (lambda w: w["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"].update(numNodes="2"), "trainer.numNodes"),
        (lambda w: w["spec"]["orchestration"].update(placement="Sometimes"), "spec.orchestration.placement"),
        (lambda w: w["metadata"].pop("name"), "metadata.name"),
        (lambda w: w["spec"].update(overrides="everything"), "spec.overrides"),
    ],
)
def test_malformed_workflows_fail_with_the_field_path(mutate, path) -> None:
    document = workflow()
    mutate(document)
    with pytest.raises(CompileError) as caught:
        plan_workflow(document, facts(node("a")))
    assert path in caught.value.diagnostics[0].path


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=30),
    per_job=st.integers(min_value=0, max_value=8),
    cordoned=st.sets(st.integers(min_value=0, max_value=29), max_size=6),
    short=st.sets(st.integers(min_value=0, max_value=29), max_size=6),
    iterations=st.integers(min_value=1, max_value=3),
    name=st.from_regex(r"[a-z][a-z0-9-]{0,29}[a-z0-9]", fullmatch=True),
)
def test_every_target_node_lands_in_a_group_within_size_and_names_are_valid(count, per_job, cordoned, short, iterations, name) -> None:
    cluster = facts(*(node(f"node-{i:03d}", cordoned=i in cordoned, gpus="4" if i in short else "8") for i in range(count)))
    document = workflow(per_job or None, iterations=iterations)
    document["metadata"]["name"] = name
    try:
        plan = plan_workflow(document, cluster)
    except PlanError as exc:
        assert exc.reason in ("NodeDiscoveryError", "PartitionError")
        return
    assert {n for g in plan.groups for n in g.nodes} == set(plan.target_nodes)
    assert all(len(g.nodes) <= plan.nodes_per_job for g in plan.groups)
    assert set(plan.excluded_nodes).isdisjoint(plan.target_nodes)
    for group in plan.groups:
        for iteration in range(1, iterations + 1):
            jname = job_name(name, plan, group, iteration)
            assert DNS_LABEL.match(jname) and len(jname) <= 35
            assert len(f"{jname}-workload") <= 44
            dep = f"some-runtime{dependency_suffix(name, plan.total_groups, plan.iterations, group.name, iteration)}"
            assert DNS_LABEL.match(dep) and len(dep) <= 63
