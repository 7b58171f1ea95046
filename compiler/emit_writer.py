"""A purpose-built writer of canonical YAML over plain data (dicts, lists, str, int, float, bool, None).

It produces exactly the bytes of the reference emitter (``emit_ruamel``), which the emitter
tests hold it to, without building events or nodes: one recursive walk that appends text.

The layout is the block style of the Kubernetes convention: mapping keys sorted by their
bytes, two spaces per mapping level, sequences not indented under their key, ``{}`` and ``[]``
for empty collections, literal blocks for multi-line strings. A string is written

* as a literal block (``|``, ``|-`` or ``|+``) when it holds a line break and a literal block
  can carry it exactly (no leading space or break, no control characters, no trailing spaces);
* double-quoted when a YAML 1.1 or 1.2 reader could read it plain as another type, when it is
  not printable, or when it needs quotes and holds a single quote;
* plain when nothing in it starts a YAML indicator;
* single-quoted otherwise.

Shapes the writer does not reproduce raise ``Declined`` (a bare scalar as the whole document, a
key that is multi-line or 128 characters or longer, a non-string key, a value that is not plain
data); the caller then uses the reference path, which also raises the errors for bad input.

The text of each collection two levels below the document (a Workflow's ``spec.jobTemplate``,
``spec.dependencies``, ``metadata.labels``...) is remembered by its ``marshal`` serialisation
and its place (indent, first line inline or not): renders of one entry for other platforms or
options share most of those parts, and serialising one in C costs a fraction of writing it.
``marshal`` serialises only values of exact built-in types and tells every type apart (``1``
from ``True``, a list from a tuple), so two values with the same serialisation are the same
plain data and have the same text; anything it cannot serialise is written without the memo.
"""

from __future__ import annotations

import marshal
import math
import re
from typing import Any

__all__ = ["Declined", "write_document", "scalar_ambiguous"]


class Declined(Exception):
    """The value has a shape this writer does not reproduce; use the reference emitter."""


# Plain scalars that some YAML 1.1 or 1.2 resolver (or Go's 1.1 reader) turns into a
# non-string: booleans, nulls, numbers in every base and form, timestamps, merge and value keys.
_AMBIGUOUS = re.compile(
    r"""
    (?: [yYnN] | yes|Yes|YES | no|No|NO | true|True|TRUE | false|False|FALSE | on|On|ON | off|Off|OFF
      | ~ | null|Null|NULL
      | << | = | ! | & | \*
      | [-+]?0b[01_]+ | [-+]?0x[0-9a-fA-F_]+ | [-+]?0o[0-7_]+
      | [-+][0-9_]+ | [0-9][0-9_]*
      | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
      | [-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
      | [-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
      | [-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | [0-9]{4}-[0-9]{2}-[0-9]{2}
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?
    )""",
    re.VERBOSE,
)

# Characters a double-quoted scalar writes as an escape; everything else is written as is. They are
# the characters outside YAML's printable set (\x20-\x7e, \xa0-\ud7ff, \ue000-\ufffd,
# \U00010000-\U0010ffff), spelt here as that set's complement (a class listing the printable ranges
# takes milliseconds to compile, a noticeable part of a cold render), plus the double quote, the
# backslash, the line and paragraph separators and the byte-order mark.
_NEEDS_ESCAPE = re.compile('[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"\\\\\u2028\u2029\ufeff]')
_SHORT_ESCAPES = {
    "\0": "\\0",
    "\x07": "\\a",
    "\x08": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\x0b": "\\v",
    "\x0c": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}
# Keys with a line break (of any kind) or a lone surrogate are left to the reference emitter.
_KEY_DECLINED = re.compile("[\n\x85\u2028\u2029\ud800-\udfff]")
# A plain scalar may not start with an indicator, nor hold ": " or " #", nor end with ":".
_PLAIN_FIRST = frozenset("#,[]{}&*!|>'\"%@`")
# A key is written as a simple key while its length plus that of its implicit tag (``!!str``) stays
# under 128 characters, as the reference emitter decides.
_KEY_LIMIT = 128 - len("!!str")
# The style of each distinct string (and key) is decided once; the memo starts over when full.
_CACHE_LIMIT = 1 << 16
_CACHED_STRING_LIMIT = 1024


