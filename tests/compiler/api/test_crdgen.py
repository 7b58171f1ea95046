"""Generated CRDs: no drift from the models, structural schemas, and every CEL rule compiled,
reached by the offline validator, and shown to reject something."""

from __future__ import annotations

import copy
import importlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from nvcre.compiler.api import KINDS, validate
from nvcre.compiler.api.cel_eval import compile_rule
from nvcre.compiler.api.cel_rules import (
    LABEL_KEY_RULES,
    MERGED_ENV_CAP,
    MERGED_LABEL_CAP,
    NIC_RESOURCE_NAME_RULES,
    NON_NEGATIVE_QUANTITY,
    QUEUE_LABEL_KEY_RULES,
    SOURCE_REPO_HOST,
    SOURCE_REPO_SCHEME,
    SPEC_IMMUTABLE,
    THRESHOLD_KEYS_RULE,
    UNIQUE_CATEGORIES,
    VALUE_FROM_MESSAGE,
)
from nvcre.compiler.api.common import INTEGER_COMPARISON
from nvcre.compiler.api.crdgen import CRD_DIR, crd_file_name, render_crds
from nvcre.compiler.api.validate import installed_schema, iter_rules
from nvcre.compiler.yamlio import load_file

FIXTURES = Path(__file__).parents[2] / "fixtures" / "api"
# The package exports the function ``validate``, which hides the module of the same name.
VALIDATE_MODULE = importlib.import_module("nvcre.compiler.api.validate")


def load(name: str) -> dict:
    (doc,) = load_file(FIXTURES / name)
    return doc


# --- drift and shape ---------------------------------------------------------------------------


def test_committed_crds_match_the_models():
    rendered = render_crds()
    committed = {path.name: path.read_text(encoding="utf-8") for path in CRD_DIR.glob("*.yaml")}
    assert sorted(committed) == sorted(rendered), "run scripts/gen_crds.py"
    for name, text in rendered.items():
        assert committed[name] == text, f"{name} is out of date: run scripts/gen_crds.py"


@pytest.mark.parametrize("cls", KINDS, ids=lambda cls: cls.kind_name())
def test_crd_names_scope_status_and_columns(cls):
    (crd,) = load_file(CRD_DIR / crd_file_name(cls))
    kind = cls.kind_name()
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{cls.plural}.nvcre.nvidia.com"
    assert crd["spec"]["names"]["kind"] == kind
    assert crd["spec"]["names"]["singular"] == kind.lower()
    assert crd["spec"]["scope"] == ("Cluster" if kind == "LogProfile" else "Namespaced")
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert ("subresources" in version) == (kind != "LogProfile")
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns[-1] == "Age"
    if kind in ("Certification", "WorkloadRun", "Workflow", "Job"):
        assert "Phase" in columns


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for key, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{key}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _nodes(schema[key], f"{path}[{key}]")
    for index, sub in enumerate(schema.get("anyOf", [])):
        yield from _nodes(sub, f"{path}.anyOf[{index}]")


@pytest.mark.parametrize("cls", KINDS, ids=lambda cls: cls.kind_name())
def test_schemas_are_structural(cls):
    for path, node in _nodes(installed_schema(cls)):
        assert "$ref" not in node, path
        free = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
        assert "type" in node or free, f"{path} has no type"
        if "anyOf" in node:
            assert node.get("x-kubernetes-int-or-string"), f"{path} uses anyOf"
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        if node.get("type") == "array":
            assert "items" in node, path
        if node.get("type") == "object":
            assert not ("properties" in node and "additionalProperties" in node), path
        if node.get("x-kubernetes-list-type") == "map":
            required = set(node["items"].get("required", []))
            assert set(node["x-kubernetes-list-map-keys"]) <= required, path


def test_spec_of_certification_and_workloadrun_is_immutable():
    for cls in KINDS:
        rules = installed_schema(cls)["properties"]["spec"].get("x-kubernetes-validations", [])
        immutable = {"rule": SPEC_IMMUTABLE.rule, "message": SPEC_IMMUTABLE.message} in rules
        assert immutable == (cls.kind_name() in ("Certification", "WorkloadRun")), cls.kind_name()


# --- every rule: compiles, is reached, rejects something ----------------------------------------


def _all_rules() -> list[tuple[str, str, dict[str, Any]]]:
    return [(cls.kind_name(), path, rule) for cls in KINDS for path, rule in iter_rules(installed_schema(cls))]


def test_every_rule_compiles_under_cel_python():
    rules = _all_rules()
    assert len(rules) > 50
    for _, _, rule in rules:
        compile_rule(rule["rule"])


