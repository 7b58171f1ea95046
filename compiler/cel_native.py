"""Decides the simple CEL conditions of overlays in Python, so a render need not load cel-python.

Overlay ``when.expression`` conditions are field tests over a handful of strings and the
resolved options: ``options.mlnxPerNode > 0``, ``entry.startsWith("training/")``,
``gpuArchitecture in ["gb200", "gb300"]``, joined with ``&&``, ``||`` and ``!``. This module
parses that subset of CEL (literals, the activation's variables, field selection, ``has()``,
``startsWith``/``endsWith``/``contains``, comparisons, ``in`` a list literal, the logical
operators) and evaluates it over plain data.

It only ever answers when cel-python would give the same boolean: an expression outside the
subset, an operand of a type the operator is not certain to accept, a null, a value CEL could
not hold, or a result that is not a boolean all make ``decide`` return None, and the caller
asks cel-python, which stays the definition (errors included). ``&&`` and ``||`` keep CEL's
commutative rule for a missing field: ``false && options.absent`` is false, as in CEL.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping

__all__ = ["decide", "supported"]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<op>&&|\|\||==|!=|<=|>=|<|>|!|\(|\)|\[|\]|,|\.)
      | "(?P<dq>[^"\\\n]*)"
      | '(?P<sq>[^'\\\n]*)'
      | (?P<int>0|[1-9][0-9]*)(?![0-9A-Za-z_.])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
#: CEL's reserved words: never a variable or a field name here.
_RESERVED = frozenset(
    "true false null in as break const continue else for function if import let loop package namespace return var void while".split()
)
_METHODS = frozenset({"startsWith", "endsWith", "contains"})
_RELATIONS = {"==", "!=", "<", "<=", ">", ">=", "in"}


class _Unsupported(Exception):
    """The expression is outside the subset."""


class _Undecided(Exception):
    """This evaluation is not certain to match cel-python's."""


class _Missing(_Undecided):
    """A selected field is absent: an error value in CEL, which ``&&``/``||`` may absorb."""


Node = tuple[Any, ...]


