"""Estimates how many steps a CEL expression can take, so a costly one is refused before it runs.

cel-python has no cost limit: a node-health expression of five nested comprehensions over a
node's labels (``labels.all(a, labels.all(b, ...))``) ran for 31 s per node and stalled the Job
queue for every tenant. The estimate here follows the Kubernetes idea of a static cost: every
token of the parse tree costs one step, and the body of a comprehension macro (``all``,
``exists``, ``exists_one``, ``map``, ``filter``) costs its steps once per element of the
collection it walks. Collections are assumed to hold at most ``collection_size`` elements: the
validator assumes a generous size, the controller passes the largest collection of the node it is
about to judge, so both refuse the expression before cel-python spends the time.

Threshold expressions get the same estimate and the same limit (:func:`threshold_cost_problem`):
a threshold reads one double, so its only collections are the literals it writes itself, and six
nested comprehensions over a ten-element list literal (209 characters) would take about 135 s.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = [
    "ASSUMED_COLLECTION_SIZE",
    "MAX_HEALTH_STEPS",
    "MAX_THRESHOLD_STEPS",
    "estimated_steps",
    "health_cost_problem",
    "threshold_cost_problem",
]

#: Comprehension macros: their last argument runs once per element of the target collection.
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
#: A node's label, annotation and condition counts stay under this on real GPU nodes (feature
#: discovery adds about a hundred labels); validation assumes every collection is this large.
ASSUMED_COLLECTION_SIZE = 256
#: The most steps a health expression may take for one node. cel-python took 47-120 µs a step
#: in the expressions measured (2 vCPU Xeon), so this is at most about 1.2 s per node, and
#: verdicts of unchanged nodes are remembered. One comprehension with a body of up to about 38
#: tokens passes at the assumed size; two nested ones over a node's labels never do.
MAX_HEALTH_STEPS = 10_000
#: The most steps a threshold expression may take for one measured value. A threshold compares one
#: double (``value >= 900.0``: 3 steps); three nested comprehensions over ten-element literals
#: (3,222 steps) still pass, four (32,222) do not.
MAX_THRESHOLD_STEPS = 10_000
#: Returned for an expression too deep to walk: it is refused like an expensive one.
UNBOUNDED = 1 << 62


@lru_cache(maxsize=1024)
def estimated_steps(expression: str, collection_size: int) -> int | None:
    """The estimated steps of ``expression`` with collections of ``collection_size``, or None when it
    does not parse (cached: the controller asks again for every node it judges)."""
    from .cel_program import parse_expression  # loads cel-python only when an expression is estimated

    try:
        tree = parse_expression(expression)
    except Exception:  # noqa: BLE001 - cel-python raises parse errors of several types; compile reports them
        return None
    try:
        return min(_cost(tree, max(1, collection_size)), UNBOUNDED)
    except RecursionError:
        return UNBOUNDED


def _cost(node: Any, size: int) -> int:
    children = getattr(node, "children", None)
    if children is None:  # a token
        return 1
    if getattr(node, "data", None) == "member_dot_arg" and len(children) == 3 and str(children[1]) in MACROS:
        target, _, arguments = children
        body = sum(_cost(child, size) for child in getattr(arguments, "children", [])[1:])
        return _cost(target, size) + _elements(target, size) * (1 + body)
    return sum(_cost(child, size) for child in children) or 1


def _elements(target: Any, size: int) -> int:
    """How many elements a macro walks: a list literal's own count, else the assumed size."""
    node = target
    while getattr(node, "data", None) in ("member", "primary") and len(getattr(node, "children", ())) == 1:
        node = node.children[0]
    if getattr(node, "data", None) == "list_lit":
        items = node.children[0].children if node.children and hasattr(node.children[0], "children") else []
        return max(1, len(items))
    return size


def health_cost_problem(expression: str, collection_size: int = ASSUMED_COLLECTION_SIZE) -> str | None:
    """Why ``expression`` is too costly to judge a node with, or None (also when it does not parse)."""
    steps = estimated_steps(expression, collection_size)
    if steps is None or steps <= MAX_HEALTH_STEPS:
        return None
    shown = "too many steps to count" if steps >= UNBOUNDED else f"about {steps:,} steps"
    return (
        f"would take {shown} per node with collections of {collection_size} elements, over the limit "
        f"of {MAX_HEALTH_STEPS:,}; nest fewer comprehensions (all, exists, exists_one, map, filter)"
    )


def threshold_cost_problem(expression: str) -> str | None:
    """Why the threshold ``expression`` is too costly to judge a measured value with, or None
    (also when it does not parse: evaluation reports that)."""
    steps = estimated_steps(expression, ASSUMED_COLLECTION_SIZE)
    if steps is None or steps <= MAX_THRESHOLD_STEPS:
        return None
    shown = "too many steps to count" if steps >= UNBOUNDED else f"about {steps:,} steps"
    return (
        f"is too costly: it would take {shown} per measured value, over the limit of {MAX_THRESHOLD_STEPS:,}; "
        "a threshold compares one value (value >= 900.0), nest fewer comprehensions (all, exists, exists_one, map, filter)"
    )
