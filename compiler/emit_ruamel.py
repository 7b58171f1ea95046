"""The reference emitter: canonical YAML through ruamel.yaml's representer and emitter.

This is the implementation the fast writer (``emit_writer``) must match byte for byte. The
project's output goes through ``emit.dump_yaml``; this module stays as the oracle the emitter
tests compare against, and as the path for the rare shapes the fast writer declines (a bare
scalar as a whole document, a mapping key that cannot be written as a simple key).

Quoting rules: a string is quoted whenever a YAML 1.1 *or* YAML 1.2 reader could take it for
something other than a string; multi-line strings use the literal block style when a literal
block can hold them exactly, double quotes otherwise.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import SafeRepresenter
from ruamel.yaml.resolver import VersionedResolver

__all__ = ["dump_yaml_reference", "ambiguous_reference"]

# Resolvers for both YAML versions, to ask "would a reader take this plain scalar for a non-string?".
_RESOLVERS = [VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2))]

_STR_TAG = "tag:yaml.org,2002:str"
# Go's YAML 1.1 reader also treats these as booleans or special; ruamel's 1.1 resolver knows most,
# this list closes the gap for single letters and sexagesimal-looking numbers.
_EXTRA_AMBIGUOUS = re.compile(
    r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|=|<<)$"
)


def ambiguous_reference(text: str) -> bool:
    """True when some YAML reader would not read ``text`` back as a string if written plain."""
    if text == "" or _EXTRA_AMBIGUOUS.match(text):
        return True
    for resolver in _RESOLVERS:
        tag = resolver.resolve(ScalarNode, text, (True, False))
        if tag != _STR_TAG:
            return True
    return False


def _block_safe(text: str) -> bool:
    """A literal block cannot carry control characters, trailing spaces on lines, or a leading blank line."""
    if text.startswith((" ", "\n")) or not all(line.isprintable() for line in text.split("\n")):
        return False
    return all(line == line.rstrip(" ") for line in text.split("\n"))


def _key_bytes(item: tuple[Any, Any]) -> bytes:
    return str(item[0]).encode("utf-8")


class _CanonicalRepresenter(SafeRepresenter):
    """Represents plain data only; strings get the quoting rules described above."""

    def ignore_aliases(self, data: Any) -> bool:  # never emit anchors
        return True

    def represent_str(self, data: str) -> Any:
        if "\n" in data and _block_safe(data):
            return self.represent_scalar(_STR_TAG, data, style="|")
        if ambiguous_reference(data) or not data.isprintable():
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

    def represent_dict(self, data: dict[str, Any]) -> Any:
        return self.represent_mapping("tag:yaml.org,2002:map", sorted(data.items(), key=_key_bytes))


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
    # The representer sorts by bytes; ruamel declares this attribute as None-typed.
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    return yaml


def dump_yaml_reference(plain: Any) -> str:
    """One document of already canonical data, ending with a newline, without a ``---`` marker."""
    stream = io.StringIO()
    _make_yaml().dump(plain, stream)
    text = stream.getvalue()
    # ruamel ends a bare top-level scalar with an explicit document end marker; drop it.
    if text.endswith("\n...\n"):
        text = text[: -len("...\n")]
    return text