def _tokens(expression: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    position, end = 0, len(expression)
    while True:
        while position < end and expression[position].isspace():
            position += 1
        if position >= end:
            return out
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise _Unsupported(expression[position:])
        position = match.end()
        if match.group("op") is not None:
            out.append(("op", match.group("op")))
        elif match.group("dq") is not None:
            out.append(("lit", match.group("dq")))
        elif match.group("sq") is not None:
            out.append(("lit", match.group("sq")))
        elif match.group("int") is not None:
            value = int(match.group("int"))
            if value >= 2**63:
                raise _Unsupported("integer literal out of range")
            out.append(("lit", value))
        else:
            name = match.group("name")
            if name == "true" or name == "false":
                out.append(("lit", name == "true"))
            elif name == "in":
                out.append(("op", "in"))
            else:
                out.append(("name", name))


class _Parser:
    """Recursive descent over CEL's precedence: ``||`` < ``&&`` < relations < ``!`` < member."""

    def __init__(self, tokens: list[tuple[str, Any]], variables: frozenset[str]):
        self.tokens, self.at, self.variables = tokens, 0, variables

    def peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, kind: str, value: Any = None) -> Any:
        token = self.peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            raise _Unsupported(f"expected {value or kind}")
        self.at += 1
        return token[1]

    def accept(self, value: str) -> bool:
        if self.peek() == ("op", value):
            self.at += 1
            return True
        return False

    def whole(self) -> Node:
        node = self.disjunction()
        if self.peek() is not None:
            raise _Unsupported("trailing tokens")
        return node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.accept("||"):
            node = ("or", node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.relation()
        while self.accept("&&"):
            node = ("and", node, self.relation())
        return node

    def relation(self) -> Node:
        node = self.unary()
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in _RELATIONS:
            self.at += 1
            right = self.list_literal() if token[1] == "in" else self.unary()
            node = ("rel", token[1], node, right)
            following = self.peek()
            if following is not None and following[0] == "op" and following[1] in _RELATIONS:
                raise _Unsupported("chained relations")
        return node

    def list_literal(self) -> Node:
        self.take("op", "[")
        items: list[Any] = []
        if not self.accept("]"):
            while True:
                items.append(self.take("lit"))
                if self.accept("]"):
                    break
                self.take("op", ",")
        if len({_kind(item) for item in items}) > 1:
            raise _Unsupported("a list of mixed types")
        return ("list", tuple(items))

    def unary(self) -> Node:
        if self.accept("!"):
            if self.peek() == ("op", "!"):
                raise _Unsupported("repeated negation")
            return ("not", self.member())
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while self.accept("."):
            name = self.take("name")
            if name in _RESERVED:
                raise _Unsupported(name)
            if self.accept("("):
                if name not in _METHODS:
                    raise _Unsupported(name)
                argument = self.disjunction()
                self.take("op", ")")
                node = ("call", name, node, argument)
            else:
                node = ("select", node, name)
        return node

    def primary(self) -> Node:
        token = self.peek()
        if token is None:
            raise _Unsupported("unexpected end")
        kind, value = token
        self.at += 1
        if kind == "lit":
            return ("lit", value)
        if kind == "op" and value == "(":
            node = self.disjunction()
            self.take("op", ")")
            return node
        if kind == "name" and value == "has" and self.accept("("):
            target = self.member()
            self.take("op", ")")
            if target[0] != "select":
                raise _Unsupported("has() needs a field selection")
            return ("has", target[1], target[2])
        if kind == "name" and value in self.variables and value not in _RESERVED:
            return ("var", value)
        raise _Unsupported(str(value))


def _kind(value: Any) -> str | None:
    """The CEL type of a scalar this module compares, or None for anything else."""
    if type(value) is bool:
        return "bool"
    if type(value) is int:
        return "int"
    if type(value) is str:
        return "string"
    return None


def _scalar(value: Any) -> Any:
    if _kind(value) is None:
        raise _Undecided("not a string, integer or boolean")
    return value


def _evaluate(node: Node, activation: Mapping[str, Any]) -> Any:
    step = _STEPS.get(node[0])
    if step is None:
        raise _Undecided(node[0])
    return step(node, activation)


def _variable(node: Node, activation: Mapping[str, Any]) -> Any:
    value = activation[node[1]]
    if value is None:
        raise _Undecided("null")
    return value


def _select(node: Node, activation: Mapping[str, Any]) -> Any:
    target = _evaluate(node[1], activation)
    if type(target) is not dict:
        raise _Undecided("selection on a value that is not a map")
    if node[2] not in target:
        raise _Missing(node[2])
    value = target[node[2]]
    if value is None:
        raise _Undecided("null")
    return value


def _has(node: Node, activation: Mapping[str, Any]) -> bool:
    target = _evaluate(node[1], activation)
    if type(target) is not dict:
        raise _Undecided("has() on a value that is not a map")
    if target.get(node[2], False) is None:
        raise _Undecided("null")
    return node[2] in target


def _negate(node: Node, activation: Mapping[str, Any]) -> bool:
    value = _evaluate(node[1], activation)
    if type(value) is not bool:
        raise _Undecided("! of a value that is not a boolean")
    return not value


def _string_call(node: Node, activation: Mapping[str, Any]) -> bool:
    target = _evaluate(node[2], activation)
    argument = _evaluate(node[3], activation)
    if type(target) is not str or type(argument) is not str:
        raise _Undecided("string method on a value that is not a string")
    if node[1] == "startsWith":
        return target.startswith(argument)
    if node[1] == "endsWith":
        return target.endswith(argument)
    return argument in target


#: How each node of the tree evaluates, by its tag.
_STEPS: dict[str, Callable[[Node, Mapping[str, Any]], Any]] = {
    "lit": lambda node, _: node[1],
    "var": _variable,
    "select": _select,
    "has": _has,
    "not": _negate,
    "and": lambda node, activation: _logical(True, node[1], node[2], activation),
    "or": lambda node, activation: _logical(False, node[1], node[2], activation),
    "rel": lambda node, activation: _relation(node[1], node[2], node[3], activation),
    "call": _string_call,
}


def _logical(conjunction: bool, left: Node, right: Node, activation: Mapping[str, Any]) -> bool:
    """CEL's ``&&``/``||``: the absorbing value (false/true) wins even over a missing field."""
    absorbing = not conjunction
    values: list[Any] = []
    missing = False
    for side in (left, right):
        try:
            value = _evaluate(side, activation)
        except _Missing:
            missing = True
            continue
        if type(value) is not bool:
            raise _Undecided("logical operand that is not a boolean")
        values.append(value)
    if absorbing in values:
        return absorbing
    if missing:
        raise _Undecided("missing field")
    return not absorbing


def _relation(operator: str, left_node: Node, right_node: Node, activation: Mapping[str, Any]) -> bool:
    left = _scalar(_evaluate(left_node, activation))
    if operator == "in":
        items = right_node[1]
        if items and _kind(items[0]) != _kind(left):
            raise _Undecided("an item of another type than the list's")
        return left in items
    right = _scalar(_evaluate(right_node, activation))
    kind = _kind(left)
    if kind != _kind(right):
        raise _Undecided("operands of different types")
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if kind != "int":
        raise _Undecided("ordering of values that are not integers")
    if operator == "<":
        return bool(left < right)
    if operator == "<=":
        return bool(left <= right)
    if operator == ">":
        return bool(left > right)
    return bool(left >= right)


@lru_cache(maxsize=1024)
def _compiled(expression: str, variables: frozenset[str]) -> Node | None:
    try:
        return _Parser(_tokens(expression), variables).whole()
    except _Unsupported:
        return None


def supported(expression: str, variables: frozenset[str]) -> bool:
    """True when ``expression`` is in the subset this module evaluates."""
    return _compiled(expression, variables) is not None


def decide(expression: str, activation: Mapping[str, Any], ready: Callable[[Any], bool]) -> bool | None:
    """The boolean cel-python gives ``expression`` over ``activation``, or None when unsure.

    ``ready`` says whether the activation is data cel-python converts whole (it converts every
    variable before evaluating, so a value it refuses anywhere is an error, never an answer).
    """
    node = _compiled(expression, frozenset(activation))
    if node is None or not ready(activation):
        return None
    try:
        value = _evaluate(node, activation)
    except _Undecided:
        return None
    return value if type(value) is bool else None
