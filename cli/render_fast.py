"""A faster reader for the large, plain renders ``certification diff`` compares, with the project's reader as the judge.

``nvcre.compiler.yamlio`` reads YAML with ruamel's safe loader, which builds every node and value
in Python: two 4 MB renders take seconds. A render is plain data (mappings, lists, strings,
numbers, booleans), and for plain data libyaml (through PyYAML) gives the same values several
times faster, provided it resolves plain scalars by the same YAML 1.1 rules. An alias gives the
same shared value in both, and the same walk then counts it as expanded. So this reader:

* bounds the text exactly as the project's reader does (``read_text``, ``check_size`` and
  ``check_nesting`` with the file limits), before any parsing;
* parses with libyaml, resolving plain scalars with the very expressions ruamel uses for YAML
  1.1 (taken from ruamel at import, so they cannot drift apart);
* reads only block style, where the two libyaml builds agree (flow collections with content,
  JSON included, go to the project's reader), and builds only what both readers build the same
  way: strings, integers of up to 64 characters, floats, booleans, null, mappings and lists. At
  anything else (an explicit tag, a date, a merge key, a duplicate key, ``y``/``n`` booleans, a
  syntax error, data a Kubernetes
  object cannot hold, or no libyaml at all) it stops and hands the text to the project's reader
  (``objects_from_text``), whose values, diagnostics and positions are then the answer.

So every input gives exactly what the project's reader gives; the plain ones only sooner.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["read_render_fast"]

#: the longest integer text built here (the project's reader refuses longer ones as out of range)
_MAX_INT_TEXT = 64


class _Unusual(Exception):
    """The text holds something this reader leaves to the project's reader."""


def _loader() -> Any:
    """A libyaml safe loader with ruamel's YAML 1.1 scalar rules; None without libyaml."""
    try:
        import yaml
        from ruamel.yaml.resolver import implicit_resolvers
    except ImportError:
        return None
    base = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return None
    return _with_ruamel_rules(_strict_loader(base), implicit_resolvers)


def _strict_loader(base: Any) -> Any:
    """A subclass of libyaml's safe loader that refuses, as :class:`_Unusual`, every shape this
    reader leaves to the project's reader (merge keys, repeated or non-string keys, long integers,
    y/n booleans, tags beyond the plain ones)."""

    class Loader(base):  # type: ignore[misc]
        yaml_implicit_resolvers: dict[Any, list[tuple[str, Any]]] = {}

        def flatten_mapping(self, node: Any) -> None:
            if any(key.tag == "tag:yaml.org,2002:merge" for key, _ in node.value):
                raise _Unusual("a merge key")

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str) or key in out:
                    raise _Unusual("a key that is not a new string")
                out[key] = self.construct_object(value_node, deep=deep)
            return out

        def construct_yaml_int(self, node: Any) -> Any:
            if len(str(node.value)) > _MAX_INT_TEXT:
                raise _Unusual("a long integer")
            return super().construct_yaml_int(node)

        def construct_yaml_bool(self, node: Any) -> Any:
            if str(node.value).lower() not in self.bool_values:
                raise _Unusual("a y/n boolean")
            return super().construct_yaml_bool(node)

        def construct_unusual(self, node: Any) -> Any:
            raise _Unusual(str(node.tag))

    Loader.yaml_constructors = dict(Loader.yaml_constructors)
    for tag in list(Loader.yaml_constructors):
        if tag not in {f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "str", "seq", "map")}:
            Loader.yaml_constructors[tag] = Loader.construct_unusual
    Loader.yaml_constructors[None] = Loader.construct_unusual
    Loader.yaml_constructors["tag:yaml.org,2002:int"] = Loader.construct_yaml_int
    Loader.yaml_constructors["tag:yaml.org,2002:bool"] = Loader.construct_yaml_bool
    Loader.yaml_constructors["tag:yaml.org,2002:map"] = Loader.construct_yaml_map
    return Loader


def _with_ruamel_rules(loader: Any, implicit_resolvers: Any) -> Any:
    """``loader`` resolving plain scalars by ruamel's YAML 1.1 rules."""
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 1) in versions:  # ruamel's own expression, compiled afresh (ruamel hands out a lazy wrapper)
            loader.add_implicit_resolver(tag, re.compile(regexp.pattern, regexp.flags), first)
    return loader


