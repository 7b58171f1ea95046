"""Sandboxed templates for catalog entries, overlays and the scripts they carry.

Two Jinja environments, both sandboxed and strict about undefined names:

* **YAML templates** (``*.yaml.j2``): every ``{{ expression }}`` is emitted as a JSON value, which
  is also valid YAML. A value can therefore never break out of its scalar, whatever it holds,
  and whole lists or mappings can be interpolated. Structure comes only from the template text.
* **Script templates** (``*.sh.j2``): every ``{{ expression }}`` is shell-quoted (numbers and
  booleans as bare words), so a user value placed in a rendered command is one word, never code.

Templates are looked up by path below a root folder (the catalog or the platforms folder); the
rendered YAML is parsed with the safe loader.

Both are done once per process: a template is compiled on first use and kept (files are not
polled for changes), the parse of a rendered text is memoised by that text, and a render is
memoised by its template and values (when they are plain data), so rendering the same entry for
another category, Certification or platform usually costs a copy of the parsed data. Callers
always receive a private copy they may change.

The code Jinja generates for the package's own templates ships with the package
(``template_snapshot``), so a fresh process compiles that code instead of lexing, parsing and
generating it again; a template that differs from the snapshot is generated as usual.
Compiled templates are also kept on disk between processes, keyed by template name and a hash
of its source: ``$XDG_CACHE_HOME/nvcre/templates/`` (``~/.cache`` when unset), one folder per
Jinja version and environment. ``NVCRE_NO_CACHE=1`` turns that cache off, and a folder that
other users could write to is never used (its files are compiled code).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from jinja2 import BytecodeCache, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined, TemplateError, TemplateNotFound, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .api.patterns import DURATION as _API_DURATION_PATTERN
from .datacopy import is_plain, plain_copy
from .diagnostics import CompileError, error
from .durations import canonical_duration
from .template_snapshot import generated
from .yamlio import load_documents

__all__ = ["TemplateSet", "template_set", "plain_copy", "bytecode_cache_dir"]


def bytecode_cache_dir(kind: str) -> Path | None:
    """The folder for one environment's compiled templates, or None when the disk cache is off or unsafe."""
    if os.environ.get("NVCRE_NO_CACHE", "") not in ("", "0"):
        return None
    import jinja2

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nvcre" / "templates"
    folder = base / f"jinja-{jinja2.__version__}-{kind}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError:
        return None
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        return None
    return folder


def _bytecode_cache(kind: str) -> BytecodeCache | None:
    folder = bytecode_cache_dir(kind)
    return FileSystemBytecodeCache(str(folder)) if folder is not None else None


#: the encoder ``json.dumps(value, ensure_ascii=False, sort_keys=False)`` builds on every call, built once
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=False)


def _as_json(value: Any) -> str:
    if isinstance(value, Undefined):
        str(value)  # strict undefined (and sandbox refusals) raise here, with the template's own message
    if isinstance(value, str) and value == "":
        return '""'
    return _JSON.encode(value)


def _as_shell_word(value: Any) -> str:
    if isinstance(value, Undefined):
        str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return shlex.quote(value)
    raise TypeError(f"only strings, integers and booleans can be placed in a script, not {type(value).__name__}")


def _env_list(pairs: Mapping[str, Any]) -> list[dict[str, str]]:
    """``{"A": 1}`` -> ``[{"name": "A", "value": "1"}]``, in the given order."""
    return [{"name": name, "value": _scalar_text(value)} for name, value in pairs.items()]


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _mpi_pairs(env: list[Mapping[str, Any]]) -> list[str]:
    """An env list as mpirun arguments: ``-x NAME=VALUE`` (or ``-x NAME`` to forward the launcher's)."""
    out: list[str] = []
    for item in env:
        out.append("-x")
        out.append(item["name"] if item.get("value") is None else f"{item['name']}={item['value']}")
    return out


#: rendered text -> its parsed document, shared by every TemplateSet (the parse depends on the text only)
_parsed: dict[str, Any] = {}
#: the memo starts over past this many texts or characters, so a long-running controller stays small
_PARSED_LIMIT = 512
_PARSED_CHARS_LIMIT = 2 << 20
_parsed_chars = 0


def _remember(text: str, document: Any) -> None:
    global _parsed_chars
    if len(_parsed) >= _PARSED_LIMIT or _parsed_chars + len(text) > _PARSED_CHARS_LIMIT:
        _parsed.clear()
        _parsed_chars = 0
    _parsed[text] = document
    _parsed_chars += len(text)


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})
#: the render memo starts over past this many renders or characters (keys and texts together)
_RENDERED_LIMIT = 4096
_RENDERED_CHARS_LIMIT = 16 << 20


