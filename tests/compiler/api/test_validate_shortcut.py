"""The render's validation shortcut only ever says "valid" where the full validation finds nothing.

``certainly_valid`` builds no model; a document it does not vouch for gets ``validate``'s
report. So the one way it could change what a render says is to vouch for a document that
``validate`` rejects: these tests look for one over every Certification in the repository and
over random damage done to them.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.api.validate import certainly_valid, validate
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.render import validate_kind
from nvcre.compiler.yamlio import load_file

REPO = Path(__file__).resolve().parents[3]


def _certifications() -> list[dict[str, Any]]:
    found = []
    for folder in ("examples", "golden", "tests/fixtures", "tests/integration/data"):
        for path in sorted((REPO / folder).rglob("*.yaml")):
            try:
                documents = load_file(path)
            except Exception:  # noqa: BLE001 - deliberately broken files are not inputs here
                continue
            found += [d for d in documents if isinstance(d, dict) and d.get("kind") == "Certification"]
    return found


CORPUS = _certifications()
VALID = [d for d in CORPUS if not validate(copy.deepcopy(d))]


def test_the_corpus_has_both_valid_and_invalid_certifications() -> None:
    assert len(VALID) > 50 and len(CORPUS) - len(VALID) > 10


def test_never_vouches_for_a_document_validate_rejects() -> None:
    for document in CORPUS:
        if certainly_valid(copy.deepcopy(document), "Certification"):
            assert validate(copy.deepcopy(document)) == [], document


def test_vouches_for_most_valid_documents() -> None:
    vouched = sum(certainly_valid(copy.deepcopy(d), "Certification") for d in VALID)
    assert vouched >= 0.9 * len(VALID)
    example = load_file(REPO / "examples/certification.yaml")[0]
    assert certainly_valid(example, "Certification")


def test_metadata_the_object_meta_model_would_refuse_is_left_to_it() -> None:
    example = load_file(REPO / "examples/certification.yaml")[0]
    for meta in (
        {"name": "x", "labels": {"a": 1}},
        {"name": "x", "annotations": {"a": True}},
        {"name": "x", "uid": 5},
        {"name": "x", "generation": "1"},
        {"name": "x", "bogus": "y"},
    ):
        document = {**example, "metadata": meta}
        assert not certainly_valid(document, "Certification")
        assert validate(document), meta


def test_only_the_kind_asked_for() -> None:
    example = load_file(REPO / "examples/certification.yaml")[0]
    assert not certainly_valid(example, "WorkloadRun")
    assert not certainly_valid({**example, "kind": "WorkloadRun"}, "Certification")
    assert not certainly_valid({**example, "apiVersion": "nvcre.nvidia.com/v1"}, "Certification")
    assert not certainly_valid([example], "Certification")


_HOSTILE = st.sampled_from(
    [
        None,
        "",
        "x",
        "x\n",
        "ü",
        "rdma/ib",
        "kubernetes.io/x",
        "http://host",
        "ssh://-oProxy",
        "https://h/r",
        "1Gi",
        "-1",
        "500m",
        0,
        -1,
        1,
        2.0,
        2.5,
        2**31,
        2**63,
        True,
        False,
        [],
        [None],
        {},
        {"valueFrom": {}},
        {"name": "A", "value": "1"},
        {"name": "A", "valueFrom": {"x": 1}},
        {"nvcre.nvidia.com/x": "y"},
        {"a": None},
        "a" * 300,
        {"a": 1},
        {"a": True},
        {"a": ["b"]},
        {"a": {"b": "c"}},
        [1],
        ["x"],
        1e300,
    ]
)
_KEYS = st.sampled_from(
    [
        "unknown",
        "env",
        "valueFrom",
        "labels",
        "annotations",
        "generation",
        "uid",
        "nodesPerJob",
        "sourceRepo",
        "nicResourceName",
        "resources",
        "limits",
        "requests",
        "cpu",
        "memory",
        "thresholds",
        "busBandwidthGBps",
        "workloadMetadata",
        "gangScheduler",
        "schedulerName",
        "queueLabelKey",
        "target",
        "nodeSelector",
        "testScale",
        "domain",
        "variant",
        "options",
        "categories",
        "name",
        "namespace",
        "finalizers",
        "status",
    ]
)


def _containers(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, (dict, list)):
        out.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, out)
    return out


@st.composite
def damaged(draw: st.DrawFn) -> dict[str, Any]:
    document = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 3))):
        nodes = _containers(document, [])
        node = draw(st.sampled_from(nodes))
        value = copy.deepcopy(draw(_HOSTILE))
        if isinstance(node, dict):
            key = draw(st.one_of(_KEYS, st.sampled_from(sorted(node) or ["unknown"])))
            if draw(st.booleans()) and key in node:
                del node[key]
            else:
                node[key] = value
        elif node:
            index = draw(st.integers(0, len(node) - 1))
            node[index] = value
        else:
            node.append(value)
    return document


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(damaged())
def test_damaged_documents_are_vouched_for_only_when_valid(document: dict[str, Any]) -> None:
    if certainly_valid(copy.deepcopy(document), "Certification"):
        assert validate(copy.deepcopy(document)) == []


@pytest.mark.parametrize("index", range(0, 40, 3))
def test_the_render_reports_exactly_what_validate_reports(index: int) -> None:
    """validate_kind (the render's first step) gives validate's diagnostics, shortcut or not."""
    invalid = [d for d in CORPUS if validate(copy.deepcopy(d))]
    document = (invalid + VALID)[index % (len(invalid) + len(VALID))]
    expected = [(d.code, d.path, d.message) for d in validate(copy.deepcopy(document))]
    try:
        _, problems = validate_kind(copy.deepcopy(document), "Certification")
    except CompileError as exc:
        problems = exc.diagnostics
    assert [(d.code, d.path, d.message) for d in problems] == expected


def test_a_valid_render_builds_no_api_model_and_loads_no_cel_python() -> None:
    script = (
        "import sys\n"
        "from nvcre.compiler.render import render_certification\n"
        "from nvcre.compiler.yamlio import load_file\n"
        f"render_certification(load_file({str(REPO / 'examples/certification.yaml')!r})[0], platform='aws', gpu_arch='h100')\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = set(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split())
    assert "nvcre.compiler.render" in loaded
    assert (
        not {
            "celpy",
            "lark",
            "nvcre.compiler.cel",
            "nvcre.compiler.api.common",
            "nvcre.compiler.api.certification",
            "nvcre.compiler.api.dispatch",
        }
        & loaded
    )


def test_deep_or_oversized_documents_are_refused_without_walking_them() -> None:
    deep: Any = {"name": "x"}
    for _ in range(5000):
        deep = [deep]
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": deep,
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
    }
    assert certainly_valid(document, "Certification") is False
    assert validate(document)


def test_the_kind_registry_names_each_model_s_own_crd() -> None:
    from nvcre.compiler.api.crdfiles import crd_file_name
    from nvcre.compiler.api.kinds import KINDS, kind_plural
    from nvcre.compiler.api.validate import _installed_crd, installed_schema, schema_of_kind

    for cls in KINDS:
        assert kind_plural(cls.kind_name()) == cls.plural
        assert schema_of_kind(cls.kind_name()) is installed_schema(cls)
        assert (_installed_crd(crd_file_name(cls))["spec"]["scope"] == "Namespaced") is cls.namespaced
    assert schema_of_kind("Nothing") is None and kind_plural("Nothing") is None
