"""Evaluates CRD validation rules with cel-python, the way the API server evaluates them.

A rule sees the value of the schema node it sits on as ``self`` and, for transition rules on
update, the correlated old value as ``oldSelf``. Values are converted with the project's
shared CEL adapter. The Kubernetes quantity functions the rules use (``quantity``,
``isQuantity``, ``compareTo``) are supplied here, since cel-python does not ship them.
Programs are compiled once per rule text, in the environment ``nvcre.compiler.cel`` shares.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from ..cel import program, to_cel
from ..facts import parse_quantity
from .patterns import QUANTITY

__all__ = ["RuleError", "compile_rule", "evaluate_rule"]


class RuleError(ValueError):
    """A rule that does not compile, fails while evaluating, or does not give a boolean."""


_QUANTITY = re.compile(QUANTITY)


class _Quantity:
    """A quantity value inside CEL; only comparison is supported."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction):
        self.value = value


def _quantity(text: Any) -> _Quantity:
    """The quantity a string spells exactly as Kubernetes writes it; RuleError otherwise."""
    try:
        if not _QUANTITY.fullmatch(str(text)):
            raise ValueError(f"{str(text)!r} is not a quantity")
        return _Quantity(parse_quantity(str(text)))
    except ValueError as exc:
        raise RuleError(str(exc)) from None


def _is_quantity(text: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_QUANTITY.fullmatch(str(text)) is not None)


def _compare_to(left: _Quantity, right: _Quantity) -> celtypes.IntType:
    if not isinstance(left, _Quantity) or not isinstance(right, _Quantity):
        raise RuleError("compareTo needs two quantities")
    return celtypes.IntType((left.value > right.value) - (left.value < right.value))


_FUNCTIONS = {"quantity": _quantity, "isQuantity": _is_quantity, "compareTo": _compare_to}


_FUNCTION_ITEMS = tuple(sorted(_FUNCTIONS.items()))


def compile_rule(rule: str) -> Any:
    """A runnable program for one rule text (compiled once per text, in the shared CEL
    environment); RuleError when the text does not parse."""
    try:
        return program(rule, _FUNCTION_ITEMS)
    except CELParseError as exc:
        raise RuleError(f"cannot parse rule {rule!r}: {exc}") from None


def evaluate_rule(rule: str, self_value: Any, old_value: Any = None, *, transition: bool = False) -> bool:
    """True when the rule holds for ``self_value`` (and ``old_value`` for transition rules)."""
    try:
        activation = {"self": to_cel(self_value)}
        if transition:
            activation["oldSelf"] = to_cel(old_value)
    except ValueError as exc:  # a value CEL cannot hold; plain-data checks normally catch it first
        raise RuleError(str(exc)) from None
    try:
        result = compile_rule(rule).evaluate(activation)
    except RuleError:
        raise
    except Exception as exc:  # cel-python raises its own error types, and KeyError/TypeError from functions
        raise RuleError(f"rule {rule!r} failed: {_first_line(exc)}") from None
    if isinstance(result, CELEvalError) or not isinstance(result, celtypes.BoolType):
        raise RuleError(f"rule {rule!r} did not give a boolean: {_first_line(result)}")
    return bool(result)


def _first_line(value: Any) -> str:
    text = str(value.args[0] if isinstance(value, Exception) and value.args else value)
    return text.splitlines()[0][:200] if text else type(value).__name__