def _values_key(name: str, values: Mapping[str, Any]) -> tuple[str, str] | None:
    """A memo key for rendering ``name`` with ``values``, or None when the values are not plain data.

    Templates are pure functions of their values (sandboxed, no clock, no random source), and
    for plain data ``repr`` tells apart everything a template could (types, order, ``1`` from
    ``True`` from ``"1"``, lists from tuples). Anything else, whose ``repr`` might not, is not memoised.
    """
    if type(values) is not dict or not is_plain(values):
        return None
    return name, repr(values)


class _Environment(ImmutableSandboxedEnvironment):
    """The sandboxed environment, taking a template's generated code from the shipped snapshot."""

    def __init__(self, kind: str, **options: Any):
        super().__init__(**options)
        self.snapshot_kind = kind

    def compile(
        self, source: Any, name: str | None = None, filename: str | None = None, raw: bool = False, defer_init: bool = False
    ) -> Any:
        if isinstance(source, str) and name is not None and not raw and not defer_init:
            code = generated(self.snapshot_kind, name, source)
            if code is not None:
                return self._compile(code, filename or "<template>")
        return super().compile(source, name, filename, raw=raw, defer_init=defer_init)  # type: ignore[call-overload]


_API_DURATION = re.compile(_API_DURATION_PATTERN)


def _duration(value: Any) -> str:
    """A duration as the API server prints a ``metav1.Duration`` back (``1h`` -> ``1h0m0s``).

    Text that is not a Go duration is left as written, for validation to name the field; so is a
    duration whose printed form the API's own duration pattern would refuse (a fraction of a
    second, ``1500ms`` -> ``1.5s``), which the server accepts in either spelling.
    """
    text = str(value)
    try:
        canonical = canonical_duration(text)
    except ValueError:
        return text
    return canonical if _API_DURATION.fullmatch(canonical) else text


class TemplateSet:
    """The two environments over one or more root folders (searched in order)."""

    def __init__(self, *roots: Path):
        self.roots = tuple(Path(root) for root in roots)
        loader = FileSystemLoader([str(root) for root in self.roots])
        common = dict(
            loader=loader, undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, auto_reload=False, cache_size=-1
        )
        self.yaml_env = _Environment("yaml", finalize=_as_json, bytecode_cache=_bytecode_cache("yaml"), **common)
        self.script_env = _Environment("script", finalize=_as_shell_word, bytecode_cache=_bytecode_cache("script"), **common)
        for env in (self.yaml_env, self.script_env):
            env.filters["env_list"] = _env_list
            env.filters["mpi_pairs"] = _mpi_pairs
            env.filters["text"] = _scalar_text
            env.filters["duration"] = _duration
        self.yaml_env.globals["script"] = self._script_global
        #: (template, values) -> rendered text, for values made of plain data only (see _values_key)
        self._texts: dict[tuple[str, str], str] = {}
        self._texts_chars = 0

    def _script_global(self, name: str, **values: Any) -> str:
        # Scripts see only what the YAML template hands them explicitly.
        return self.script_env.get_template(name).render(**values)

    def render_yaml(self, name: str, values: Mapping[str, Any], where: str) -> Any:
        """Render a YAML template and parse it; errors name the template and the unit (``where``)."""
        key = _values_key(name, values)
        text = self._texts.get(key) if key is not None else None
        if text is None:
            text = self._render(name, values, where)
            if key is not None:
                self._remember_text(key, text)
        parsed = _parsed.get(text)
        if parsed is None:
            docs = load_documents(text, f"{name} (rendered)")
            if len(docs) != 1:
                raise CompileError([error("TemplateRender", where, f"{name} rendered {len(docs)} documents, expected 1")])
            _remember(text, docs[0])
            parsed = docs[0]
        return plain_copy(parsed)

    def _render(self, name: str, values: Mapping[str, Any], where: str) -> str:
        try:
            return self.yaml_env.get_template(name).render(**values)
        except TemplateNotFound as exc:
            raise CompileError([error("TemplateNotFound", where, f"template {exc.name!r} does not exist")]) from None
        except (TemplateError, TypeError) as exc:
            raise CompileError([error("TemplateRender", where, f"rendering {name}: {exc}")]) from None

    def _remember_text(self, key: tuple[str, str], text: str) -> None:
        size = len(key[1]) + len(text)
        if len(self._texts) >= _RENDERED_LIMIT or self._texts_chars + size > _RENDERED_CHARS_LIMIT:
            self._texts.clear()
            self._texts_chars = 0
        self._texts[key] = text
        self._texts_chars += size

    def render_script(self, name: str, values: Mapping[str, Any]) -> str:
        return self.script_env.get_template(name).render(**values)


@lru_cache(maxsize=None)
def template_set(*roots: str) -> TemplateSet:
    """One cached environment pair per set of roots (templates are compiled once)."""
    return TemplateSet(*(Path(root) for root in roots))
