"""Canonical YAML and JSON emission: the only place output bytes are decided.

The YAML follows the Kubernetes convention that ``sigs.k8s.io/yaml`` produces: mapping keys
sorted by their bytes, 2-space indentation, sequences not indented under their key, plain
scalars wherever that is unambiguous, no anchors or aliases, no line folding, and ``---``
between documents (never before the first or after the last). A string is quoted whenever
a YAML 1.1 *or* YAML 1.2 reader could take it for something other than a string (``yes``,
``on``, ``0755``, ``1e3``, ``null``, ``~``...), so every consumer reads back the same value.
Multi-line strings use the literal block style so scripts stay readable in review.

The output depends only on the data: the same value always gives the same bytes, whatever
the insertion order of its dicts or the interpreter's hash seed.

Documents are written by the purpose-built writer in ``emit_writer``; the few shapes it
declines (a bare scalar as a whole document, a key that cannot be a simple key, anything that
is not plain data) go through the reference emitter in ``emit_ruamel``, whose bytes the writer
matches exactly and which raises the errors for bad input.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from .emit_writer import Declined, write_document

__all__ = ["canonicalize", "dump_yaml", "dump_yaml_stream", "dump_json", "DOCUMENT_SEPARATOR"]

DOCUMENT_SEPARATOR = "---\n"


def canonicalize(value: Any) -> Any:
    """Return a plain-data copy: dicts with str keys, lists, str, int, float, bool, None.

    Tuples become lists, pydantic models are not accepted (dump them first). Raises
    TypeError for anything else, so that nothing non-deterministic reaches the emitter.
    """
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"mapping keys must be strings, got {type(key).__name__}: {key!r}")
            out[key] = canonicalize(item)
        return out
    if isinstance(value, (list, tuple)):
        return [canonicalize(item) for item in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"cannot emit a value of type {type(value).__name__}")


def dump_yaml(document: Any) -> str:
    """One document, ending with a newline, without a ``---`` marker."""
    try:
        return write_document(document)
    except Declined:
        from .emit_ruamel import dump_yaml_reference

        return dump_yaml_reference(canonicalize(document))


def dump_yaml_stream(documents: Iterable[Any]) -> str:
    """Several documents separated by ``---`` lines: none before the first, none after the last."""
    return DOCUMENT_SEPARATOR.join(dump_yaml(doc) for doc in documents)


def dump_json(value: Any) -> str:
    """Indented JSON with sorted keys and a trailing newline."""
    return json.dumps(canonicalize(value), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
