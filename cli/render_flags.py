"""What ``certification render`` does with its input and flags, free of Typer so the render fast path shares it.

Loading the document and the facts, ``--env-prefix`` variables, the ``--namespace`` check and
the namespace given to each Workflow: the Typer commands (through :mod:`nvcre.cli.common` and
:mod:`nvcre.cli.certification`) and :mod:`nvcre.cli.render_shortcut` call the same functions, so the
two ways to one render cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["check_namespace_flag", "flags_from_env", "in_namespace", "load_facts", "load_single"]


def flags_from_env(
    prefix: str | None, platform: str | None, gpu_arch: str | None, facts: Path | None
) -> tuple[str | None, str | None, Path | None]:
    """Fill flags the user left unset from ``<prefix>NVCRE_*`` variables (empty values count as unset)."""
    if prefix is None:
        return platform, gpu_arch, facts
    import os

    def value(name: str) -> str | None:
        return os.environ.get(f"{prefix}{name}") or None

    env_facts = value("NVCRE_FACTS")
    return (
        platform or value("NVCRE_PLATFORM"),
        gpu_arch or value("NVCRE_GPU_ARCH"),
        facts or (Path(env_facts) if env_facts else None),
    )


def check_namespace_flag(namespace: str | None) -> None:
    """``-n`` must be a namespace name (a DNS-1123 label); exit 2 otherwise."""
    import re

    from nvcre.compiler.diagnostics import CompileError, error

    if namespace is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", namespace):
        message = f"{namespace!r} is not a namespace name: lowercase letters, digits and '-', at most 63, starting and ending alphanumeric"
        raise CompileError([error("InvalidFlags", "--namespace", message)])


def in_namespace(workflows: list[Any], document: Any, namespace: str | None, label: str) -> list[Any]:
    """The Workflows with ``metadata.namespace`` set to ``-n`` (unchanged without it).

    The controller creates a Certification's Workflows in its namespace, so a Certification
    that names another namespace than ``-n`` is refused (exit 2), as kubectl refuses one.
    """
    if namespace is None:
        return workflows
    from nvcre.compiler.diagnostics import CompileError, error

    own = ((document.get("metadata") if isinstance(document, dict) else None) or {}).get("namespace")
    if own and own != namespace:
        message = f"the Certification is in namespace {own!r}, which does not match --namespace {namespace!r}"
        raise CompileError([error("NamespaceMismatch", f"{label}: metadata.namespace" if label else "metadata.namespace", message)])
    placed = []
    for workflow in workflows:
        meta = dict(workflow.get("metadata") or {})
        ordered = {"name": meta.pop("name")} if "name" in meta else {}
        placed.append({**workflow, "metadata": {**ordered, "namespace": namespace, **meta}})
    return placed


def load_single(path: Path) -> Any:
    """The one YAML document of ``path`` (``-`` reads standard input); CompileError otherwise."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import load_file

    docs = load_file(path)
    if len(docs) != 1:
        raise CompileError([error("MultipleDocuments", str(path), f"expected one document, found {len(docs)}")])
    return docs[0]


def load_facts(path: Any) -> Any:
    """Facts from a file (``-`` reads stdin); facts already read from a cluster pass through."""
    if path is None or not isinstance(path, (str, Path)):
        return path
    from nvcre.compiler.facts import load_facts as read_facts

    return read_facts(path)
