"""merge_workload_labels: catalog < options < gang queue label, on the submitted workload object."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.passes.merge_workload_labels import merge_workload_labels
from nvcre.compiler.unit import ClusterView, Context, EntryInfo, GangSpec, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import FIXTURES

ENTRY = EntryInfo("communication", "nccl-all-reduce", "mpi", launcher_job="launcher")
FIELD = "spec.jobTemplate.spec.workloadMetadata.labels"
WORKFLOW_FIELD = f"workflow.{FIELD}"
KAI = GangSpec("kai-scheduler", queue="high-priority")


def render(catalog: dict | None, user: dict | None, gang: GangSpec | None = None, source_kind: str = "Certification"):
    workflow = load_file(FIXTURES / "mpi-all-reduce.yaml")[0]
    if catalog is not None:
        workflow["spec"]["jobTemplate"]["spec"]["workloadMetadata"] = {"labels": catalog}
    path = "spec" if source_kind == "WorkloadRun" else "spec.categories[0]"
    ctx = Context(source_kind, "demo", {}, ENTRY, ClusterView("onprem", "h100"), path, gang=gang)
    options = {} if user is None else {"workloadMetadata": {"labels": user}}
    return Unit(category={}, options=options, workflow=workflow), ctx


def labels_of(unit: Unit) -> dict | None:
    return unit.workflow["spec"]["jobTemplate"]["spec"].get("workloadMetadata", {}).get("labels")


def test_nothing_to_compose_is_a_no_op():
    unit, ctx = render(None, None)
    out, diags = merge_workload_labels(unit, ctx)
    assert out is unit and diags == []
    assert "workloadMetadata" not in out.workflow["spec"]["jobTemplate"]["spec"]


def test_precedence_catalog_then_options_then_queue_insert():
    unit, ctx = render(
        {"team": "catalog", "tier": "catalog", "kind": "catalog"},
        {"tier": "option", "environment": "burn-in", "kueue.x-k8s.io/queue-name": "nccl-queue"},
        gang=KAI,
    )
    out, diags = merge_workload_labels(unit, ctx)
    assert diags == []
    assert labels_of(out) == {
        "environment": "burn-in",
        "kai.scheduler/queue": "high-priority",
        "kind": "catalog",
        "kueue.x-k8s.io/queue-name": "nccl-queue",
        "team": "catalog",
        "tier": "option",
    }


def test_queue_label_with_the_same_value_is_kept():
    unit, ctx = render(None, {"kai.scheduler/queue": "high-priority"}, gang=KAI)
    out, diags = merge_workload_labels(unit, ctx)
    assert diags == []
    assert labels_of(out) == {"kai.scheduler/queue": "high-priority"}


@pytest.mark.parametrize(
    "catalog, user, path",
    [
        (
            None,
            {"kai.scheduler/queue": "batch"},
            'spec.categories[0].options.workloadMetadata.labels["kai.scheduler/queue"]',
        ),
        ({"kai.scheduler/queue": "batch"}, None, f'{WORKFLOW_FIELD}["kai.scheduler/queue"]'),
        (
            {"kai.scheduler/queue": "high-priority"},
            {"kai.scheduler/queue": "batch"},
            'spec.categories[0].options.workloadMetadata.labels["kai.scheduler/queue"]',
        ),
    ],
)
def test_a_different_queue_value_fails_with_nvcre_message(catalog, user, path):
    unit, ctx = render(catalog, user, gang=KAI)
    out, diags = merge_workload_labels(unit, ctx)
    assert out is unit
    assert [(d.code, d.path, d.message) for d in diags] == [
        (
            "GangQueueLabelConflict",
            path,
            f'{FIELD}["kai.scheduler/queue"]: conflicting label value "batch", expected "high-priority"',
        )
    ]


def test_empty_string_is_a_real_value():
    unit, ctx = render(None, {"note": ""})
    out, diags = merge_workload_labels(unit, ctx)
    assert diags == [] and labels_of(out) == {"note": ""}
    unit, ctx = render(None, {"kai.scheduler/queue": ""}, gang=KAI)
    _, diags = merge_workload_labels(unit, ctx)
    assert diags[0].message.endswith('conflicting label value "", expected "high-priority"')


@pytest.mark.parametrize("key", ["app.kubernetes.io/managed-by", "nvcre.nvidia.com/certification"])
def test_reserved_keys_are_rejected(key):
    unit, ctx = render(None, {key: "x"})
    out, diags = merge_workload_labels(unit, ctx)
    assert out is unit
    assert [(d.code, d.path) for d in diags] == [("WorkloadLabelReserved", f'spec.categories[0].options.workloadMetadata.labels["{key}"]')]


def test_thirty_two_labels_fit():
    unit, ctx = render({f"c{i}": "v" for i in range(16)}, {f"u{i}": "v" for i in range(16)})
    out, diags = merge_workload_labels(unit, ctx)
    assert diags == [] and len(labels_of(out)) == 32


@pytest.mark.parametrize(
    "catalog, user, gang, count",
    [
        ({f"c{i}": "v" for i in range(16)}, {f"u{i}": "v" for i in range(17)}, None, 33),
        (None, {f"u{i}": "v" for i in range(32)}, KAI, 33),
    ],
)
def test_more_than_32_after_merge_fails(catalog, user, gang, count):
    unit, ctx = render(catalog, user, gang)
    out, diags = merge_workload_labels(unit, ctx)
    assert out is unit
    assert [(d.code, d.path, d.message) for d in diags] == [
        (
            "WorkloadLabelLimit",
            "spec.categories[0].options.workloadMetadata.labels",
            f"{FIELD}: {count} labels exceeds the maximum of 32",
        )
    ]


def test_empty_result_leaves_the_field_absent():
    unit, ctx = render({}, {})
    out, diags = merge_workload_labels(unit, ctx)
    assert diags == []
    assert "workloadMetadata" not in out.workflow["spec"]["jobTemplate"]["spec"]


@pytest.mark.parametrize("labels", [{"bad key": "v"}, {"k": "not valid!"}, {"k": "x" * 64}, {"k": 3}])
def test_invalid_keys_and_values_are_rejected(labels):
    unit, ctx = render(None, labels)
    _, diags = merge_workload_labels(unit, ctx)
    assert [d.code for d in diags] == ["WorkloadLabelInvalid"]


def test_workloadrun_labels_path():
    unit, ctx = render(None, {"nvcre.nvidia.com/x": "y"}, source_kind="WorkloadRun")
    _, diags = merge_workload_labels(unit, ctx)
    assert diags[0].path == 'spec.workloadMetadata.labels["nvcre.nvidia.com/x"]'


def test_only_the_labels_change():
    unit, ctx = render(None, {"environment": "burn-in"}, gang=KAI)
    out, _ = merge_workload_labels(unit, ctx)
    restored = copy.deepcopy(out.workflow)
    del restored["spec"]["jobTemplate"]["spec"]["workloadMetadata"]
    assert restored == unit.workflow


@pytest.mark.parametrize("gang", [None, KAI])
def test_input_unit_is_untouched(gang):
    unit, ctx = render({"team": "a"}, {"environment": "burn-in"}, gang)
    snapshot = copy.deepcopy(unit)
    merge_workload_labels(unit, ctx)
    assert unit == snapshot
