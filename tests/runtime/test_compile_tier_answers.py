"""The compiler answers the reconcile tiers reach through ``nvcre.runtime.compile``, besides the lowering.

The tiers may import of the compiler only the vocabulary (tests/project/test_layers.py), so what else
they need is a named function of the door: whether the catalog holds a category, which nodes a
target selects, the access reviews of a run namespace, and the Go duration text of the API.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler import vocabulary
from nvcre.runtime import compile as lowering


def _node(name: str, *, labels: dict[str, str] | None = None, cordoned: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": True} if cordoned else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", **(labels or {})}},
        "spec": spec,
        "status": {},
    }


@pytest.mark.parametrize(
    ("domain", "variant", "held"),
    [
        ("communication", "nccl-all-reduce", True),
        ("communication", "nccl-all-reduce-x", False),
        ("training", "nccl-all-reduce", False),
        (None, "nccl-all-reduce", False),
        ("communication", None, False),
    ],
)
def test_the_catalog_holds_only_its_own_categories(domain: str | None, variant: str | None, held: bool) -> None:
    assert lowering.catalog_has(domain, variant) is held


def test_target_nodes_are_the_schedulable_nodes_the_target_selects() -> None:
    facts = lowering.cluster_facts(
        [_node("b", labels={"pool": "x"}), _node("a", labels={"pool": "x"}), _node("c"), _node("d", cordoned=True)]
    )
    assert [n["metadata"]["name"] for n in lowering.target_nodes(facts, {"nodeSelector": {"pool": "x"}})] == ["a", "b"]
    assert [n["metadata"]["name"] for n in lowering.target_nodes(facts, None)] == ["a", "b", "c"]
    assert lowering.target_nodes(facts, {"nodeSelector": {"pool": "none"}}) == ()
    assert lowering.target_nodes(facts, {"nodeSelector": "not a map"}) == ()  # malformed: no nodes


def test_access_reviews_ask_about_the_run_namespace_alone() -> None:
    reviews = lowering.access_reviews("team-a")
    assert reviews and all(r["kind"] == "SelfSubjectAccessReview" for r in reviews)
    attributes = [r["spec"]["resourceAttributes"] for r in reviews]
    assert {a["namespace"] for a in attributes} == {"team-a"}
    assert {"configmaps", "trainjobs"} <= {a["resource"] for a in attributes}
    assert lowering.access_reviews("team-b") != reviews


def test_durations_read_and_print_go_duration_text() -> None:
    assert lowering.parse_duration("1h30m") == 5400.0
    assert lowering.format_duration(90) == "1m30s"
    assert lowering.duration_limit("not a duration", 60.0) == 60.0
    assert lowering.duration_limit("2m", 60.0) == 120.0
    with pytest.raises(ValueError):
        lowering.parse_duration("ten")


def test_the_door_no_longer_spells_a_vocabulary_name() -> None:
    names = set(lowering.__all__)
    assert all(hasattr(lowering, n) for n in names)
    assert not names & set(vocabulary.__all__), "tiers read vocabulary names from the vocabulary itself"
