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
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any, Iterable

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import SafeRepresenter
from ruamel.yaml.resolver import VersionedResolver

__all__ = ["canonicalize", "dump_yaml", "dump_yaml_stream", "dump_json", "DOCUMENT_SEPARATOR"]

DOCUMENT_SEPARATOR = "---\n"

# Resolvers for both YAML versions, to ask "would a reader take this plain scalar for a non-string?".
_RESOLVERS = [VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))]

_STR_TAG = "tag:yaml.org,2002:str"
# Go's YAML 1.1 reader also treats these as booleans or special; ruamel's 1.1 resolver knows most,
# this list closes the gap for single letters and sexagesimal-looking numbers.
_EXTRA_AMBIGUOUS = re.compile(
    r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|=|<<)$"
)


def _ambiguous(text: str) -> bool:
    """True when some YAML reader would not read ``text`` back as a string if written plain."""
    if text == "" or _EXTRA_AMBIGUOUS.match(text):
        return True
    for resolver in _RESOLVERS:
        tag = resolver.resolve(ScalarNode, text, (True, False))
        if tag != _STR_TAG:
            return True
    return False


class _CanonicalRepresenter(SafeRepresenter):
    """Represents plain data only; strings get the quoting rules described above."""

    def ignore_aliases(self, data: Any) -> bool:  # never emit anchors
        return True

    def represent_str(self, data: str) -> Any:
        if "\n" in data and _block_safe(data):
            return self.represent_scalar(_STR_TAG, data, style="|")
        if _ambiguous(data) or not data.isprintable():
            return self.represent_scalar(_STR_TAG, data, style='"')
        return self.represent_scalar(_STR_TAG, data)

    def represent_float(self, data: float) -> Any:
        if math.isnan(data) or math.isinf(data):
            raise ValueError("NaN and infinity have no JSON form and are not emitted")
        if data.is_integer() and abs(data) < 1e15:
            text = str(int(data))
        else:
            text = repr(data)
        return self.represent_scalar("tag:yaml.org,2002:float", text)

    def represent_dict(self, data: dict) -> Any:
        return self.represent_mapping("tag:yaml.org,2002:map", sorted(data.items(), key=_key_bytes))


def _key_bytes(item: tuple[Any, Any]) -> bytes:
    return str(item[0]).encode("utf-8")


def _block_safe(text: str) -> bool:
    """A literal block cannot carry control characters, trailing spaces on lines, or a leading blank line."""
    if text.startswith((" ", "\n")) or not all(line.isprintable() for line in text.split("\n")):
        return False
    return all(line == line.rstrip(" ") for line in text.split("\n"))


_CanonicalRepresenter.add_representer(str, _CanonicalRepresenter.represent_str)
_CanonicalRepresenter.add_representer(float, _CanonicalRepresenter.represent_float)
_CanonicalRepresenter.add_representer(dict, _CanonicalRepresenter.represent_dict)


def _make_yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _CanonicalRepresenter
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.width = 1 << 30
    yaml.allow_unicode = True
    yaml.explicit_start = False
    yaml.sort_base_mapping_type_on_output = False  # our representer sorts by bytes
    return yaml


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
    stream = io.StringIO()
    _make_yaml().dump(canonicalize(document), stream)
    text = stream.getvalue()
    # ruamel ends a bare top-level scalar with an explicit document end marker; drop it.
    if text.endswith("\n...\n"):
        text = text[: -len("...\n")]
    return text


def dump_yaml_stream(documents: Iterable[Any]) -> str:
    """Several documents separated by ``---`` lines: none before the first, none after the last."""
    return DOCUMENT_SEPARATOR.join(dump_yaml(doc) for doc in documents)


def dump_json(value: Any) -> str:
    """Indented JSON with sorted keys and a trailing newline."""
    return json.dumps(canonicalize(value), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
