"""The Python forms of the API's string, key and quantity rules give cel-python's verdict."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.api.cel_eval import RuleError, evaluate_rule
from nvcre.compiler.api.cel_rules import (
    LABEL_KEY_RULES,
    NIC_RESOURCE_NAME_RULES,
    NON_NEGATIVE_QUANTITY,
    QUEUE_LABEL_KEY_RULES,
    SOURCE_REPO_HOST,
    SOURCE_REPO_SCHEME,
    THRESHOLD_KEYS_RULE,
    VALUE_FROM_FORBIDDEN,
    requests_within_limits,
)
from nvcre.compiler.api.native_rules import NATIVE_RULES

_PIECES = [
    "",
    "a",
    "Z9",
    "-",
    ".",
    "_",
    "/",
    "@",
    ":",
    "~",
    "%",
    "+",
    " ",
    "\n",
    "ü",
    "x" * 64,
    "y" * 254,
    "app.kubernetes.io/managed-by",
    "nvcre.nvidia.com/",
    "team.nvcre.nvidia.com/",
    "kubernetes.io/",
    "k8s.io/",
    ".k8s.io/",
    "https://",
    "ssh://",
    "http://",
    "git@",
    "host",
    "busBandwidthGBps",
    "goodputRatio",
    "1",
    "0.5",
    "Gi",
    "m",
    "e3",
    "-",
    "k",
    "E",
]
text = st.lists(st.sampled_from(_PIECES), max_size=5).map("".join)
amount = st.one_of(
    text,
    st.integers(-(2**40), 2**40),
    st.sampled_from(["1Gi", "500m", "-1", "0", "2k", "1e3", "1.5", "-0.5Mi", "9223372036854775808", ".5", "1E", True, None, 1.5]),
)
resources = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.one_of(st.fixed_dictionaries({}, optional={"cpu": amount, "memory": amount}), st.none(), st.just("x")),
        "limits": st.one_of(st.fixed_dictionaries({}, optional={"cpu": amount, "memory": amount}), st.none()),
    },
)

_TEXT_RULES = [*QUEUE_LABEL_KEY_RULES, *NIC_RESOURCE_NAME_RULES, SOURCE_REPO_SCHEME, SOURCE_REPO_HOST]
_KEY_RULES = [*LABEL_KEY_RULES, THRESHOLD_KEYS_RULE]
_RESOURCE_RULES = [requests_within_limits("cpu"), requests_within_limits("memory")]


def _cel(rule: str, value: Any) -> bool | None:
    try:
        return evaluate_rule(rule, value)
    except RuleError:
        return None


def _same(rule: str, value: Any) -> None:
    decided = NATIVE_RULES[rule](value)
    if decided is not None:
        assert decided == _cel(rule, value), (rule, value)


def test_every_simple_rule_has_a_python_form() -> None:
    for rule in [*_TEXT_RULES, *_KEY_RULES, *_RESOURCE_RULES, NON_NEGATIVE_QUANTITY, VALUE_FROM_FORBIDDEN]:
        assert rule.rule in NATIVE_RULES


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=text, keys=st.dictionaries(text, st.just("v"), max_size=4))
def test_text_and_key_rules_agree_with_cel(value: str, keys: dict[str, str]) -> None:
    for rule in _TEXT_RULES:
        _same(rule.rule, value)
    for rule in _KEY_RULES:
        _same(rule.rule, keys)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=amount, pair=resources)
def test_quantity_rules_agree_with_cel(value: Any, pair: dict[str, Any]) -> None:
    _same(NON_NEGATIVE_QUANTITY.rule, value)
    for rule in _RESOURCE_RULES:
        _same(rule.rule, pair)
        _same(rule.rule, {"requests": {"cpu": value, "memory": value}, "limits": {"cpu": value, "memory": value}})


def test_known_verdicts() -> None:
    reserved, label_keys, prefix = (NATIVE_RULES[r.rule] for r in LABEL_KEY_RULES)
    assert label_keys({"team": "a"}) is True and reserved({"team.nvcre.nvidia.com/x": "a"}) is False
    assert prefix({"a" * 254 + "/x": "v"}) is False and prefix({"a/x": "v"}) is True
    assert NATIVE_RULES[SOURCE_REPO_HOST.rule]("ssh://-oProxyCommand=x") is False
    assert NATIVE_RULES[SOURCE_REPO_SCHEME.rule]("http://h") is False
    assert NATIVE_RULES[NON_NEGATIVE_QUANTITY.rule]("-1Gi") is False
    assert NATIVE_RULES[NON_NEGATIVE_QUANTITY.rule]("not a quantity") is True
    within = NATIVE_RULES[requests_within_limits("cpu").rule]
    assert within({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}) is False
    assert within({"requests": {"cpu": 1}, "limits": {"cpu": "1500m"}}) is True
    assert within({"requests": {"cpu": "1"}, "limits": {"cpu": "1000m"}}) is True  # equal is within
    assert within({"requests": None, "limits": {}}) is None  # left to cel-python
    assert NATIVE_RULES[THRESHOLD_KEYS_RULE.rule]({"bogus": "value > 1"}) is False
