"""Target node selection: selectors, expressions, names, taints, cordons, gpu.present."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nvcre.compiler.detect import select_target_nodes
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts, load_facts, name_of

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}


def node(name, *, gpu=True, labels=None, taints=None, cordoned=False, gpus=None):
    all_labels = {"nvidia.com/gpu.present": "true"} if gpu else {}
    all_labels.update(labels or {})
    spec = {"taints": taints or []}
    if cordoned:
        spec["unschedulable"] = True
    status = {"allocatable": {"nvidia.com/gpu": str(gpus)}} if gpus is not None else {}
    return {"kind": "Node", "metadata": {"name": name, "labels": all_labels}, "spec": spec, "status": status}


def names(result):
    return [name_of(n) for n in result[0]]


def test_empty_target_selects_every_gpu_node_sorted():
    facts = ClusterFacts(nodes=(node("c"), node("a"), node("b")))
    assert names(select_target_nodes(facts, {})) == ["a", "b", "c"]
    assert names(select_target_nodes(facts, None)) == ["a", "b", "c"]


def test_node_selector_requires_exact_values():
    facts = ClusterFacts(nodes=(node("a", labels={"pool": "x"}), node("b", labels={"pool": "y"}), node("c")))
    nodes, excluded, diags = select_target_nodes(facts, {"nodeSelector": {"pool": "x"}})
    assert [name_of(n) for n in nodes] == ["a"]
    assert excluded == [] and diags == []  # unmatched nodes were never targeted


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "pool", "operator": "In", "values": ["x", "y"]}, ["a", "b"]),
        ({"key": "pool", "operator": "NotIn", "values": ["x"]}, ["b", "c"]),  # NotIn matches nodes without the label
        ({"key": "pool", "operator": "Exists"}, ["a", "b"]),
        ({"key": "pool", "operator": "DoesNotExist"}, ["c"]),
    ],
)
def test_match_expressions(expression, expected):
    facts = ClusterFacts(nodes=(node("a", labels={"pool": "x"}), node("b", labels={"pool": "y"}), node("c")))
    assert names(select_target_nodes(facts, {"matchExpressions": [expression]})) == expected


GT_LT_NODES = (
    node("four", labels={"gpu.count": "4"}),
    node("eight", labels={"gpu.count": "8"}),
    node("padded", labels={"gpu.count": "0016"}),
    node("negative", labels={"gpu.count": "-2"}),
    node("text", labels={"gpu.count": "eight"}),
    node("huge", labels={"gpu.count": "9223372036854775808"}),
    node("unlabelled"),
)


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        ("Gt", "4", ["eight", "padded"]),  # strictly greater; "0016" reads as 16
        ("Gt", "-3", ["eight", "four", "negative", "padded"]),
        ("Lt", "8", ["four", "negative"]),
        ("Lt", "-2", []),
        ("Gt", "9223372036854775807", []),  # a label past int64 is not an integer to Kubernetes either
        ("Lt", "-9223372036854775808", []),
    ],
)
def test_gt_and_lt_compare_the_label_as_an_integer(operator, value, expected):
    """Kubernetes' node affinity rule: the label must be present and parse as an int64; absent or
    non-integer labels never match."""
    target = {"matchExpressions": [{"key": "gpu.count", "operator": operator, "values": [value]}]}
    nodes, excluded, diags = select_target_nodes(ClusterFacts(nodes=GT_LT_NODES), target)
    assert sorted(name_of(n) for n in nodes) == expected
    assert excluded == [] and diags == []


def test_a_node_named_in_node_names_that_fails_gt_is_reported():
    target = {"nodeNames": ["text"], "matchExpressions": [{"key": "gpu.count", "operator": "Gt", "values": ["1"]}]}
    nodes, excluded, [diag] = select_target_nodes(ClusterFacts(nodes=GT_LT_NODES), target)
    assert nodes == () and [e.name for e in excluded] == ["text"]
    assert "does not match matchExpressions[0] (gpu.count Gt 1)" in diag.message


def test_all_filters_are_anded():
    facts = ClusterFacts(
        nodes=(
            node("a", labels={"pool": "x", "rack": "1"}),
            node("b", labels={"pool": "x", "rack": "2"}),
            node("c", labels={"pool": "y", "rack": "1"}),
        )
    )
    target = {"nodeSelector": {"pool": "x"}, "matchExpressions": [{"key": "rack", "operator": "In", "values": ["1"]}]}
    assert names(select_target_nodes(facts, target)) == ["a"]


def test_node_names_keep_the_selector_and_report_named_rejects():
    facts = ClusterFacts(nodes=(node("a", labels={"pool": "x"}), node("b", labels={"pool": "y"}), node("c", labels={"pool": "x"})))
    nodes, excluded, diags = select_target_nodes(facts, {"nodeSelector": {"pool": "x"}, "nodeNames": ["a", "b", "ghost"]})
    assert [name_of(n) for n in nodes] == ["a"]
    assert excluded == [("b", "listed in nodeNames but does not match nodeSelector pool=x")]
    assert [(d.code, d.severity, d.path) for d in diags] == [
        ("TargetNodeNotFound", Severity.WARNING, "spec.target.nodeNames"),
        ("NodeExcluded", Severity.WARNING, "spec.target"),
    ]
    assert diags[0].message == "1 node listed in nodeNames is not in the cluster facts: ghost"


def test_taint_selectors_require_every_taint():
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    arm_taint = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    facts = ClusterFacts(nodes=(node("both", taints=[gpu_taint, arm_taint]), node("gpu", taints=[gpu_taint]), node("none")))
    both = [{"key": "nvidia.com/gpu"}, {"key": "kubernetes.io/arch", "value": "arm64"}]
    assert names(select_target_nodes(facts, {"taintSelectors": both})) == ["both"]
    assert names(select_target_nodes(facts, {"taintSelectors": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]})) == ["both", "gpu"]
    assert names(select_target_nodes(facts, {"taintSelectors": [{"key": "nvidia.com/gpu", "value": "absent"}]})) == []
    assert names(select_target_nodes(facts, {"taintSelectors": [{"key": "nvidia.com/gpu", "effect": "NoExecute"}]})) == []


def test_cordoned_nodes_are_excluded_by_default():
    facts = load_facts(FIXTURES / "onprem-gb200-rdma.yaml")
    nodes, excluded, diags = select_target_nodes(facts, {})
    assert [name_of(n) for n in nodes] == ["gb200-r01-t01", "gb200-r01-t02", "gb200-r01-t03"]
    assert [e.name for e in excluded] == ["cp-01", "gb200-r01-t04"]
    assert excluded[1].reason.startswith("cordoned")
    cordon = [d for d in diags if "cordoned" in d.message]
    assert len(cordon) == 1 and cordon[0].severity is Severity.WARNING and cordon[0].code == "NodeExcluded"
    assert "gb200-r01-t04" in cordon[0].message


def test_unschedulable_taint_selector_opts_cordoned_nodes_in_and_everything_else_out():
    facts = load_facts(FIXTURES / "onprem-gb200-rdma.yaml")
    nodes, excluded, diags = select_target_nodes(facts, {"taintSelectors": [UNSCHEDULABLE]})
    # AND semantics: only the cordoned node carries the taint.
    assert [name_of(n) for n in nodes] == ["gb200-r01-t04"]
    assert excluded == [] and diags == []


def test_cordoned_node_without_the_taint_yet_is_not_selected():
    facts = ClusterFacts(nodes=(node("fresh-cordon", cordoned=True),))
    assert names(select_target_nodes(facts, {"taintSelectors": [UNSCHEDULABLE]})) == []


def test_gpu_present_is_required_and_gpu_looking_nodes_are_warned_about():
    facts = ClusterFacts(
        nodes=(
            node("cpu", gpu=False),
            node("gpu-unlabelled", gpu=False, gpus=8),
            node("gpu-ok", gpus=8),
            node(
                "labelled-false", gpu=False, labels={"nvidia.com/gpu.present": "false", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
            ),
        )
    )
    nodes, excluded, diags = select_target_nodes(facts, {})
    assert [name_of(n) for n in nodes] == ["gpu-ok"]
    assert [e.name for e in excluded] == ["cpu", "gpu-unlabelled", "labelled-false"]
    assert {e.reason for e in excluded} == {"not labelled nvidia.com/gpu.present=true"}
    by_severity = {d.severity: d.message for d in diags}
    assert "gpu-unlabelled, labelled-false" in by_severity[Severity.WARNING]
    assert "cpu" in by_severity[Severity.INFO] and "gpu-unlabelled" not in by_severity[Severity.INFO]


def test_dra_only_node_without_gpu_present_is_warned_about():
    facts = load_facts(FIXTURES / "nscale-gb300-dra.yaml")
    _, excluded, diags = select_target_nodes(facts, {})
    assert [e.name for e in excluded] == ["nks-gb300-r02-n02"]
    [diag] = diags
    assert diag.severity is Severity.WARNING and "DRA-only" in diag.message


def test_result_does_not_depend_on_node_order():
    nodes = [node(f"n{i}", labels={"pool": "x" if i % 2 else "y"}, cordoned=(i == 3)) for i in range(8)]
    baseline = select_target_nodes(ClusterFacts(nodes=tuple(nodes)), {"nodeSelector": {"pool": "x"}})
    for seed in range(5):
        random.Random(seed).shuffle(nodes)
        assert select_target_nodes(ClusterFacts(nodes=tuple(nodes)), {"nodeSelector": {"pool": "x"}}) == baseline
    assert names(baseline) == ["n1", "n5", "n7"]


@pytest.mark.parametrize(
    ("target", "path", "fragment"),
    [
        ({"nodeSelector": {"nvidia.com/gpu.present": True}}, "spec.target.nodeSelector.nvidia.com/gpu.present", "must be strings"),
        (
            {"matchExpressions": [{"key": "n", "operator": "Matches", "values": ["3"]}]},
            "spec.target.matchExpressions[0].operator",
            "'Matches' is not supported",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3", "4"]}]},
            "spec.target.matchExpressions[0].values",
            "exactly one value",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Lt"}]},
            "spec.target.matchExpressions[0].values",
            "exactly one value",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3.5"]}]},
            "spec.target.matchExpressions[0].values[0]",
            "64-bit integer",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Lt", "values": ["+3"]}]},
            "spec.target.matchExpressions[0].values[0]",
            "64-bit integer",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Lt", "values": ["9223372036854775808"]}]},
            "spec.target.matchExpressions[0].values[0]",
            "64-bit integer",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "In", "values": []}]},
            "spec.target.matchExpressions[0].values",
            "at least one value",
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Exists", "values": ["a"]}]},
            "spec.target.matchExpressions[0].values",
            "takes no values",
        ),
        ({"matchExpressions": [{"operator": "Exists"}]}, "spec.target.matchExpressions[0]", "needs a key"),
        ({"nodeNames": "a"}, "spec.target.nodeNames", "list of node names"),
        ({"taintSelectors": [{"key": ""}]}, "spec.target.taintSelectors[0]", "needs a key"),
        ({"taintSelectors": [{"key": "k", "effect": "Sometimes"}]}, "spec.target.taintSelectors[0].effect", "effect must be one of"),
    ],
)
def test_malformed_targets_are_errors(target, path, fragment):
    nodes, excluded, [diag] = select_target_nodes(ClusterFacts(nodes=(node("a"),)), target)
    assert nodes == () and excluded == []
    assert (diag.code, diag.path, diag.severity) == ("InvalidTarget", path, Severity.ERROR)
    assert fragment in diag.message


def test_target_path_is_configurable():
    _, _, [diag] = select_target_nodes(ClusterFacts(), {"nodeNames": ["x"]}, target_path="spec.orchestration.target")
    assert diag.path == "spec.orchestration.target.nodeNames"
