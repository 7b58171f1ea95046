"""Target node selection: which Nodes a certification's ``target`` selects.

The filters are ANDed, in this order: ``nodeSelector`` (exact label values),
``matchExpressions`` (In, NotIn, Exists, DoesNotExist, Gt, Lt), ``nodeNames``, ``taintSelectors``
(a node must carry every listed taint; an empty value or effect matches any). Cordoned nodes
(``spec.unschedulable``) are then left out unless a taint selector names
``node.kubernetes.io/unschedulable``, and nodes not labelled ``nvidia.com/gpu.present=true``
are left out always. The result is sorted by name.

``Gt`` and ``Lt`` follow Kubernetes' node affinity: they take exactly one value, an integer,
and a node matches when its label is present, reads as a 64-bit signed integer and is greater
(less) than that value; a node whose label is absent or not an integer does not match.

Nodes the selectors simply do not match are not "excluded", they were never targeted; the
exception is a node listed by name in ``nodeNames``, whose rejection is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Sequence

from ..diagnostics import Diagnostic, error, info, warning
from ..facts import ClusterFacts, allocatable, annotations_of, is_cordoned, labels_of, name_of, taints_of
from .dra import dra_gpus_by_node
from .model import ExcludedNode, name_list, plural
from .products import GPU_PRODUCT_LABEL

__all__ = ["select_target_nodes", "GPU_PRESENT_LABEL", "GPU_PRODUCT_LABEL", "UNSCHEDULABLE_TAINT"]

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: the value form admission accepts for Gt and Lt (the CRD rule on NodeSelectorRequirement)
_INTEGER = re.compile(r"-?[0-9]+")
_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")

REASON_CORDONED = "cordoned (spec.unschedulable is true); a taintSelector for node.kubernetes.io/unschedulable opts it in"
REASON_NO_GPU_PRESENT = "not labelled nvidia.com/gpu.present=true"


@dataclass
class _Selection:
    """The nodes a target selects and those it leaves out, grouped by why."""

    selected: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[ExcludedNode] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    unlabeled_gpu: list[str] = field(default_factory=list)
    unlabeled_other: list[str] = field(default_factory=list)
    named_rejects: list[tuple[str, str]] = field(default_factory=list)


def _filter_nodes(facts: ClusterFacts, target: Mapping[str, Any], wanted: set[str] | None) -> _Selection:
    """Apply the filters, in the module's order, to every node of ``facts``."""
    selector: dict[str, str] = dict(target.get("nodeSelector") or {})
    expressions: list[dict[str, Any]] = list(target.get("matchExpressions") or [])
    taint_selectors: list[dict[str, Any]] = list(target.get("taintSelectors") or [])
    allow_cordoned = any(t.get("key") == UNSCHEDULABLE_TAINT for t in taint_selectors)
    out = _Selection()
    dra = None
    for node in facts.nodes:
        name = name_of(node)
        if wanted is not None and name not in wanted:
            continue
        labels = labels_of(node)
        miss = _selector_miss(labels, selector) or _expression_miss(labels, expressions) or _taint_miss(node, taint_selectors)
        if miss:
            if wanted is not None:
                out.excluded.append(ExcludedNode(name, f"listed in nodeNames but {miss}"))
                out.named_rejects.append((name, miss))
            continue
        if labels.get(GPU_PRESENT_LABEL) != "true":
            out.excluded.append(ExcludedNode(name, REASON_NO_GPU_PRESENT))
            if dra is None:
                dra = dra_gpus_by_node(facts)
            (out.unlabeled_gpu if _looks_like_gpu_node(node, labels, dra) else out.unlabeled_other).append(name)
            continue
        if is_cordoned(node) and not allow_cordoned:
            out.excluded.append(ExcludedNode(name, REASON_CORDONED))
            out.cordoned.append(name)
            continue
        out.selected.append(node)
    return out


def _named_notes(facts: ClusterFacts, wanted: set[str] | None, sel: _Selection, target_path: str) -> list[Diagnostic]:
    """Nodes listed by name that the facts lack, or that the other filters reject."""
    diags: list[Diagnostic] = []
    if wanted is not None:
        missing = sorted(wanted - {name_of(n) for n in facts.nodes})
        if missing:
            diags.append(
                warning(
                    "TargetNodeNotFound",
                    f"{target_path}.nodeNames",
                    f"{plural(len(missing), 'node')} listed in nodeNames {'is' if len(missing) == 1 else 'are'} not in the cluster facts: {name_list(missing)}",
                )
            )
    if sel.named_rejects:
        diags.append(
            warning(
                "NodeExcluded",
                target_path,
                f"{plural(len(sel.named_rejects), 'node')} listed in nodeNames {'fails' if len(sel.named_rejects) == 1 else 'fail'} "
                "the other target filters: " + name_list([f"{name} {miss}" for name, miss in sel.named_rejects]),
            )
        )
    return diags


