"""Distinct categories never share a Workflow: they render to distinct names or are refused.

A shared name made the controller run one Workflow and report its verdict for both categories,
so a category that never ran could read PASSED. The property draws category lists from a few
catalog entries with options inside and outside the name suffix, so collisions are frequent.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.api.validate import validate
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.naming import workflow_name
from nvcre.compiler.render import render_certification

KEYS = ["communication/nccl-all-reduce", "communication/nccl-loopback", "health/dcgm-diagnostics"]


def _document(name: str, categories: list[dict]) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name},
        "spec": {"target": {}, "categories": categories},
    }


def _category(key: str, options: dict) -> dict:
    domain, variant = key.split("/")
    return {"domain": domain, "variant": variant, **({"options": options} if options else {})}


options = st.fixed_dictionaries(
    {},
    optional={
        # in the name suffix
        "nodesPerJob": st.integers(1, 3),
        "testScale": st.sampled_from(["full-scale", "intra-node"]),
        # outside it
        "thresholds": st.sampled_from([{"busBandwidthGBps": "value >= 1.0"}, {"busBandwidthGBps": "value >= 1000.0"}]),
        "timeoutPerJob": st.sampled_from(["30m", "2h"]),
        "env": st.sampled_from([[{"name": "NCCL_DEBUG", "value": "INFO"}], [{"name": "NCCL_DEBUG", "value": "WARN"}]]),
    },
)
categories = st.lists(st.builds(_category, st.sampled_from(KEYS), options), min_size=1, max_size=4)
names = st.sampled_from(["c", "a-certification-name-long-enough-to-be-shortened"])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names, categories)
def test_distinct_categories_get_distinct_workflows_or_an_error(name: str, cats: list[dict]) -> None:
    document = _document(name, cats)
    distinct = len({json.dumps(c, sort_keys=True) for c in cats}) == len(cats)
    by_name: dict[str, set[str]] = {}
    for cat in cats:
        named = workflow_name(name, cat["domain"], cat["variant"], cat.get("options"))
        by_name.setdefault(named, set()).add(json.dumps(cat, sort_keys=True))
    shared = any(len(group) > 1 for group in by_name.values())
    try:
        rendered = render_certification(document, platform="onprem", gpu_arch="h100")
    except CompileError as exc:
        codes = {d.code for d in exc.errors}
        assert codes, "a refusal names at least one error"
        assert ("WorkflowNameCollision" in codes) == shared
        return
    assert not shared
    assert distinct, "an identical entry twice must be refused"
    workflow_names = [w["metadata"]["name"] for w in rendered.workflows]
    assert len(set(workflow_names)) == len(workflow_names) == len(cats)


def test_options_outside_the_suffix_are_refused_at_the_later_category() -> None:
    document = _document(
        "c",
        [
            _category("communication/nccl-all-reduce", {"nodesPerJob": 2, "thresholds": {"busBandwidthGBps": "value >= 1.0"}}),
            _category("communication/nccl-all-reduce", {"nodesPerJob": 2, "thresholds": {"busBandwidthGBps": "value >= 100000.0"}}),
        ],
    )
    problems = [d for d in validate(document) if d.is_error]
    assert [(d.code, d.path) for d in problems] == [("WorkflowNameCollision", "spec.categories[1]")]
    assert "c-communication-nccl-all-1d7b3" in problems[0].message
    assert "spec.categories[0]" in problems[0].message


def test_a_name_suffix_option_keeps_both_and_nvcre_names() -> None:
    document = _document(
        "c",
        [_category("communication/nccl-all-reduce", {"nodesPerJob": 2}), _category("communication/nccl-all-reduce", {"nodesPerJob": 4})],
    )
    assert [d for d in validate(document) if d.is_error] == []
    rendered = render_certification(document, platform="onprem", gpu_arch="h100")
    assert [w["metadata"]["name"] for w in rendered.workflows] == ["c-communication-nccl-all-1d7b3", "c-communication-nccl-all-237b4"]


def test_identical_entries_keep_their_own_error() -> None:
    same = _category("communication/nccl-loopback", {"env": [{"name": "A", "value": "1"}]})
    codes = [d.code for d in validate(_document("c", [same, dict(same)])) if d.is_error]
    assert "WorkflowNameCollision" not in codes and codes


def test_a_name_longer_than_a_label_value_is_refused() -> None:
    document = _document("x" * 64, [_category("communication/nccl-loopback", {})])
    problems = [(d.code, d.path) for d in validate(document) if d.is_error]
    assert ("NameTooLongForLabel", "metadata.name") in problems
    assert [d for d in validate(_document("x" * 63, [_category("communication/nccl-loopback", {})])) if d.is_error] == []
