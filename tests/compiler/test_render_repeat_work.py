"""What a process renders again and again is decided once, and what it hands out is still its own.

A matrix of renders (every platform x GPU pair of one Certification) or a controller's reconciles
validate the same document and ask the same overlay question many times. The answers are kept:
a validated document by its plain data, the overlays whose fixed clauses hold by the five strings
they read. These tests pin that each is computed once, that the kept answers equal a fresh
computation, and that no caller can reach another's data through them.
"""

from __future__ import annotations

import copy
import importlib
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from nvcre.compiler import overlays as overlays_module
from nvcre.compiler import render as render_module
from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.overlays import MatchFacts, OverlayConditionError, OverlaySet, load_overlays, matches
from nvcre.compiler.render import render_certification, validate_kind

#: the module (the package exports a function of the same name)
validate_module = importlib.import_module("nvcre.compiler.api.validate")


def certification(name: str = "repeat", nodes_per_job: Any = 2) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "categories": [
                {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": nodes_per_job}},
                {"domain": "diagnostics", "variant": "dcgm-level4"},
            ],
        },
    }


@pytest.fixture
def count_validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = validate_module.certainly_valid

    def counted(data: Any, kind: str) -> bool:
        calls.append(kind)
        return real(data, kind)

    monkeypatch.setattr(validate_module, "certainly_valid", counted)
    monkeypatch.setattr(render_module, "_VALIDATED", {})
    return calls


def test_a_document_is_validated_once_per_process(count_validations: list[str]) -> None:
    document = certification("once")
    first = validate_kind(document, "Certification")
    second = validate_kind(copy.deepcopy(document), "Certification")
    assert count_validations == ["Certification"]
    assert first == second


def test_renders_of_one_document_on_every_pair_validate_it_once(count_validations: list[str]) -> None:
    document = certification("pairs")
    for platform, arch in itertools.islice(itertools.product(platform_names(), ("h100", "gb200")), 6):
        render_certification(document, platform=platform, gpu_arch=arch)
    assert count_validations == ["Certification"]


def test_each_caller_gets_its_own_copy_of_a_remembered_document(count_validations: list[str]) -> None:
    document = certification("copies", nodes_per_job=2.0)
    decoded, _ = validate_kind(document, "Certification")
    assert decoded["spec"]["categories"][0]["options"]["nodesPerJob"] == 2
    assert type(decoded["spec"]["categories"][0]["options"]["nodesPerJob"]) is int  # decoded as the API server would
    decoded["spec"]["categories"].clear()
    again, _ = validate_kind(document, "Certification")
    assert len(again["spec"]["categories"]) == 2
    assert again is not decoded and again["spec"] is not decoded["spec"]
    assert count_validations == ["Certification"]


def test_a_different_value_or_type_is_validated_afresh(count_validations: list[str]) -> None:
    validate_kind(certification("kinds", nodes_per_job=2), "Certification")
    validate_kind(certification("kinds", nodes_per_job=2.0), "Certification")  # 2.0 is not 2 to repr
    validate_kind(certification("kinds", nodes_per_job=3), "Certification")
    assert len(count_validations) == 3


def test_a_failing_document_is_reported_every_time(count_validations: list[str]) -> None:
    bad = certification("bad", nodes_per_job=0)
    for _ in range(2):
        with pytest.raises(CompileError) as failed:
            validate_kind(bad, "Certification")
        assert any("nodesPerJob" in d.path for d in failed.value.errors)
    assert len(count_validations) == 2
    assert render_module._VALIDATED == {}


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch, count_validations: list[str]) -> None:
    monkeypatch.setattr(render_module, "_VALIDATED_LIMIT", 3)
    for index in range(7):
        validate_kind(certification(f"bounded-{index}"), "Certification")
    assert len(render_module._VALIDATED) <= 3