def _left_out_notes(sel: _Selection, target_path: str) -> list[Diagnostic]:
    """Matched nodes left out because they are cordoned or lack the GPU-present label."""
    diags: list[Diagnostic] = []
    if sel.cordoned:
        n = len(sel.cordoned)
        diags.append(
            warning(
                "NodeExcluded",
                target_path,
                f"{plural(n, 'node')} matched the target but {'is' if n == 1 else 'are'} cordoned "
                f"(unschedulable): {name_list(sel.cordoned)}; add a taintSelector for {UNSCHEDULABLE_TAINT} to certify cordoned nodes",
            )
        )
    if sel.unlabeled_gpu:
        n = len(sel.unlabeled_gpu)
        diags.append(
            warning(
                "NodeExcluded",
                target_path,
                f"{plural(n, 'node')} with GPUs matched the target but {'is' if n == 1 else 'are'} not labelled "
                f"{GPU_PRESENT_LABEL}=true, so {'it is' if n == 1 else 'they are'} left out: {name_list(sel.unlabeled_gpu)}; "
                f"label {'it' if n == 1 else 'them'} {GPU_PRESENT_LABEL}=true to include {'it' if n == 1 else 'them'} (a DRA-only GPU stack does not set it)",
            )
        )
    if sel.unlabeled_other:
        n = len(sel.unlabeled_other)
        diags.append(
            info(
                "NodeExcluded",
                target_path,
                f"{plural(n, 'node')} without GPUs matched the target and {'is' if n == 1 else 'are'} "
                f"left out (no {GPU_PRESENT_LABEL}=true label): {name_list(sel.unlabeled_other)}",
            )
        )
    return diags


def select_target_nodes(
    facts: ClusterFacts,
    target: Mapping[str, Any] | None,
    *,
    target_path: str = "spec.target",
) -> tuple[tuple[dict[str, Any], ...], list[ExcludedNode], list[Diagnostic]]:
    """Return ``(nodes, excluded, diagnostics)`` for ``target`` over ``facts``.

    ``target`` is the plain-dict form of a TargetSpec (``None`` or ``{}`` selects every node).
    A malformed target gives error diagnostics and no nodes.
    """
    target = dict(target or {})
    diags = _validate(target, target_path)
    if diags:
        return (), [], diags
    names = target.get("nodeNames")
    wanted = set(names) if names else None
    sel = _filter_nodes(facts, target, wanted)
    diags = _named_notes(facts, wanted, sel, target_path) + _left_out_notes(sel, target_path)
    sel.excluded.sort()
    return tuple(sel.selected), sel.excluded, diags


def _selector_miss(labels: Mapping[str, str], selector: Mapping[str, str]) -> str:
    for key in sorted(selector):
        if labels.get(key) != selector[key]:
            return f"does not match nodeSelector {key}={selector[key]}"
    return ""


def _expression_miss(labels: Mapping[str, str], expressions: Sequence[Mapping[str, Any]]) -> str:
    for i, expr in enumerate(expressions):
        key, op = expr["key"], expr["operator"]
        values = list(expr.get("values") or [])
        present = key in labels
        if op in ("Gt", "Lt"):
            ok = _compares(labels.get(key), op, values[0])
        else:
            ok = {
                "In": present and labels.get(key) in values,
                "NotIn": not present or labels.get(key) not in values,
                "Exists": present,
                "DoesNotExist": not present,
            }[op]
        if not ok:
            return f"does not match matchExpressions[{i}] ({key} {op}{' ' + ','.join(values) if values else ''})"
    return ""


def _int64(text: str | None) -> int | None:
    """``text`` as a 64-bit signed integer the way Go's ``strconv.ParseInt(text, 10, 64)`` reads
    it (an optional sign, then decimal digits only), or None."""
    if not text:
        return None
    digits = text[1:] if text[0] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    significant = digits.lstrip("0")  # leading zeros carry no value (and may be many)
    if len(significant) > 19:  # more digits than any 64-bit integer has
        return None
    number = int(significant or "0") * (-1 if text[0] == "-" else 1)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _compares(label: str | None, op: str, value: str) -> bool:
    """Whether a node label satisfies ``Gt``/``Lt`` ``value``; an absent or non-integer label does not."""
    have, bound = _int64(label), _int64(value)
    if have is None or bound is None:
        return False
    return have > bound if op == "Gt" else have < bound


