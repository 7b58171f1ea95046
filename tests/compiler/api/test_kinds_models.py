"""API models: exact round trips, no injected defaults, wire names, and model-level errors with field paths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Optional

import pytest
from pydantic import ValidationError

from nvcre.compiler.api import (
    CategoryOptions,
    Certification,
    EnvVar,
    GangSchedulerSpec,
    WorkloadRun,
    parse_document,
)
from nvcre.compiler.api.cel_rules import VALUE_FROM_MESSAGE
from nvcre.compiler.api.common import ApiModel
from nvcre.compiler.api.dispatch import load_model
from nvcre.compiler.api.kinds import kind_names
from nvcre.compiler.api.schemagen import SchemaGenError, model_schema
from nvcre.compiler.api.validate import installed_schema
from nvcre.compiler.emit import dump_yaml
from nvcre.compiler.yamlio import load_file

FIXTURES = Path(__file__).parents[2] / "fixtures" / "api"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("*.yaml"))


def load(name: str) -> dict:
    (doc,) = load_file(FIXTURES / name)
    return doc


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_parses_and_round_trips_exactly(name):
    doc = load(name)
    model, diagnostics = parse_document(doc)
    assert diagnostics == []
    assert model is not None
    assert model.to_dict() == doc
    assert dump_yaml(model.to_dict()) == dump_yaml(doc)
    assert type(model).from_dict(doc).to_dict() == doc


def test_fixtures_cover_every_kind():
    assert {load(name)["kind"] for name in FIXTURE_NAMES} == set(kind_names())


def test_parsing_never_adds_defaults_even_where_the_crd_has_one():
    doc = load("workloadrun-mpi-unpinned.yaml")
    assert "mpiImplementation" not in doc["spec"]["framework"]["mpi"]
    crd_mpi = installed_schema(WorkloadRun)["properties"]["spec"]["properties"]["framework"]["properties"]["mpi"]
    assert crd_mpi["properties"]["mpiImplementation"]["default"] == "OpenMPI"
    model = WorkloadRun.from_dict(doc)
    assert model.to_dict() == doc
    assert model.spec.framework.mpi.mpi_implementation is None


def test_minimal_certification_keeps_only_what_was_written():
    doc = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
    }
    model, diagnostics = parse_document(doc)
    assert diagnostics == []
    assert model.to_dict() == doc
    assert model.spec.categories[0].options is None


def test_wire_form_is_camel_case_and_python_uses_snake_case():
    options = CategoryOptions(enable_mnnvl=True, gpus_per_node=4, timeout_per_job="1h")
    assert options.to_dict() == {"enableMNNVL": True, "gpusPerNode": 4, "timeoutPerJob": "1h"}
    gang = GangSchedulerSpec(scheduler_name="kai-scheduler", queue_label_key="kai.scheduler/queue")
    assert gang.to_dict() == {"schedulerName": "kai-scheduler", "queueLabelKey": "kai.scheduler/queue"}
    assert EnvVar(name="NCCL_DEBUG", value="INFO").to_dict() == {"name": "NCCL_DEBUG", "value": "INFO"}


def test_snake_case_keys_are_unknown_fields_on_the_wire():
    doc = load("certification-multi-category.yaml")
    doc["spec"]["gpus_per_node"] = 4
    _, diagnostics = parse_document(doc)
    assert [(d.path, d.code) for d in diagnostics] == [("spec.gpus_per_node", "FieldUnknown")]


def test_value_from_is_rejected_by_the_model_at_its_own_path():
    doc = load("certification-multi-category.yaml")
    doc["spec"]["categories"][0]["options"]["env"][0]["valueFrom"] = {"secretKeyRef": {"name": "s", "key": "k"}}
    with pytest.raises(ValidationError):
        Certification.from_dict(doc)
    model, diagnostics = load_model(Certification, doc)
    assert model is None
    assert [(d.path, d.code, d.message) for d in diagnostics] == [
        ("spec.categories[0].options.env[0].valueFrom", "FieldForbidden", VALUE_FROM_MESSAGE)
    ]


def test_value_from_null_is_accepted_like_an_absent_field():
    doc = load("certification-multi-category.yaml")
    doc["spec"]["env"][0]["valueFrom"] = None
    model, diagnostics = parse_document(doc)
    assert diagnostics == []
    assert model.to_dict() == doc


def test_model_errors_are_all_collected_with_kubernetes_paths():
    doc = load("certification-multi-category.yaml")
    doc["spec"]["env"][0]["value"] = 0  # no coercion: an int is not a string
    doc["spec"]["categories"][2]["options"]["nodesPerJob"] = "2"
    doc["spec"]["categories"][2]["options"]["resources"]["limits"]["cpu"] = 1.5
    doc["spec"]["categories"][3].pop("variant")
    _, diagnostics = load_model(Certification, doc)
    assert sorted((d.path, d.code) for d in diagnostics) == [
        ("spec.categories[2].options.nodesPerJob", "FieldTypeInvalid"),
        # The int-or-string union reports once per member; both land on the field itself.
        ("spec.categories[2].options.resources.limits.cpu", "FieldTypeInvalid"),
        ("spec.categories[2].options.resources.limits.cpu", "FieldTypeInvalid"),
        ("spec.categories[3].variant", "FieldRequired"),
        ("spec.env[0].value", "FieldTypeInvalid"),
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("not a mapping", [("", "DocumentInvalid")]),
        ({"kind": "Certification"}, [("apiVersion", "FieldRequired")]),
        ({"apiVersion": "nvcre.nvidia.com/v1alpha1"}, [("kind", "FieldRequired")]),
        ({"apiVersion": "cre.nvidia.com/v1alpha1", "kind": "Certification"}, [("apiVersion", "FieldNotSupported")]),
        ({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Remediation"}, [("kind", "FieldNotSupported")]),
    ],
)
def test_documents_that_name_no_known_kind(data, expected):
    model, diagnostics = parse_document(data)
    assert model is None
    assert [(d.path, d.code) for d in diagnostics] == expected


def test_parse_document_returns_no_model_when_a_crd_rule_fails():
    doc = load("certification-multi-category.yaml")
    doc["spec"]["sourceRepo"] = "http://git.example.com/x.git"
    model, diagnostics = parse_document(doc)
    assert model is None
    assert [d.path for d in diagnostics] == ["spec.sourceRepo"]


def test_the_schema_generator_refuses_what_it_cannot_express():
    class Floaty(ApiModel):
        ratio: Optional[float] = None

    with pytest.raises(SchemaGenError, match="Floaty.ratio"):
        model_schema(Floaty)


def test_round_trip_does_not_share_state_with_the_input():
    doc = load("workflow-overrides.yaml")
    snapshot = copy.deepcopy(doc)
    model, _ = parse_document(doc)
    model.to_dict()["spec"]["dependencies"][0]["spec"]["accessModes"].append("ReadOnlyMany")
    assert doc == snapshot