def test_renders_hand_out_trees_no_later_render_can_see() -> None:
    document = certification("private")
    first = render_certification(document, platform="aws", gpu_arch="h100").workflows
    pristine = copy.deepcopy(first)

    def scribble(value: Any) -> None:
        if isinstance(value, dict):
            for key in list(value):
                scribble(value[key])
            value["scribbled"] = True
        elif isinstance(value, list):
            for item in value:
                scribble(item)
            value.append("scribbled")

    scribble(first)
    again = render_certification(document, platform="aws", gpu_arch="h100").workflows
    assert again == pristine


#: options every overlay condition can read
FULL_OPTIONS: dict[str, Any] = {"nodesPerJob": 2, "rdmaDeviceAccess": "hostPath", "enableMNNVL": True}


def _outcome(decide: Callable[[], list[Any]]) -> tuple[Any, ...]:
    try:
        return ("matched", [o.name for o in decide()])
    except OverlayConditionError as exc:
        return ("failed", exc.overlay.name, exc.message)


def test_overlays_kept_per_pair_equal_each_overlay_decided_alone() -> None:
    overlay_set = load_overlays()
    entries = [entry.info() for entry in load_catalog().entries]
    assert len(entries) >= 8
    grid = itertools.product(platform_names(), ("h100", "gb200", "gb300"), entries, ("Certification", "WorkloadRun"), [FULL_OPTIONS])
    # options an overlay reads but the category lacks: cel-python fails, on a few pairs (each failure is slow)
    failing = itertools.product(("aws", "oci"), ("h100",), entries, ("Certification",), [{}])
    seen = set()
    for platform, arch, entry, kind, options in itertools.chain(grid, failing):
        facts = MatchFacts(platform=platform, gpu_arch=arch, entry=entry.key, launch=entry.launch, source_kind=kind, options=options)
        expected = _outcome(lambda facts=facts: [o for o in overlay_set.overlays if matches(o, facts)])
        assert _outcome(lambda facts=facts: overlay_set.matching(facts)) == expected
        assert _outcome(lambda facts=facts: overlay_set.matching(facts)) == expected  # the kept answer, the second time
        seen.add(expected[0])
    assert seen == {"matched", "failed"}


def test_an_overlay_list_that_changes_is_never_answered_from_the_memo() -> None:
    loaded = load_overlays()
    facts = MatchFacts(
        platform="aws",
        gpu_arch="h100",
        entry="communication/nccl-all-reduce",
        launch="mpi",
        source_kind="Certification",
        options=FULL_OPTIONS,
    )
    changing: list[Any] = list(loaded.overlays)
    overlay_set = OverlaySet(loaded.root, changing)  # type: ignore[arg-type]
    before = overlay_set.matching(facts)
    assert before, "some overlay applies to AWS H100 all-reduce"
    changing.clear()
    assert overlay_set.matching(facts) == []


def test_overlay_answers_are_kept_per_overlay_set() -> None:
    loaded = load_overlays()
    facts = MatchFacts(
        platform="aws",
        gpu_arch="h100",
        entry="communication/nccl-all-reduce",
        launch="mpi",
        source_kind="Certification",
        options=FULL_OPTIONS,
    )
    everything = loaded.matching(facts)
    fewer = OverlaySet(loaded.root, tuple(o for o in loaded.overlays if o not in everything[:1]))
    assert fewer.matching(facts) == everything[1:]
    assert loaded.matching(facts) == everything
    assert overlays_module._CANDIDATES  # both answers kept, neither replaced the other


def test_a_document_past_the_size_cap_is_validated_every_time(monkeypatch: pytest.MonkeyPatch, count_validations: list[str]) -> None:
    monkeypatch.setattr(render_module, "_VALIDATED_MAX_KEY", 100)
    document = certification("large")
    validate_kind(document, "Certification")
    validate_kind(document, "Certification")
    assert len(count_validations) == 2
    assert render_module._VALIDATED == {}


def test_a_document_nested_too_deep_to_key_is_validated_and_refused_not_crashed() -> None:
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.render import validate_kind

    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    document = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"}, "spec": {"x": deep}}
    with pytest.raises(CompileError):
        validate_kind(document, "Certification")
