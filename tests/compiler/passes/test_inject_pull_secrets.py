"""inject_pull_secrets: every pod the workload runs gets the user's image pull secrets."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.passes.inject_pull_secrets import inject_pull_secrets
from nvcre.compiler.unit import ClusterView, Context, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import ENTRIES, FIXTURES, pod_specs


def render(fixture: str, secrets: list | None, source_kind: str = "Certification"):
    workflow = load_file(FIXTURES / f"{fixture}.yaml")[0]
    path = "spec" if source_kind == "WorkloadRun" else "spec.categories[1]"
    ctx = Context(source_kind, "demo", {}, ENTRIES[fixture], ClusterView("onprem", "h100"), path)
    options = {} if secrets is None else {"imagePullSecrets": secrets}
    return Unit(category={}, options=options, workflow=workflow), ctx


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
@pytest.mark.parametrize("secrets", [None, []])
def test_absent_is_a_no_op(fixture, secrets):
    unit, ctx = render(fixture, secrets)
    out, diags = inject_pull_secrets(unit, ctx)
    assert out is unit and diags == []


def test_mpi_launcher_and_workers_both_get_the_secrets():
    unit, ctx = render("mpi-all-reduce", [{"name": "mirror-creds"}, {"name": "ngc"}])
    out, diags = inject_pull_secrets(unit, ctx)
    assert diags == []
    specs = pod_specs(out.workflow)
    assert set(specs) == {"node", "launcher"}
    for spec in specs.values():
        assert spec["imagePullSecrets"] == [{"name": "mirror-creds"}, {"name": "ngc"}]


@pytest.mark.parametrize("fixture", ["loopback", "dcgm-level4", "nemotron5-8b"])
def test_single_and_training_node_pods_get_the_secrets(fixture):
    unit, ctx = render(fixture, [{"name": "ngc"}])
    out, _ = inject_pull_secrets(unit, ctx)
    assert pod_specs(out.workflow)["node"]["imagePullSecrets"] == [{"name": "ngc"}]


def test_existing_secrets_first_then_new_once_each_in_given_order():
    unit, ctx = render("mpi-all-reduce", [{"name": "b"}, {"name": "a"}, {"name": "c"}, {"name": "b"}])
    pod_specs(unit.workflow)["node"]["imagePullSecrets"] = [{"name": "a"}]
    out, _ = inject_pull_secrets(unit, ctx)
    specs = pod_specs(out.workflow)
    assert specs["node"]["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    assert specs["launcher"]["imagePullSecrets"] == [{"name": "b"}, {"name": "a"}, {"name": "c"}]


def test_nothing_but_pull_secrets_changes():
    unit, ctx = render("mpi-all-reduce", [{"name": "ngc"}])
    out, _ = inject_pull_secrets(unit, ctx)
    restored = copy.deepcopy(out.workflow)
    for spec in pod_specs(restored).values():
        del spec["imagePullSecrets"]
    assert restored == unit.workflow


@pytest.mark.parametrize("source_kind, path", [("Certification", "spec.categories[1].options"), ("WorkloadRun", "spec")])
def test_a_secret_without_a_name_is_reported(source_kind, path):
    unit, ctx = render("loopback", [{"name": "ok"}, {"name": ""}], source_kind)
    out, diags = inject_pull_secrets(unit, ctx)
    assert out is unit
    assert [(d.code, d.path) for d in diags] == [("ImagePullSecretInvalid", f"{path}.imagePullSecrets[1].name")]


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_input_unit_is_untouched(fixture):
    unit, ctx = render(fixture, [{"name": "ngc"}])
    snapshot = copy.deepcopy(unit)
    inject_pull_secrets(unit, ctx)
    assert unit == snapshot
