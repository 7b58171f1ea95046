"""What a template reads of the values it is rendered with, so a render can be memoised by that alone.

The render memo of ``templating`` keys a render by its template and values. Rendering the catalog
for another platform or GPU hands a template values that differ only where it never looks (the
cluster's platform for a template that reads only the options, say), and a key made of all the
values misses every time although the text comes out the same. This module finds, from a
template's syntax tree, every place it can read a value: a name followed by constant attribute
or key steps (``o.nodesPerJob``, ``entry["name"]``). The key is then those places' values.

The analysis is conservative. A name used any other way (passed whole to a filter, iterated,
indexed by an expression) is read whole, and so is a value where a step could reach something
other than a mapping's item (a method of a dict, an attribute of a string or a list). Templates
that share their context are followed: a static ``include`` and an ``import ... with context``
add the other template's reads. A template that reads in a way the analysis does not follow
(``extends`` and blocks, an include or import whose name is computed, context references from
extensions) has no reads (None), and its renders are keyed by all their values, as before.

:func:`project` turns values into the key's part: for each path, how deep the walk went and what
it found there (the value, whole, or that the name or key is missing). Two sets of plain values
with the same projection render the same text: along each path the template meets the same
mappings and the same final value, and it reads nothing else of them.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from jinja2 import nodes

__all__ = ["Reads", "MISSING", "own_reads", "merged", "project", "to_data", "from_data"]


class Reads(NamedTuple):
    """One template's own reads, and the templates rendered with its context."""

    #: each path is a name then attribute or key steps, sorted, none a prefix of another
    paths: tuple[tuple[str, ...], ...]
    #: templates rendered with this template's context (static include, import with context), sorted
    shares_context_with: tuple[str, ...]


#: What a projection records where a name or key is absent.
MISSING = "missing"

#: Nodes through which a template reads in ways the walk does not follow.
_UNFOLLOWED = (
    nodes.Extends,
    nodes.Block,
    nodes.ContextReference,
    nodes.DerivedContextReference,
    nodes.ExtensionAttribute,
    nodes.ImportedName,
    nodes.EvalContextModifier,
    nodes.OverlayScope,
)

#: Names a dict answers as attributes (``items``, ``get``, dunders): Jinja's ``.`` reaches those
#: first, so a step with one of these names is never followed into the mapping.
_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Unfollowed(Exception):
    """The template reads its values in a way the analysis does not follow."""


def _static_name(template: nodes.Expr) -> str:
    if isinstance(template, nodes.Const) and type(template.value) is str:
        return template.value
    raise _Unfollowed


def _chain(node: nodes.Node) -> tuple[str, ...] | None:
    """The path of a name followed by constant attribute or key steps, or None for anything else."""
    steps: list[str] = []
    while True:
        if isinstance(node, nodes.Getattr):
            steps.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and type(node.arg.value) is str:
            steps.append(node.arg.value)
            node = node.node
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            return (node.name, *reversed(steps))
        else:
            return None


def _walk(node: nodes.Node, paths: set[tuple[str, ...]], shared: set[str]) -> None:
    path = _chain(node)
    if path is not None:
        paths.add(path)
        return
    if isinstance(node, _UNFOLLOWED):
        raise _Unfollowed
    if isinstance(node, nodes.Include):
        shared.add(_static_name(node.template))
    elif isinstance(node, (nodes.Import, nodes.FromImport)):
        name = _static_name(node.template)
        if node.with_context:
            shared.add(name)  # without context, the imported template sees the globals only
    elif isinstance(node, nodes.NSRef):
        paths.add((node.name,))
    for child in node.iter_child_nodes():
        _walk(child, paths, shared)


def _without_extensions(paths: Iterable[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """The paths, sorted, without those below another one (reading a value whole reads its parts)."""
    kept: list[tuple[str, ...]] = []
    for path in sorted(set(paths)):
        if not any(path[: len(prefix)] == prefix for prefix in kept):
            kept.append(path)
    return tuple(kept)


def own_reads(environment: Any, source: str, name: str | None = None) -> Reads | None:
    """The reads of one template's ``source``, parsed in ``environment``; None when not followed.

    A source Jinja cannot parse has no reads either: rendering it reports the error.
    """
    try:
        tree = environment.parse(source, name)
    except Exception:  # noqa: BLE001 - a broken template is reported when it is rendered, not here
        return None
    paths: set[tuple[str, ...]] = set()
    shared: set[str] = set()
    try:
        _walk(tree, paths, shared)
    except (_Unfollowed, RecursionError):
        return None
    return Reads(_without_extensions(paths), tuple(sorted(shared)))


def merged(readings: Iterable[Reads]) -> tuple[tuple[str, ...], ...]:
    """The paths of several templates together (a template and those that share its context)."""
    return _without_extensions(path for reads in readings for path in reads.paths)


def project(values: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> list[tuple[Any, ...]]:
    """For each path: (steps walked, value found there) or (steps walked, ``MISSING``).

    The walk starts at the name's value and follows a step only into a dict that has no
    attribute of that name; it stops, recording the value whole, at anything else. The caller
    checks that the recorded values are plain data before using their ``repr`` as a key.
    """
    out: list[tuple[Any, ...]] = []
    for path in paths:
        if path[0] not in values:
            out.append((0, MISSING))
            continue
        value = values[path[0]]
        depth = 0
        missing = False
        for step in path[1:]:
            if type(value) is not dict or step in _DICT_ATTRIBUTES:
                break
            if step not in value:
                missing = True
                depth += 1
                break
            value = value[step]
            depth += 1
        out.append((depth, MISSING) if missing else (depth, "value", value))
    return out


def to_data(reads: Reads | None) -> list[Any] | None:
    """JSON form of ``reads`` for the template snapshot."""
    if reads is None:
        return None
    return [[list(path) for path in reads.paths], list(reads.shares_context_with)]


def from_data(data: Any) -> Reads | None:
    """``reads`` back from its JSON form; None for anything that is not one."""
    if not (type(data) is list and len(data) == 2 and type(data[0]) is list and type(data[1]) is list):
        return None
    paths, shared = data
    if not all(type(path) is list and path and all(type(step) is str for step in path) for path in paths):
        return None
    if not all(type(name) is str for name in shared):
        return None
    return Reads(tuple(tuple(path) for path in paths), tuple(shared))