def _options() -> dict[str, Any]:
    return {
        "nicResourceName": "rdma/ib",
        "sourceRepo": "https://git.example.com/m.git",
        "thresholds": {"busBandwidthGBps": "value >= 1"},
        "resources": {"limits": {"cpu": 2, "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
        "env": [{"name": "A", "value": "1"}],
        "workloadMetadata": {"labels": {"example.com/a": "b"}},
    }


def _corpus() -> list[tuple[dict, dict | None]]:
    """Documents that between them carry a value at every node that has a rule."""
    cert = load("certification-multi-category.yaml")
    cert["spec"].update(_options())
    cert["spec"]["categories"][0]["options"].update(_options())
    run = load("workloadrun-mpi-unpinned.yaml")
    run["spec"].update(thresholds={"goodputRatio": "value > 0.5"}, nicResourceName="rdma/ib")
    torch = copy.deepcopy(run)
    torch["spec"]["framework"] = {"torch": {"module": "train"}}
    flow = load("workflow-overrides.yaml")
    flow["spec"]["gangScheduler"]["queueLabelKey"] = "kai.scheduler/queue"
    template = flow["spec"]["jobTemplate"]["spec"]
    template.update(bandwidthMeasurement={"logProfileRef": "nccl"}, thresholds={"busBandwidthGBps": "value > 1"})
    job = load("job-with-status.yaml")
    job["spec"].update(
        workloadMetadata={"labels": {"a": "b"}},
        nodeHealthMonitor={"cel": {"expression": "false"}},
        goodputMeasurement={"logProfileRef": "megatron"},
    )
    # a Gt requirement in every kind of target, so the integer-value rule on it is evaluated
    more_than_four = {"key": "example.com/gpu-count", "operator": "Gt", "values": ["4"]}
    cert["spec"]["target"]["matchExpressions"] = [more_than_four]
    run["spec"]["target"]["matchExpressions"] = [more_than_four]
    run["spec"]["overrides"] = [
        {"when": {"platform": {"equals": "aws"}}, "orchestration": {"target": {"matchExpressions": [more_than_four]}}}
    ]
    flow["spec"]["orchestration"]["target"]["matchExpressions"] = [more_than_four]
    flow["spec"]["overrides"][1]["orchestration"]["target"] = {"matchExpressions": [more_than_four]}
    docs = [cert, run, torch, flow, job] + [load(p.name) for p in sorted(FIXTURES.glob("*.yaml"))]
    return [(doc, copy.deepcopy(doc)) for doc in docs]


def test_the_validator_evaluates_every_rule_of_every_crd(monkeypatch):
    seen: set[int] = set()
    real = VALIDATE_MODULE._evaluate

    def recording(rule, *args, **kwargs):
        seen.add(id(rule))
        return real(rule, *args, **kwargs)

    monkeypatch.setattr(VALIDATE_MODULE, "_evaluate", recording)
    for doc, old in _corpus():
        assert validate(doc, old=old) == [], doc["kind"]
    missing = [(kind, path, rule["message"]) for kind, path, rule in _all_rules() if id(rule) not in seen]
    assert missing == []


def _cert_with(change: Callable[[dict], Any], old: bool = False) -> Callable[[], tuple[dict, dict | None]]:
    def build() -> tuple[dict, dict | None]:
        doc = load("certification-multi-category.yaml")
        before = copy.deepcopy(doc)
        change(doc["spec"])
        return doc, (before if old else None)

    return build


def _run_with(change: Callable[[dict], Any]) -> Callable[[], tuple[dict, dict | None]]:
    def build() -> tuple[dict, dict | None]:
        doc = load("workloadrun-mpi-unpinned.yaml")
        change(doc["spec"])
        return doc, None

    return build


def _updated(fixture: str, change: Callable[[dict], Any]) -> Callable[[], tuple[dict, dict | None]]:
    def build() -> tuple[dict, dict | None]:
        old = load(fixture)
        new = copy.deepcopy(old)
        change(new["spec"])
        return new, old

    return build


_LONG_PREFIX = ("a" * 60 + ".") * 4 + "b" * 20
_JOB = "job-with-status.yaml"
_FLOW = "workflow-overrides.yaml"

#: One failing case per rule message found in the CRDs.
RULE_CASES: dict[str, Callable[[], tuple[dict, dict | None]]] = {
    VALUE_FROM_MESSAGE: _cert_with(lambda s: s["env"][0].update(valueFrom={})),
    LABEL_KEY_RULES[0].message: _cert_with(lambda s: s["workloadMetadata"]["labels"].update({"nvcre.nvidia.com/x": "y"})),
    LABEL_KEY_RULES[1].message: _cert_with(lambda s: s["workloadMetadata"]["labels"].update({"a b": "y"})),
    LABEL_KEY_RULES[2].message: _cert_with(lambda s: s["workloadMetadata"]["labels"].update({_LONG_PREFIX + "/k": "y"})),
    QUEUE_LABEL_KEY_RULES[0].message: _cert_with(lambda s: s["gangScheduler"].update(queueLabelKey=_LONG_PREFIX + "/q")),
    QUEUE_LABEL_KEY_RULES[1].message: _cert_with(lambda s: s["gangScheduler"].update(queueLabelKey="nvcre.nvidia.com/q")),
    NIC_RESOURCE_NAME_RULES[0].message: _cert_with(lambda s: s.update(nicResourceName="a.kubernetes.io/nic")),
    SOURCE_REPO_SCHEME.message: _cert_with(lambda s: s.update(sourceRepo="http://x")),
    SOURCE_REPO_HOST.message: _cert_with(lambda s: s.update(sourceRepo="ssh://-oProxyCommand=x/repo.git")),
    THRESHOLD_KEYS_RULE.message: _cert_with(lambda s: s.update(thresholds={"speed": "value > 1"})),
    NON_NEGATIVE_QUANTITY.message: _cert_with(lambda s: s.update(resources={"limits": {"cpu": "-2"}})),
    "requests.cpu must not exceed limits.cpu": _cert_with(
        lambda s: s.update(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "1001m"}})
    ),
    "requests.memory must not exceed limits.memory": _cert_with(
        lambda s: s.update(resources={"limits": {"memory": "1Gi"}, "requests": {"memory": "1025Mi"}})
    ),
    SPEC_IMMUTABLE.message: _cert_with(lambda s: s.update(maxSteps=7), old=True),
    MERGED_ENV_CAP.message: _cert_with(
        lambda s: (
            s.update(env=[{"name": f"G{i}", "value": "x"} for i in range(30)]),
            s["categories"][1]["options"].update(env=[{"name": f"C{i}", "value": "x"} for i in range(3)]),
        )
    ),
    MERGED_LABEL_CAP.message: _cert_with(lambda s: s["workloadMetadata"].update(labels={f"g{i}": "v" for i in range(32)})),
    UNIQUE_CATEGORIES.message: _cert_with(lambda s: s["categories"].append(copy.deepcopy(s["categories"][3]))),
    "script and module are mutually exclusive": _run_with(lambda s: s.update(framework={"torch": {"script": "a.py", "module": "m"}})),
    "either script or module must be set": _run_with(lambda s: s.update(framework={"torch": {}})),
    "exactly one of torch, mpi or exec must be set": _run_with(lambda s: s["framework"].update(exec={"command": ["x"]})),
    "inline and configMapRef are mutually exclusive": _run_with(lambda s: s["config"].update(configMapRef={"name": "c"})),
    "placement Unpinned cannot be combined with testScale intra-node or intra-rack": _run_with(
        lambda s: s["orchestration"].update(testScale="intra-rack")
    ),
    "workload is immutable": _updated(_JOB, lambda s: s["workload"]["trainJob"]["trainer"].update(numNodes=3)),
    "workloadMetadata is immutable": _updated(_FLOW, lambda s: s["jobTemplate"]["spec"]["workloadMetadata"].update(labels={})),
    "nodeHealthMonitor is immutable": _updated(
        _FLOW, lambda s: s["jobTemplate"]["spec"]["nodeHealthMonitor"]["cel"].update(expression="true")
    ),
    "goodputMeasurement is immutable": _updated(
        _FLOW, lambda s: s["jobTemplate"]["spec"]["goodputMeasurement"].update(sampleInterval="30s")
    ),
    "bandwidthMeasurement is immutable": _updated(_JOB, lambda s: s["bandwidthMeasurement"].update(testType="alltoall")),
    "workloadMetadata cannot be added or removed after creation": _updated(
        _JOB, lambda s: s.update(workloadMetadata={"labels": {"a": "b"}})
    ),
    "nodeHealthMonitor cannot be added or removed after creation": _updated(
        _FLOW, lambda s: s["jobTemplate"]["spec"].pop("nodeHealthMonitor")
    ),
    "goodputMeasurement cannot be added or removed after creation": _updated(
        _JOB, lambda s: s.update(goodputMeasurement={"logProfileRef": "megatron"})
    ),
    "bandwidthMeasurement cannot be added or removed after creation": _updated(_JOB, lambda s: s.pop("bandwidthMeasurement")),
    "gangScheduler is immutable": _updated(_FLOW, lambda s: s["gangScheduler"].update(schedulerName="other")),
    "gangScheduler cannot be added or removed after creation": _updated(_FLOW, lambda s: s.pop("gangScheduler")),
    INTEGER_COMPARISON.message: _cert_with(
        lambda s: s["target"].update(matchExpressions=[{"key": "example.com/gpu-count", "operator": "Lt", "values": ["4.5"]}])
    ),
}


def test_every_rule_message_has_a_failing_case():
    messages = {rule["message"] for _, _, rule in _all_rules()}
    assert sorted(messages - set(RULE_CASES)) == []
    assert sorted(set(RULE_CASES) - messages) == []


@pytest.mark.parametrize("message", sorted(RULE_CASES))
def test_rule_rejects_its_case(message):
    doc, old = RULE_CASES[message]()
    diagnostics = validate(doc, old=old)
    assert message in [d.message for d in diagnostics]
    assert all(d.code != "RuleEvaluationError" for d in diagnostics)
