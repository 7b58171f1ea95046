"""The diagnose annotations are checked like the rest of a spec, and the runtime's reader never breaks on one.

A ``diagnose-prior`` of 5,000 nested brackets used to pass ``validate`` and then fail every
reconcile of its Workflow with a ``RecursionError``. Now the prior's size, nesting and shape are
checked with the field path inside the JSON, and the reader the controller uses refuses such a
value with a CompileError (the Workflow then fails with that message).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.diagnose.prior import MAX_PRIOR_BYTES, annotation_problems, prior_problems, read_prior
from nvcre.compiler.diagnose.session import options_for, planner_of
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR

DEEP = "[" * 5000 + "]" * 5000
PATH = f"metadata.annotations[{ANNOTATION_DIAGNOSE_PRIOR}]"


def certification(annotations: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "dg", "namespace": "dg", "annotations": annotations},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "categories": [
                {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "diagnose", "minGroupSize": 2}}
            ],
        },
    }


def test_the_runtime_reader_refuses_deep_nesting_with_the_field_path() -> None:
    workflow = {"metadata": {"annotations": {ANNOTATION_DIAGNOSE_PRIOR: DEEP}}, "spec": {}}
    with pytest.raises(CompileError) as caught:
        options_for(workflow, 4, mnnvl=False)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.path == PATH and diagnostic.code == "InvalidDiagnosePrior"
    assert "nested 5000 levels deep" in diagnostic.message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (DEEP, "nested 5000 levels deep"),
        ('{"groups": [[["a"]]]}', "groups[0]: expected an object"),
        ('{"groups": [{"nodes": ["a"], "passed": false, "extra": 1}]}', "groups[0].extra: unknown field"),
        ('{"groups": [{"nodes": ["' + "n" * 300 + '"], "passed": false}]}', "groups[0].nodes[0]: a node name of 300 characters"),
        ('{"groups": [{"nodes": ["a"], "passed": false}], "more": []}', "more: unknown field"),
        ('"' + "x" * (MAX_PRIOR_BYTES + 1) + '"', "bytes; at most 262,144"),
        ('{"groups": [{"nodes": ["a\\"]]]]]]"], "passed": true}]}', ""),
    ],
)
def test_every_problem_names_its_place_inside_the_prior(value: str, message: str) -> None:
    found = prior_problems(value)
    if not message:  # brackets inside a node name are text, not nesting
        assert found == [] and read_prior({ANNOTATION_DIAGNOSE_PRIOR: value}) is not None
        return
    assert found and all(d.path == PATH for d in found)
    assert any(message in d.message for d in found), [d.message for d in found]
    with pytest.raises(CompileError):
        read_prior({ANNOTATION_DIAGNOSE_PRIOR: value})


def test_a_prior_text_built_to_stall_a_string_scanner_is_measured_in_one_pass() -> None:
    hostile = '"' + '\\"' * 100_000  # an escaped quote, again and again, never closed
    assert [d.message for d in prior_problems(hostile)][0].startswith("not JSON")


def test_validation_reports_the_annotations_of_the_reproducer() -> None:
    found = annotation_problems(certification({ANNOTATION_DIAGNOSE_PRIOR: DEEP, ANNOTATION_DIAGNOSE_PLANNER: "fastest"}))
    assert [(d.code, d.path) for d in found] == [
        ("InvalidDiagnosePrior", PATH),
        ("InvalidDiagnosePlanner", f"metadata.annotations[{ANNOTATION_DIAGNOSE_PLANNER}]"),
    ]
    good = json.dumps({"groups": [{"nodes": ["a", "b"], "passed": False}]})
    assert annotation_problems(certification({ANNOTATION_DIAGNOSE_PRIOR: good, ANNOTATION_DIAGNOSE_PLANNER: "baseline"})) == []
    assert annotation_problems({"metadata": {}}) == [] and annotation_problems("not a document") == []
    assert planner_of({"metadata": {"annotations": {ANNOTATION_DIAGNOSE_PLANNER: "baseline"}}}) == "baseline"


def test_validate_refuses_the_reproducer_as_installed(tmp_path: Path) -> None:
    # The installed command, as a user runs it: exit 2, the field path inside the prior, no output.
    document = tmp_path / "dg.json"
    document.write_text(json.dumps(certification({ANNOTATION_DIAGNOSE_PRIOR: DEEP})))
    nvcrectl = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"
    done = subprocess.run([nvcrectl, "certification", "validate", str(document)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"{PATH}: nested 5000 levels deep" in done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