def _comparison_problem(op: str, values: list[str]) -> tuple[str, str] | None:
    """(field below the expression, message) when a ``Gt``/``Lt`` expression's values are not one
    64-bit integer in the form admission accepts, else None."""
    if len(values) != 1:
        return "values", f"operator {op} takes exactly one value, an integer"
    if not _INTEGER.fullmatch(values[0]) or _int64(values[0]) is None:
        return "values[0]", f"operator {op} needs a 64-bit integer value (digits, an optional leading -), got {values[0]!r}"
    return None


def _taint_miss(node: Mapping[str, Any], selectors: Sequence[Mapping[str, Any]]) -> str:
    taints = taints_of(node)
    for sel in selectors:
        if not any(_taint_matches(t, sel) for t in taints):
            shown = sel["key"] + (f"={sel['value']}" if sel.get("value") else "") + (f":{sel['effect']}" if sel.get("effect") else "")
            return f"does not carry taint {shown}"
    return ""


def _taint_matches(taint: Mapping[str, Any], sel: Mapping[str, Any]) -> bool:
    if taint.get("key") != sel["key"]:
        return False
    if sel.get("value") and taint.get("value", "") != sel["value"]:
        return False
    if sel.get("effect") and taint.get("effect", "") != sel["effect"]:
        return False
    return True


def _looks_like_gpu_node(node: Mapping[str, Any], labels: Mapping[str, str], dra: Mapping[str, Any]) -> bool:
    if labels.get(GPU_PRODUCT_LABEL):
        return True
    if allocatable(node).get("nvidia.com/gpu", Fraction(0)) > 0:
        return True
    found = dra.get(name_of(node))
    if found and found.gpu_count:
        return True
    from .hints import architecture_hint

    return architecture_hint(labels, annotations_of(node)) is not None


# --------------------------------------------------------------------------- validation


def _validate(target: Mapping[str, Any], path: str) -> list[Diagnostic]:
    problems = [
        *_selector_problems(target.get("nodeSelector")),
        *_expression_problems(target.get("matchExpressions")),
        *_name_problems(target.get("nodeNames")),
        *_taint_problems(target.get("taintSelectors")),
    ]
    return [error("InvalidTarget", f"{path}.{where}", message) for where, message in problems]


#: A problem of the target: the field under the target, and what is wrong with it.
_Problem = tuple[str, str]


def _selector_problems(selector: Any) -> list[_Problem]:
    if selector is None:
        return []
    if not isinstance(selector, Mapping):
        return [("nodeSelector", "expected a mapping of label keys to values")]
    return [
        (f"nodeSelector.{key}", "label values must be strings (quote true, false and numbers)")
        for key, value in selector.items()
        if not isinstance(value, str)
    ]


def _expression_problems(expressions: Any) -> list[_Problem]:
    if expressions is None:
        return []
    if not isinstance(expressions, list):
        return [("matchExpressions", "expected a list")]
    problems: list[_Problem] = []
    for i, expr in enumerate(expressions):
        where = f"matchExpressions[{i}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str) or not expr.get("key"):
            problems.append((where, "each expression needs a key"))
            continue
        problem = _operator_problem(expr.get("operator"), expr.get("values"))
        if problem:
            problems.append((f"{where}.{problem[0]}", problem[1]))
    return problems


def _operator_problem(op: Any, values: Any) -> _Problem | None:
    """What is wrong with one expression's operator and values (the field under the expression)."""
    if op not in _OPERATORS:
        return "operator", f"operator {op!r} is not supported: use {', '.join(_OPERATORS)}"
    if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
        return "values", "expected a list of strings"
    if op in ("In", "NotIn") and not values:
        return "values", f"operator {op} needs at least one value"
    if op in ("Exists", "DoesNotExist") and values:
        return "values", f"operator {op} takes no values"
    if op in ("Gt", "Lt"):
        return _comparison_problem(str(op), values or [])
    return None


def _name_problems(names: Any) -> list[_Problem]:
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) and n for n in names)):
        return [("nodeNames", "expected a list of node names")]
    return []


def _taint_problems(selectors: Any) -> list[_Problem]:
    if selectors is None:
        return []
    if not isinstance(selectors, list):
        return [("taintSelectors", "expected a list")]
    problems: list[_Problem] = []
    for i, sel in enumerate(selectors):
        where = f"taintSelectors[{i}]"
        if not isinstance(sel, Mapping) or not isinstance(sel.get("key"), str) or not sel.get("key"):
            problems.append((where, "each taint selector needs a key"))
            continue
        if sel.get("value") is not None and not isinstance(sel.get("value"), str):
            problems.append((f"{where}.value", "expected a string"))
        if (sel.get("effect") or "") not in _EFFECTS:
            problems.append((f"{where}.effect", f"effect must be one of {', '.join(e for e in _EFFECTS if e)} (or empty for any)"))
    return problems
