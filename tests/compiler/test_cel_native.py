"""The Python decider of simple conditions answers exactly as cel-python does, or not at all."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.compiler.cel import CELError, evaluate_bool
from nvcre.compiler.cel_native import decide, supported
from nvcre.compiler.overlays import _cel_takes_whole, load_overlays

_VARIABLES = frozenset({"platform", "gpuArchitecture", "entry", "launch", "sourceKind", "options"})

# Every construct of the subset, and its edges: absent fields, nulls, mixed types, absorption.
_EXPRESSIONS = [
    "options.a > 0",
    "options.a >= 1 && options.a <= 3",
    "options.a < 2 || options.a == 5",
    "options.a != 0",
    "options.flag",
    "!options.flag",
    "!has(options.a)",
    "has(options.a) && options.a > 0",
    'has(options.s) && options.s != "" && options.a > 0',
    "options.s == 'x'",
    'options.s in ["x", "y"]',
    "!(options.s in ['x'])",
    "options.a in [1, 2]",
    'options.s.startsWith("x")',
    "options.s.endsWith('y') || options.s.contains(\"z\")",
    "false && options.missing > 0",
    "options.missing > 0 && false",
    "true || options.missing == 'x'",
    "options.missing == 'x' || true",
    "false && !options.missing",
    "false && options.missing.startsWith('x')",
    "false && options.missing in ['x']",
    "true && options.missing > 0",
    "false || options.missing > 0",
    "false && options.s > 0",
    "options.a == true",
    "options.flag == 1",
    "options.s < 'y'",
    'entry.startsWith("training/") || !(gpuArchitecture in ["gb200", "gb300"])',
    'launch == "single" || gpuArchitecture != "a100"',
    "platform == 'aws' && (sourceKind == 'Certification' || launch == 'mpi')",
    "options.nested.a > 0",
    "has(options.nested.a)",
    "options.list in ['x']",
    "options.a in []",
    "1 == 1",
    "options.s in []",
]

_VALUES = [None, 0, 1, 2, 5, -1, True, False, "", "x", "xy", "zz", 1.0, 2.5, [1], {"a": 1}, {"a": None}]


def _activation(options: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    activation = {
        "platform": "aws",
        "gpuArchitecture": "h100",
        "entry": "communication/nccl-all-reduce",
        "launch": "mpi",
        "sourceKind": "Certification",
        "options": options,
    }
    activation.update(overrides)
    return activation


def _celpy(expression: str, activation: dict[str, Any]) -> bool | str:
    try:
        return evaluate_bool(expression, activation)
    except (CELError, Exception) as exc:  # noqa: BLE001 - any failure counts as "no answer"
        return f"error: {type(exc).__name__}"


def _agree(expression: str, activation: dict[str, Any]) -> bool | None:
    native = decide(expression, activation, _cel_takes_whole)
    if native is not None:
        assert native is _celpy(expression, activation), (expression, activation)
    return native


# About 18 s: every construct evaluated twice, natively and by cel-python; the full lane runs it.
@pytest.mark.slow
def test_every_construct_against_cel_python() -> None:
    decided = 0
    keys = ("a", "s", "flag", "nested", "list")
    for expression in _EXPRESSIONS:
        for a, s, flag in itertools.product(_VALUES, _VALUES, (True, False, None, 1, "x")):
            options = {key: value for key, value in zip(keys, (a, s, flag, {"a": a}, [s])) if value is not None}
            decided += _agree(expression, _activation(options)) is not None
            decided += _agree(expression, _activation({**options, "a": a, "s": s, "flag": flag})) is not None
    assert decided > 20000  # most cases are answered natively, not handed over


def test_every_overlay_condition_against_cel_python() -> None:
    expressions = sorted({o.when.expression for o in load_overlays().overlays if o.when.expression})
    assert expressions and all(supported(e, _VARIABLES) for e in expressions)
    options_cases = [
        {},
        {"mlnxPerNode": 0},
        {"mlnxPerNode": 8, "nicResourceName": "rdma/ib"},
        {"mlnxPerNode": 2, "nicResourceName": ""},
        {"enableMNNVL": True, "testScale": "intra-rack"},
        {"enableMNNVL": False, "rdmaDeviceAccess": "hostPath", "dcgmHost": "h:5555"},
        {"mlnxPerNode": "8"},
        {"enableMNNVL": None},
        {"testScale": "diagnose", "mlnxPerNode": 1},
    ]
    entries = ["communication/nccl-all-reduce", "communication/nccl-loopback", "training/nemotron5-8b", "diagnostics/dcgm-level4"]
    for expression in expressions:
        for options, entry, arch, launch in itertools.product(
            options_cases, entries, ["h100", "a100", "gb200", "gb300", "l40s"], ["mpi", "single"]
        ):
            _agree(expression, _activation(options, entry=entry, gpuArchitecture=arch, launch=launch))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(["", "x", "xy", "y"]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)


@settings(max_examples=300, deadline=None)
@given(
    expression=st.sampled_from(_EXPRESSIONS),
    options=st.dictionaries(
        st.sampled_from(["a", "s", "flag", "missing", "nested"]),
        st.one_of(_scalars, st.dictionaries(st.sampled_from(["a"]), _scalars, max_size=1)),
    ),
)
def test_random_options_against_cel_python(expression: str, options: dict[str, Any]) -> None:
    _agree(expression, _activation(options))


@pytest.mark.parametrize(
    "expression",
    [
        "size(options.env) > 0",
        "options.a + 1 > 0",
        "options['a'] > 0",
        "options.a > 0 ? true : false",
        "-options.a < 0",
        "options.a > 0.5",
        'options.s == "a\\"b"',
        "r'x' == options.s",
        "options.s.matches('x')",
        "unknown == 'x'",
        "options.a == 0x1",
        "1 < options.a < 3",
        "!!options.flag",
        "options.in > 0",
        "options.exists(k, k == 'a')",
        "options.a > 99999999999999999999",
        "'a' in ['a', 1]",
        "",
    ],
)
def test_outside_the_subset_is_left_to_cel_python(expression: str) -> None:
    assert not supported(expression, _VARIABLES)
    assert decide(expression, _activation({"a": 1, "s": "x", "flag": True}), _cel_takes_whole) is None


def test_data_cel_python_refuses_is_never_decided() -> None:
    huge = _activation({"a": 1, "other": 2**70})
    assert decide("options.a > 0", huge, _cel_takes_whole) is None
    assert decide("options.a > 0", _activation({"a": 1, "odd": {1, 2}}), _cel_takes_whole) is None
    assert decide("options.a > 0", _activation({"a": 1}), _cel_takes_whole) is True
