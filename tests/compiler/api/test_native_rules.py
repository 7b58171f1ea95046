"""The Python forms of the quadratic CEL rules give cel-python's verdict on every value they decide."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.api.cel_eval import RuleError, evaluate_rule
from nvcre.compiler.api.native_rules import NATIVE_RULES, merged_env_cap, unique_categories
from nvcre.compiler.api.validate import validate

names = st.sampled_from(["A", "B", "C", "NCCL_DEBUG", "X1"])
env = st.lists(st.fixed_dictionaries({"name": names}, optional={"value": st.sampled_from(["1", "2"])}), max_size=34)
labels = st.dictionaries(st.sampled_from([f"k{i}" for i in range(40)]), st.just("v"), max_size=34)
options = st.fixed_dictionaries(
    {},
    optional={
        "env": env,
        "workloadMetadata": st.fixed_dictionaries({}, optional={"labels": labels}),
        "nodesPerJob": st.sampled_from([1, 2, 2.0]),
    },
)
category = st.fixed_dictionaries(
    {"domain": st.just("communication"), "variant": st.sampled_from(["nccl-all-reduce", "nccl-alltoall"])},
    optional={"options": options},
)
spec = st.fixed_dictionaries(
    {"categories": st.lists(category, max_size=6)},
    optional={"env": env, "workloadMetadata": st.fixed_dictionaries({}, optional={"labels": labels})},
)


def _as_decoded(value: Any) -> Any:
    """Whole floats as integers: the API server decodes ``2.0`` in an integer field as 2, while
    cel-python refuses to compare an int with a double."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _as_decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_decoded(v) for v in value]
    return value


def _cel(rule: str, value: Any) -> bool | None:
    try:
        return evaluate_rule(rule, _as_decoded(value))
    except RuleError:
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec)
def test_native_rules_agree_with_cel(value: dict[str, Any]) -> None:
    for rule, native in NATIVE_RULES.items():
        subject = value["categories"] if "exists_one" in rule else value
        decided = native(subject)
        if decided is not None:
            assert decided == _cel(rule, subject), rule


def test_native_rules_decline_values_of_another_shape() -> None:
    assert unique_categories([{"domain": "communication"}]) is None
    assert unique_categories("x") is None
    assert merged_env_cap({"categories": [{"options": {"env": [{"value": "1"}]}}]}) is None


def test_sixty_four_categories_with_full_env_lists_validate_quickly() -> None:
    spec_env = [{"name": f"G{i}", "value": "x"} for i in range(32)]
    categories = [
        {
            "domain": "communication",
            "variant": "nccl-all-reduce",
            "options": {"nodesPerJob": i + 1, "env": [{"name": f"C{j}", "value": "x"} for j in range(32)]},
        }
        for i in range(64)
    ]
    doc = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "big"},
        "spec": {"target": {}, "env": spec_env, "categories": categories},
    }
    start = time.perf_counter()
    found = validate(doc)
    assert time.perf_counter() - start < 10  # about fifteen seconds when cel-python walked every pair
    assert [d.message for d in found] == ["spec.env and a category's options.env together name more than 32 variables"]
