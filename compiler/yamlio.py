"""Safe YAML input: documents in, plain JSON-like data out, problems reported as diagnostics.

Only the safe loader is used (no Python object tags, no arbitrary constructors). Scalars are
resolved with YAML 1.1 rules, the rules ``kubectl`` applies, so ``value: yes`` is a boolean
here exactly as it is for the API server. Duplicate keys, syntax errors and non-mapping
documents are reported with the file name and position instead of a traceback.

Every load is bounded before anything walks the data (``Limits``): the text's size in bytes,
the number of values once aliases are followed, and the nesting depth. The loaded data must
also be what a Kubernetes object can hold (``plain_data_problems``): mappings with string
keys, lists, strings, booleans, 64-bit integers, finite numbers and null. A YAML date,
``!!binary``, ``!!set`` or an integer past 64 bits is reported at its field path.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .diagnostics import CompileError, Diagnostic, PathPart, error, format_path
from .yaml_plain import plain_documents
from .yaml_snapshot import lookup as lookup_snapshot

__all__ = [
    "Limits",
    "DOCUMENT_LIMITS",
    "INTERNAL_LIMITS",
    "INT64_MIN",
    "INT64_MAX",
    "load_documents",
    "load_file",
    "read_text",
    "check_size",
    "check_nesting",
    "MAX_BLOCK_INDENT",
    "MAX_FLOW_NESTING",
    "FILE_LIMITS",
    "MAX_INPUT_BYTES",
    "make_loader",
    "plain_data_problems",
]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Longest integer scalar built at all; anything longer is out of range whatever its digits.
_MAX_INT_TEXT = 64


class Limits(NamedTuple):
    """Bounds on one input: its size in bytes (None: no bound), the values it may expand to
    once aliases are followed, and how deep mappings and lists may nest."""

    max_bytes: int | None
    max_values: int
    max_depth: int


#: A Certification or WorkloadRun as a user writes it. 1.5 MiB is the object size etcd accepts
#: by default; a real document holds a few thousand values and nests about ten levels.
DOCUMENT_LIMITS = Limits(max_bytes=1_572_864, max_values=100_000, max_depth=64)
#: The project's own files and rendered templates, which embed user values a few levels down.
INTERNAL_LIMITS = Limits(max_bytes=None, max_values=2_000_000, max_depth=128)

#: Files a repository holds that the review and GitOps commands read in bulk: directories of
#: Certifications, rendered output (``certification diff``), values files. Far above any real one.
FILE_LIMITS = Limits(max_bytes=4 * 1024 * 1024, max_values=2_000_000, max_depth=128)

#: Kept for callers that name the old single bound.
MAX_EXPANDED_NODES = INTERNAL_LIMITS.max_values


class _OversizedInt(str):
    """An integer scalar too long to build; reported as out of range at its field path."""


class _BoundedConstructor(SafeConstructor):
    """The safe constructor, except that integers with absurdly many digits are not built:
    ``int()`` on thousands of digits is slow, and Python refuses past 4300 digits anyway."""

    def construct_yaml_int(self, node: Any) -> Any:
        text = str(node.value)
        if len(text) > _MAX_INT_TEXT:
            return _OversizedInt(text[:20])
        return super().construct_yaml_int(node)


_BoundedConstructor.add_constructor("tag:yaml.org,2002:int", _BoundedConstructor.construct_yaml_int)


class _Loader(YAML):
    """ruamel's ``YAML``, searching its package folder for plug-ins once per process rather than
    once per loader (a render makes a loader for every template text it parses)."""

    _plug_ins: list[Any] | None = None

    def official_plug_ins(self) -> Any:
        if _Loader._plug_ins is None:
            _Loader._plug_ins = list(super().official_plug_ins())
        return list(_Loader._plug_ins)


def make_loader(version: tuple[int, int] | None = (1, 1)) -> YAML:
    # The libyaml-backed safe loader when available (several times faster), else the pure one;
    # both use the safe constructor and the same scalar rules.
    yaml = _Loader(typ="safe")
    yaml.Constructor = _BoundedConstructor
    if version is not None:
        yaml.version = version
    yaml.allow_duplicate_keys = False
    return yaml


def _position(exc: YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return ""
    return f":{mark.line + 1}:{mark.column + 1}"


def check_size(text: str, source: str, limits: Limits, code: str = "DocumentTooLarge") -> None:
    """Refuse a text larger than ``limits.max_bytes`` before any parsing."""
    if limits.max_bytes is None or len(text) <= limits.max_bytes // 4:
        return  # at most four bytes a character: no need to encode to know
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise CompileError([error(code, source, f"the input is {size} bytes; at most {limits.max_bytes} are accepted")])


def _describe(value: Any) -> str | None:
    """Why ``value`` cannot sit in a Kubernetes object, or None when it can."""
    if value is None or (isinstance(value, (bool, str)) and not isinstance(value, _OversizedInt)):
        return None
    if isinstance(value, _OversizedInt):
        return f"integer {value}... is out of range: numbers in Kubernetes objects are 64-bit"
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return None
        return "integer is out of range: numbers in Kubernetes objects are 64-bit (-2^63 to 2^63-1); quote it to keep it as text"
    if isinstance(value, float):
        return None if math.isfinite(value) else "must be a finite number (JSON has no infinity or NaN)"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "a YAML date or timestamp is not a JSON value: quote it to keep it as text"
    if isinstance(value, (bytes, bytearray)):
        return "!!binary data is not a JSON value: write it as a base64 string"
    if isinstance(value, (set, frozenset)):
        return "a YAML !!set is not a JSON value: write a list"
    if isinstance(value, tuple):
        return "a YAML !!pairs value is not a JSON value: write a mapping or a list"
    return f"a {type(value).__name__} is not a JSON value"


def _walk(data: Any, limits: Limits) -> Iterator[tuple[str, tuple[PathPart, ...], str]]:
    """(code, path, message) for every value the limits or JSON refuse, without recursion.

    Stops at the first size or depth problem: beyond it the data is not worth walking."""
    budget = limits.max_values
    stack: list[tuple[Any, tuple[PathPart, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        budget -= 1
        if budget < 0 or (isinstance(node, (dict, list)) and len(node) > budget):
            yield ("YAMLTooLarge", (), f"the document holds more than {limits.max_values} values (YAML aliases counted as expanded)")
            return
        if isinstance(node, dict):
            if len(path) >= limits.max_depth:
                yield ("DocumentTooDeep", path, f"mappings and lists nest more than {limits.max_depth} levels deep here")
                return
            for key, item in reversed(list(node.items())):
                if isinstance(key, str) and not isinstance(key, _OversizedInt):
                    stack.append((item, path + (key,)))
                else:
                    shown = "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)[:40]
                    yield ("FieldTypeInvalid", path + (shown,), f"keys must be strings, got {_type_name(key)}: quote the key")
        elif isinstance(node, list):
            if len(path) >= limits.max_depth:
                yield ("DocumentTooDeep", path, f"mappings and lists nest more than {limits.max_depth} levels deep here")
                return
            for index in range(len(node) - 1, -1, -1):
                stack.append((node[index], path + (index,)))
        else:
            problem = _describe(node)
            if problem is not None:
                code = "ValueOutOfRange" if isinstance(node, (int, _OversizedInt)) and not isinstance(node, bool) else "ValueInvalid"
                yield (code, path, problem)


#: Codes after which the rest of the data is not walked.
_FATAL = frozenset({"YAMLTooLarge", "DocumentTooDeep"})


def plain_data_problems(data: Any, limits: Limits = DOCUMENT_LIMITS) -> list[tuple[str, tuple[PathPart, ...], str]]:
    """Every value in ``data`` a Kubernetes object cannot hold, and the first size or depth
    overrun, as ``(code, path parts, message)`` in document order (at most 100)."""
    out = []
    for found in _walk(data, limits):
        out.append(found)
        if len(out) >= 100:
            break
    return out


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, _OversizedInt)):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


#: A JSON escape of a character outside the Basic Multilingual Plane, such as ``\ud83d\ude42``: a
#: high and a low surrogate, each a four-digit ``\u`` escape not itself escaped by a backslash.
_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})")


def _join_surrogate_escapes(text: str) -> str:
    """JSON writes such a character as two ``\\u`` escapes; YAML wants the one ``\\U`` escape of
    its code point and refuses a lone surrogate. Rewrite each pair so valid JSON reads as it does
    in ``kubectl``; a lone surrogate stays, and is refused as before."""
    if "\\u" not in text:
        return text

    def joined(match: re.Match[str]) -> str:
        high, low = int(match.group(2), 16), int(match.group(3), 16)
        return f"{match.group(1)}\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}"

    return _SURROGATE_PAIR.sub(joined, text)


def _parse(text: str, source: str, version: tuple[int, int] | None, snapshot: bool = True) -> list[Any]:
    known = lookup_snapshot(text, version) if snapshot else None
    if known is not None:
        return known  # one of the package's own files, parsed when the package was built
    text = _join_surrogate_escapes(text)
    plain = plain_documents(make_loader(version), text)
    if plain is not None:
        return plain  # built straight from the composed nodes: the same documents, sooner
    try:
        return [doc for doc in make_loader(version).load_all(text) if doc is not None]
    except MarkedYAMLError as exc:
        problem = exc.problem or str(exc).splitlines()[0]
        raise CompileError([error("YAMLSyntax", f"{source}{_position(exc)}", f"invalid YAML: {problem}")]) from None
    except YAMLError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError([error("YAMLSyntax", source, f"invalid YAML: {first_line}")]) from None
    except RecursionError:
        raise CompileError([error("DocumentTooDeep", source, "mappings and lists nest too deep to read")]) from None
    except ValueError as exc:  # a scalar the constructor cannot turn into a value
        raise CompileError([error("YAMLSyntax", source, f"invalid YAML: {str(exc)[:200]}")]) from None


def load_documents(
    text: str,
    source: str = "<input>",
    *,
    limits: Limits = INTERNAL_LIMITS,
    version: tuple[int, int] | None = (1, 1),
    snapshot: bool = True,
) -> list[Any]:
    """Parse a (multi-document) YAML stream within ``limits``; empty documents are dropped.

    A problem in the data is reported at its field path; in a stream of several documents
    the path starts with the document's index (``[1].spec.x``). A text the package ships
    is read from its parsed snapshot (``yaml_snapshot``) unless ``snapshot`` is False; the
    documents and the checks on them are the same either way.
    """
    check_size(text, source, limits)
    check_nesting(text, source)
    docs = _parse(text, source, version, snapshot)
    problems: list[Diagnostic] = []
    for index, doc in enumerate(docs):
        prefix: tuple[PathPart, ...] = (index,) if len(docs) > 1 else ()
        for code, path, message in plain_data_problems(doc, limits):
            where = format_path(prefix + path) or source
            problems.append(error(code, where, message))
        if problems and problems[-1].code in _FATAL:
            break
    if problems:
        raise CompileError(problems)
    return docs


#: The most any input file (or standard input) may hold; each kind's own limit is usually far lower.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def read_text(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """Read a UTF-8 file; ``-`` reads standard input. At most ``max_bytes`` are read: a larger
    input is refused without being read whole, and anything but a regular file (a directory, a
    FIFO, a device such as ``/dev/zero``) is refused without being opened, so nothing can block
    or fill memory. Missing, unreadable or refused inputs raise CompileError."""
    where = str(path)
    if where == "-":
        return _decode(sys.stdin.buffer.read(max_bytes + 1), where, max_bytes)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CompileError([error("FileNotFound", where, "no such file")]) from None
    except OSError as exc:
        raise CompileError([error("FileUnreadable", where, f"cannot read file: {exc.strerror or exc}")]) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise CompileError([error("NotARegularFile", where, f"cannot read input: it is {kind}")])
    if info.st_size > max_bytes:
        raise CompileError([_too_large(where, max_bytes)])
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise CompileError([error("FileUnreadable", where, f"cannot read file: {exc.strerror or exc}")]) from None
    return _decode(data, where, max_bytes)


def _too_large(where: str, max_bytes: int) -> Diagnostic:
    return error("InputTooLarge", where, f"the input is larger than the {max_bytes} bytes accepted")


def _decode(data: bytes, where: str, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise CompileError([_too_large(where, max_bytes)])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompileError(
            [error("FileUnreadable", where, f"cannot read file: not UTF-8 text ({exc.reason} at byte {exc.start})")]
        ) from None


#: Flow collections (``[`` ``{``) nested deeper than this are refused before parsing: the YAML
#: composer recurses once per level and a 30,000-deep ``[[[...]]]`` overflowed its C stack (20,000
#: did not); a nesting depth of 64 or 128 is refused later anyway, at its field path.
MAX_FLOW_NESTING = 10_000
_BRACKETS = re.compile(r"[\[\]{}]")

#: Block collections are bounded through their indentation. A block mapping or sequence nested
#: in another starts at a greater column, except a sequence that is a mapping's value, which may
#: share the mapping's column; so a chain of N nested block collections needs a line whose
#: indentation, counting the ``- ``, ``? `` and ``: `` indicators that open compact entries, reaches
#: column N/2 - 1. A line whose indentation runs this far is refused: block nesting then stays
#: under 2 * (MAX_BLOCK_INDENT + 1), and with the flow bound well under the depth that crashed.
MAX_BLOCK_INDENT = 2_000
_DEEP_INDENT = re.compile(r"^(?:[ \t]|[-?:](?=[ \t\r]|$)){%d}" % (MAX_BLOCK_INDENT + 1), re.MULTILINE)
#: Every byte that may sit in such an indentation becomes ``a``, every other byte but a newline
#: ``b``: a run of MAX_BLOCK_INDENT + 1 ``a`` bytes is then a quick, C-speed test that no line can
#: be that deep (the exact pattern above only runs when one might be).
_INDENT_BYTES = bytes(ord("a") if c in b" \t-?:" else c if c == ord("\n") else ord("b") for c in range(256))


def check_nesting(text: str, source: str) -> None:
    """Refuse text the YAML composer could not read without overflowing its stack, before parsing.

    Flow collections: brackets nesting deeper than ``MAX_FLOW_NESTING`` (counted over the whole
    text, quoted scalars included: an overestimate that only a pathological input reaches). Block
    collections: a line indented (spaces and compact ``- ``/``? ``/``: `` entries) past
    ``MAX_BLOCK_INDENT`` columns, such as a 30,000-deep ``- - - ...``. JSON is YAML's flow style, so
    the bracket bound covers it too. Both scans are linear and stop at the first offence.
    """
    deep = None
    if len(text) > MAX_BLOCK_INDENT and b"a" * (MAX_BLOCK_INDENT + 1) in text.encode("utf-8", "surrogatepass").translate(_INDENT_BYTES):
        deep = _DEEP_INDENT.search(text)
    if deep is not None:
        line = text.count("\n", 0, deep.start()) + 1
        raise CompileError(
            [
                error(
                    "NestingTooDeep",
                    f"{source}:{line}",
                    f"line {line} is indented (spaces and '- ', '? ', ': ' entries) past column {MAX_BLOCK_INDENT}: "
                    "block mappings and lists would nest too deep to read",
                )
            ]
        )
    if text.count("[") + text.count("{") <= MAX_FLOW_NESTING:
        return
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_FLOW_NESTING:
                raise CompileError([error("NestingTooDeep", source, f"flow collections nest more than {MAX_FLOW_NESTING} levels deep")])
        elif depth:
            depth -= 1


def load_file(path: str | Path, *, limits: Limits = DOCUMENT_LIMITS) -> list[Any]:
    """Read and parse a YAML file, every document a mapping; anything else is an error."""
    docs = load_documents(read_text(path), str(path), limits=limits)
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
