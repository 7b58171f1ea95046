"""Safe YAML input: documents in, plain data out, problems reported as diagnostics.

Only the safe loader is used (no Python object tags, no arbitrary constructors). Scalars are
resolved with YAML 1.1 rules, the rules ``kubectl`` applies, so ``value: yes`` is a boolean
here exactly as it is for the API server. Duplicate keys, syntax errors and non-mapping
documents are reported with the file name and position instead of a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .diagnostics import CompileError, Diagnostic, error

__all__ = ["load_documents", "load_file", "read_text"]


def _loader() -> YAML:
    # The libyaml-backed safe loader when available (several times faster), else the pure one;
    # both use the safe constructor and the same YAML 1.1 scalar rules.
    yaml = YAML(typ="safe")
    yaml.version = (1, 1)
    yaml.allow_duplicate_keys = False
    return yaml


def _position(exc: YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return ""
    return f":{mark.line + 1}:{mark.column + 1}"


#: Nodes a stream may expand to once its aliases are followed. Aliases load as shared objects,
#: but everything downstream (validation, rendering, copies) walks them expanded, so a few nested
#: anchors ("billion laughs") would otherwise cost billions of steps later.
MAX_EXPANDED_NODES = 2_000_000
_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s]")


def _check_expansion(docs: list[Any], source: str) -> None:
    budget = MAX_EXPANDED_NODES
    stack = list(docs)
    while stack:
        node = stack.pop()
        budget -= 1
        if budget < 0:
            raise CompileError(
                [error("YAMLTooLarge", source, f"the YAML expands to more than {MAX_EXPANDED_NODES} values once its aliases are followed")]
            )
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def load_documents(text: str, source: str = "<input>") -> list[Any]:
    """Parse a (multi-document) YAML stream; empty documents are dropped."""
    try:
        docs = [doc for doc in _loader().load_all(text) if doc is not None]
    except MarkedYAMLError as exc:
        problem = exc.problem or str(exc).splitlines()[0]
        raise CompileError([error("YAMLSyntax", f"{source}{_position(exc)}", f"invalid YAML: {problem}")]) from None
    except YAMLError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError([error("YAMLSyntax", source, f"invalid YAML: {first_line}")]) from None
    if _ANCHOR.search(text):  # only a stream with anchors can expand beyond its own size
        _check_expansion(docs, source)
    return docs


def read_text(path: str | Path) -> str:
    """Read a UTF-8 file; ``-`` reads standard input. Missing or unreadable files raise CompileError."""
    import sys

    if str(path) == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CompileError([error("FileNotFound", str(path), "no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CompileError([error("FileUnreadable", str(path), f"cannot read file: {exc}")]) from None


def load_file(path: str | Path) -> list[Any]:
    """Read and parse a YAML file, every document a mapping; anything else is an error."""
    docs = load_documents(read_text(path), str(path))
    problems: list[Diagnostic] = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            problems.append(
                error("DocumentNotMapping", f"{path}[{index}]", f"document {index + 1} is a {type(doc).__name__}, expected a mapping")
            )
    if problems:
        raise CompileError(problems)
    if not docs:
        raise CompileError([error("EmptyInput", str(path), "the file holds no YAML document")])
    return docs