def scalar_ambiguous(text: str) -> bool:
    """True when some YAML reader would not read ``text`` back as a string if written plain."""
    return text == "" or _AMBIGUOUS.fullmatch(text) is not None


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _double_quoted(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _plain_allowed(text: str) -> bool:
    """For a printable, single-line, unambiguous, non-empty string: may it be written plain?"""
    first = text[0]
    if first == " " or text[-1] == " " or first in _PLAIN_FIRST or text.startswith(("---", "...")):
        return False
    if first in "?:-" and (len(text) == 1 or text[1] == " "):
        return False
    return not (": " in text or text[-1] == ":" or " #" in text)


def _block_safe(text: str) -> bool:
    if text[0] in " \n":
        return False
    for line in text.split("\n"):
        if not line.isprintable() or line.endswith(" "):
            return False
    return True


def _render_string(text: str) -> str | tuple[str, tuple[str, ...]]:
    """The inline form of a string, or (literal block header, body lines) for a literal block."""
    if "\n" in text and _block_safe(text):
        if text[-1] != "\n":
            header = "|-"
        elif text[-2] == "\n":
            header = "|+"
        else:
            header = "|"
        lines = text.split("\n")
        if text[-1] == "\n":
            lines.pop()
        return header, tuple(lines)
    if not text.isprintable() or scalar_ambiguous(text):
        return _double_quoted(text)
    if _plain_allowed(text):
        return text
    if "'" in text:
        return _double_quoted(text)
    return "'" + text + "'"


_strings: dict[str, str | tuple[str, tuple[str, ...]]] = {}
_keys: dict[str, str] = {}
#: (indent, first line inline, marshal serialisation) -> the collection's text; starts over when
#: it holds too many texts or too many characters (serialisations and texts together)
_chunks: dict[tuple[int, bool, bytes], str] = {}
_CHUNKS_LIMIT = 4096
_CHUNK_CHARS_LIMIT = 32 << 20
_chunk_chars = 0
#: ``marshal`` format 2: no back-references, so the serialisation depends on the value alone
_MARSHAL_FORMAT = 2
#: collections this many levels below the document go through the memo
_CHUNK_DEPTH = 2


def _string(text: str) -> str | tuple[str, tuple[str, ...]]:
    if len(text) > _CACHED_STRING_LIMIT:  # long texts (scripts, inline files) are rare and not kept
        return _render_string(text)
    rendered = _strings.get(text)
    if rendered is None:
        if len(_strings) >= _CACHE_LIMIT:
            _strings.clear()
        rendered = _strings[text] = _render_string(text)
    return rendered


def _key(key: Any) -> str:
    rendered = _keys.get(key) if type(key) is str else None
    if rendered is None:
        if type(key) is not str or len(key) >= _KEY_LIMIT or _KEY_DECLINED.search(key):
            raise Declined("key is not a simple string key")
        text = _render_string(key)
        if not isinstance(text, str):
            raise Declined("key needs a block scalar")
        if len(_keys) >= _CACHE_LIMIT:
            _keys.clear()
        rendered = _keys[key] = text
    return rendered


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and infinity have no JSON form and are not emitted")
    if value.is_integer() and abs(value) < 1e15:
        # Written as an integer, a float no longer resolves to a float: the tag says so.
        return f"!!float '{int(value)}'"
    return repr(value)


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _float(value)
    if value is None:
        return "null"
    raise Declined(f"not plain data: {kind.__name__}")


def _literal(out: list[str], header: str, lines: tuple[str, ...], indent: int) -> None:
    pad = " " * indent
    out.append(header + "\n")
    for line in lines:
        out.append(pad + line + "\n" if line else "\n")


def _collection(out: list[str], value: Any, indent: int, inline_first: bool, depth: int) -> None:
    """Write a non-empty dict (at ``indent``) or list, tuple (items at ``indent``), ``depth``
    levels below the document; at ``_CHUNK_DEPTH`` through the memo of texts."""
    if depth != _CHUNK_DEPTH:
        if isinstance(value, dict):
            _mapping(out, value, indent, inline_first, depth)
        else:
            _sequence(out, value, indent, inline_first, depth)
        return
    try:
        key: tuple[int, bool, bytes] | None = (indent, inline_first, marshal.dumps(value, _MARSHAL_FORMAT))
    except ValueError:  # not built-in data (a subclass, an object): written without the memo
        key = None
    text = _chunks.get(key) if key is not None else None
    if text is None:
        part: list[str] = []
        _collection(part, value, indent, inline_first, depth + 1)
        text = "".join(part)
        if key is not None:
            _remember_chunk(key, text)
    out.append(text)


def _remember_chunk(key: tuple[int, bool, bytes], text: str) -> None:
    global _chunk_chars
    size = len(key[2]) + len(text)
    if len(_chunks) >= _CHUNKS_LIMIT or _chunk_chars + size > _CHUNK_CHARS_LIMIT:
        _chunks.clear()
        _chunk_chars = 0
    _chunks[key] = text
    _chunk_chars += size


def _mapping(out: list[str], data: dict[str, Any], indent: int, inline_first: bool, depth: int) -> None:
    pad = " " * indent
    try:
        keys = sorted(data)
    except TypeError:
        raise Declined("keys of mixed types") from None
    below = depth + 1
    for position, key in enumerate(keys):
        if position or not inline_first:
            out.append(pad)
        out.append(_key(key))
        value = data[key]
        kind = type(value)
        if kind is str:
            text = _string(value)
            if isinstance(text, str):
                out.append(": " + text + "\n")
            else:
                out.append(": ")
                _literal(out, text[0], text[1], indent + 2)
        elif isinstance(value, dict):
            if value:
                out.append(":\n")
                _collection(out, value, indent + 2, False, below)
            else:
                out.append(": {}\n")
        elif isinstance(value, (list, tuple)):
            if value:
                out.append(":\n")
                _collection(out, value, indent, False, below)
            else:
                out.append(": []\n")
        else:
            out.append(": " + _scalar(value) + "\n")


def _sequence(out: list[str], items: list[Any] | tuple[Any, ...], indent: int, inline_first: bool, depth: int) -> None:
    pad = " " * indent
    below = depth + 1
    for position, item in enumerate(items):
        out.append("- " if position == 0 and inline_first else pad + "- ")
        kind = type(item)
        if kind is str:
            text = _string(item)
            if isinstance(text, str):
                out.append(text + "\n")
            else:
                _literal(out, text[0], text[1], indent + 2)
        elif isinstance(item, dict):
            if item:
                _collection(out, item, indent + 2, True, below)
            else:
                out.append("{}\n")
        elif isinstance(item, (list, tuple)):
            if item:
                _collection(out, item, indent + 2, True, below)
            else:
                out.append("[]\n")
        else:
            out.append(_scalar(item) + "\n")


def write_document(document: Any) -> str:
    """One document (a mapping or a sequence) as canonical YAML ending with a newline.

    Raises ``Declined`` for the shapes described in the module docstring and ValueError for
    NaN or infinity.
    """
    out: list[str] = []
    if isinstance(document, dict):
        if not document:
            return "{}\n"
        _mapping(out, document, 0, False, 0)
    elif isinstance(document, (list, tuple)):
        if not document:
            return "[]\n"
        _sequence(out, document, 0, False, 0)
    else:
        raise Declined("a bare scalar document")
    return "".join(out)