_LOADER = _loader()
#: a flow collection with content: the two libyaml versions differ on the plain scalars inside
#: one (``[a:b]``), and a render holds flow collections only empty (``[]``, ``{}``). Matched at
#: the start of a line or after a blank, so a plain scalar such as ``a [b]`` counts too: a false
#: alarm only sends the text to the project's reader
_FLOW_CONTENT = re.compile(r"(?:^|[ \t])[\[{](?![ \t]*[\]}])")
#: a line that ends in a block scalar header (``key: |``, ``- >-``, ``x: |2 # note``)
_BLOCK_HEADER = re.compile(r"(?:^|[ \t])[|>][0-9+-]{0,2}[ \t]*(?:#.*)?$")
#: the indentation and sequence/key indicators before a line's node
_LEAD = re.compile(r"[ ]*(?:[-?:][ ]+)*")


def _flow_on_line(line: str) -> bool:
    """Whether a flow collection with content opens on this line outside a quoted scalar. A quote
    counts only where a node starts (after the indentation, ``- ``, ``? `` or ``: ``); any other
    is plain text and what follows it is still searched (one pass, a false alarm at worst)."""
    quote = ""
    skip = False
    for at, char in enumerate(line):
        if skip:
            skip = False
        elif quote == "'":
            if char == "'":
                skip = line[at + 1 : at + 2] == "'"  # '' is an escaped quote
                quote = "" if not skip else quote
        elif quote == '"':
            if char == "\\":
                skip = True
            elif char == '"':
                quote = ""
        elif char in "'\"" and (at == 0 or line[at - 1] == " ") and (not line[:at].strip() or line[:at].rstrip()[-1] in "-?:"):
            quote = char
        elif char == "#" and (at == 0 or line[at - 1] in " \t"):
            return False
        elif char in "[{" and (at == 0 or line[at - 1] in " \t") and line[at + 1 :].strip()[:1] not in ("]", "}"):
            return True
    return False


def _flow_content(text: str) -> bool:
    """Whether the text holds a flow collection with content outside block scalars (a shell
    script in a ``|`` block holds ``[ -x ... ]``, which is text). A block scalar's lines are
    those indented deeper than the node that holds it: the key before the header, or the last
    ``-`` of an entry that is the scalar itself. Never less than YAML's own bound, so the block
    ends no later than it does for YAML."""
    block: int | None = None
    for line in text.split("\n"):
        if block is not None:
            if not line.strip() or len(line) - len(line.lstrip(" ")) > block:
                continue
            block = None
        if ("[" in line or "{" in line) and _FLOW_CONTENT.search(line) and _flow_on_line(line):
            return True
        if ("|" in line or ">" in line) and _BLOCK_HEADER.search(line):
            lead = _LEAD.match(line)
            end = lead.end() if lead is not None else 0
            # ``- |``: the block belongs to the entry, so to the column of its ``-``; ``key: |``: to the key's column
            block = len(line[:end].rstrip()) - 1 if line[end : end + 1] in ("|", ">") and end else end
    return False


def _plain(text: str, source: str) -> list[dict[str, Any]]:
    """The objects of a plain render; _Unusual for anything the project's reader must judge."""
    import yaml

    from nvcre.compiler.yamlio import FILE_LIMITS, plain_data_problems

    if _LOADER is None:
        raise _Unusual("no libyaml")
    if text.startswith(("[", "{")) or _flow_content(text):
        raise _Unusual("a flow collection with content")
    try:
        docs = [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise _Unusual(type(exc).__name__) from None
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    for doc in docs:
        if not isinstance(doc, dict) or plain_data_problems(doc, FILE_LIMITS):
            raise _Unusual("not a plain object")
    return docs


def read_render_fast(path: Path) -> list[dict[str, Any]]:
    """The objects of a render file, the same the project's reader gives; its CompileError otherwise."""
    from nvcre.compiler.yamlio import FILE_LIMITS, check_nesting, check_size, read_text

    from .gitops import objects_from_text

    source = str(path)
    text = read_text(path)
    check_size(text, source, FILE_LIMITS)
    check_nesting(text, source)
    try:
        return _plain(text, source)
    except _Unusual:
        return objects_from_text(text, source)
