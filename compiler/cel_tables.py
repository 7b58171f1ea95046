"""cel-python's LALR parser, shipped pre-built as plain JSON data next to this module.

Building the CEL parser means Lark reading its own grammar language and computing LALR tables
for the CEL grammar, a noticeable share of a cold render. The tables depend only on the
grammar text cel-python ships and on the Lark version, so they are computed once, by
``python -m nvcre.compiler.cel_tables --write``, and committed as ``cel_lalr.json``; a test
rebuilds them in memory and fails when the committed file is stale.

The file is data, not code and not a pickle: Lark's own serialised form (plain values, tuples,
frozensets, dictionaries keyed by numbers or frozensets, a regex flag) written as JSON with a
few single-key tags (``$t`` tuple, ``$f`` frozenset, ``$d`` dictionary with non-string keys,
``$r`` regex flag). It carries a key (the SHA-256 of the grammar text, the Lark version and the
parser options); a file whose key does not match the installed libraries is ignored, and so is
a missing or unreadable one, in which case the caller builds the parser the usual way.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["TABLES_FILE", "PARSER_OPTIONS", "grammar_text", "tables_key", "build_parser", "serialise", "load_parser", "encode", "decode"]

#: The committed tables, beside this module (package data).
TABLES_FILE = Path(__file__).resolve().parent / "cel_lalr.json"

#: The options cel-python builds its parser with, except the three that are not data
#: (``tree_class``, ``lexer_callbacks``, ``g_regex_flags``), which are given when loading.
PARSER_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "start": "expr",
    "debug": True,
    "propagate_positions": True,
    "maybe_placeholders": False,
    "priority": "invert",
}
_RUNTIME_OPTIONS = ("tree_class", "lexer_callbacks", "g_regex_flags")
_FORMAT = 1
_TAGS = ("$t", "$f", "$d", "$r")


def grammar_text() -> str:
    """The CEL grammar as the installed cel-python ships it."""
    import celpy

    return (Path(celpy.__file__).parent / "cel.lark").read_text(encoding="utf-8")


def tables_key(grammar: str) -> str:
    """What the tables depend on: the grammar text, the Lark version and the parser options."""
    import lark

    material = json.dumps([_FORMAT, lark.__version__, grammar, PARSER_OPTIONS], sort_keys=True)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _runtime_options() -> dict[str, Any]:
    import celpy
    from celpy.celparser import CELParser

    return {
        "tree_class": celpy.InterpretedRunner.tree_node_class,
        "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
        "g_regex_flags": re.M,
    }


def build_parser(**extra: Any) -> Any:
    """A Lark parser built from the grammar text, exactly as cel-python builds its own."""
    from lark import Lark

    return Lark(grammar_text(), **PARSER_OPTIONS, **_runtime_options(), **extra)


def serialise(parser: Any) -> dict[str, Any]:
    """The JSON document of a built parser: format, key and Lark's serialised data and memo."""
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {name: value for name, value in data["options"].items() if name not in _RUNTIME_OPTIONS}
    data["parser"]["parser"] = _numbered_states(data["parser"]["parser"])
    return {"format": _FORMAT, "key": tables_key(grammar_text()), "data": encode(data), "memo": encode(memo)}


def _numbered_states(table: dict[str, Any]) -> dict[str, Any]:
    """The LALR table with its states (sets of LR items) and tokens numbered canonically.

    Lark numbers states and tokens in the order it meets them, which follows set iteration and
    so the interpreter's hash seed; here tokens are numbered by name, and states breadth-first
    from the start states, following shifts in token-name order, so the file is the same on
    every build. Parsing reads states and tokens only as lookup keys.
    """
    names = table["tokens"]  # Lark's token number -> token name
    token = {old: new for new, old in enumerate(sorted(names, key=lambda old: names[old]))}
    states = table["states"]
    number: dict[Any, int] = {}
    queue = [state for _, state in sorted(table["start_states"].items())]
    while queue:
        state = queue.pop(0)
        if state in number:
            continue
        number[state] = len(number)
        for _, (action, arg) in sorted(states[state].items(), key=lambda item: names[item[0]]):
            if action == 0 and arg not in number:
                queue.append(arg)
    if len(number) != len(states):
        raise ValueError("the LALR table has states no start state reaches")
    renumbered = {}
    for state in sorted(states, key=number.__getitem__):
        actions = sorted(states[state].items(), key=lambda item: names[item[0]])
        renumbered[number[state]] = {token[old]: (action, number[arg] if action == 0 else arg) for old, (action, arg) in actions}
    return {
        "tokens": {new: names[old] for old, new in sorted(token.items(), key=lambda item: item[1])},
        "states": renumbered,
        "start_states": {start: number[state] for start, state in sorted(table["start_states"].items())},
        "end_states": {start: number[state] for start, state in sorted(table["end_states"].items())},
    }


def load_parser(path: Path = TABLES_FILE) -> Any | None:
    """The parser read from the tables at ``path``, or None when they are missing, unreadable
    or were built for another grammar, Lark version or set of options."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"), object_hook=_decode_object)
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != _FORMAT or document.get("key") != tables_key(grammar_text()):
        return None
    from lark import Lark

    try:
        return Lark._load_from_dict(document["data"], document["memo"], **_runtime_options())  # type: ignore[no-untyped-call]
    except Exception:  # tables Lark cannot read back: build the parser the usual way instead
        return None


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data, with the tags that keep tuples, frozensets, non-string
    keys and regex flags apart from lists, strings and numbers."""
    if isinstance(value, re.RegexFlag):
        return {"$r": int(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"$t": [encode(item) for item in value]}
    if isinstance(value, frozenset):
        return {"$f": sorted((encode(item) for item in value), key=_order)}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            clash = [key for key in value if key in _TAGS]
            if clash:
                raise ValueError(f"a dictionary key {clash[0]!r} would read back as a tag")
            return {key: encode(item) for key, item in value.items()}
        return {"$d": [[encode(key), encode(item)] for key, item in value.items()]}
    raise TypeError(f"cannot keep a {type(value).__name__} in the parser tables")


def _order(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def _freeze(value: Any) -> Any:
    """A list read from JSON where a hashable value is needed (set members, dictionary keys)."""
    return tuple(_freeze(item) for item in value) if isinstance(value, list) else value


def _decode_object(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        ((tag, payload),) = obj.items()
        if tag == "$t":
            return tuple(payload)
        if tag == "$f":
            return frozenset(_freeze(item) for item in payload)
        if tag == "$d":
            return {_freeze(key): item for key, item in payload}
        if tag == "$r":
            return re.RegexFlag(payload)
    return obj


def decode(value: Any) -> Any:
    """The inverse of ``encode``, for data already read from JSON."""
    return json.loads(json.dumps(value), object_hook=_decode_object)


def _main(argv: list[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print("usage: python -m nvcre.compiler.cel_tables --write | --check", file=sys.stderr)
        return 2
    text = json.dumps(serialise(build_parser()), separators=(",", ":")) + "\n"
    if argv == ["--write"]:
        TABLES_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLES_FILE.name} ({len(text)} bytes)")
        return 0
    current = TABLES_FILE.read_text(encoding="utf-8") if TABLES_FILE.exists() else ""
    if current != text:
        print(f"{TABLES_FILE.name} is stale: run python -m nvcre.compiler.cel_tables --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
