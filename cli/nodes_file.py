"""``--nodes-file``: the Nodes a render plans over, read from a YAML file as NVCRE reads it.

NVCRE's ``workflow render --nodes-file`` reads one YAML sequence of Node objects (items need no
``kind``). The same file may also be written the way ``kubectl get nodes -o yaml`` prints it (a
``NodeList`` or ``List``) or as a stream of Node documents. Whatever the shape, the objects are
checked as cluster facts are (every problem with its path, exit 2), and a file that holds no Node
is refused. Only Nodes are read: a nodes file carries no ResourceSlices or Pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["load_nodes_file"]


def _as_documents(docs: list[Any], source: str) -> list[Any]:
    """NVCRE's one top-level sequence becomes a ``List`` of Nodes; other shapes pass as they are."""
    from nvcre.compiler.diagnostics import CompileError, error

    if len(docs) != 1 or not isinstance(docs[0], list):
        return docs
    items: list[Any] = []
    problems = []
    for index, item in enumerate(docs[0]):
        if not isinstance(item, dict):
            problems.append(
                error("NodesFileMalformed", f"{source}: [{index}]", f"expected a Node (a mapping), found {type(item).__name__}")
            )
            continue
        kind = item.get("kind") or "Node"
        if kind != "Node":
            problems.append(error("NodesFileMalformed", f"{source}: [{index}].kind", f"expected kind Node, got {kind!r}"))
            continue
        items.append({"apiVersion": "v1", **item, "kind": "Node"})
    if problems:
        raise CompileError(problems)
    return [{"apiVersion": "v1", "kind": "List", "items": items}]


def load_nodes_file(path: Path) -> Any:
    """Cluster facts holding the Nodes of ``path`` (``-`` reads stdin); CompileError (exit 2) otherwise."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.compiler.yamlio import FILE_LIMITS, load_documents, read_text

    source = "<stdin>" if str(path) == "-" else str(path)
    docs = load_documents(read_text(path, FILE_LIMITS.max_bytes or 0), source, limits=FILE_LIMITS)
    facts = facts_from_documents(_as_documents([d for d in docs if d is not None], source), source=source)
    if not facts.nodes:
        raise CompileError([error("NoNodes", source, "the nodes file holds no Node object")])
    if facts.resource_slices or facts.pods:
        raise CompileError(
            [error("NodesFileMalformed", source, "a nodes file holds Nodes only; give ResourceSlices and Pods with --facts")]
        )
    return facts
