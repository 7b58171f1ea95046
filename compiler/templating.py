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
memoised by its template and the values it reads (``template_reads``: the places a YAML
template can read, with those of the templates it shares its context with; all the values for a
template the analysis does not follow), when those are plain data. So rendering the same entry
for another category, Certification or platform usually costs a copy of the parsed data, even
when values the template never reads (the platform, say) differ. Callers always receive a
private copy they may change.

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
import marshal
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
from .template_reads import Reads, merged, own_reads, project
from .template_snapshot import generated, shipped_reads
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


#: rendered text -> its parsed document, shared by every TemplateSet (the parse depends on the text
#: only). A document of plain data is kept serialised by ``marshal`` (format 2, which never
#: shares an object between two places), so each use is rebuilt by one call in C instead of a
#: copy walked in Python; anything else is kept as it is and copied with ``plain_copy``.
_parsed: dict[str, Any] = {}
#: the memo starts over past this many texts or characters, so a long-running controller stays small
_PARSED_LIMIT = 512
_PARSED_CHARS_LIMIT = 2 << 20
_parsed_chars = 0
_MARSHAL_FORMAT = 2


def _remember(text: str, document: Any) -> None:
    """Keep the parse of ``text``; the caller keeps ``document`` itself, which the memo never hands out."""
    global _parsed_chars
    if len(_parsed) >= _PARSED_LIMIT or _parsed_chars + len(text) > _PARSED_CHARS_LIMIT:
        _parsed.clear()
        _parsed_chars = 0
    _parsed[text] = marshal.dumps(document, _MARSHAL_FORMAT) if is_plain(document) else plain_copy(document)
    _parsed_chars += len(text)


def _private(kept: Any) -> Any:
    """A copy of a document kept in ``_parsed`` that shares nothing with it."""
    return marshal.loads(kept) if type(kept) is bytes else plain_copy(kept)


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


class _SourceRecorder(FileSystemLoader):
    """The file loader, remembering the text it last gave for each template name.

    Templates are kept once loaded (no reloading, no eviction), so the text recorded for a
    loaded template is the text it was compiled from, whether it was compiled now or its code
    came from the disk cache.
    """

    def __init__(self, searchpath: list[str]) -> None:
        super().__init__(searchpath)
        self.sources: dict[str, str] = {}

    def get_source(self, environment: Any, template: str) -> Any:
        found = super().get_source(environment, template)
        self.sources[template] = found[0]
        return found


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
        folders = [str(root) for root in self.roots]
        common = dict(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, auto_reload=False, cache_size=-1)
        #: the YAML environment's own loader: the texts it loaded are the ones analysed for reads
        self._yaml_loader = _SourceRecorder(folders)
        self.yaml_env = _Environment("yaml", loader=self._yaml_loader, finalize=_as_json, bytecode_cache=_bytecode_cache("yaml"), **common)
        self.script_env = _Environment(
            "script", loader=FileSystemLoader(folders), finalize=_as_shell_word, bytecode_cache=_bytecode_cache("script"), **common
        )
        for env in (self.yaml_env, self.script_env):
            env.filters["env_list"] = _env_list
            env.filters["mpi_pairs"] = _mpi_pairs
            env.filters["text"] = _scalar_text
            env.filters["duration"] = _duration
        self.yaml_env.globals["script"] = self._script_global
        #: memo key (see _memo_key) -> rendered text
        self._texts: dict[tuple[str, ...], str] = {}
        self._texts_chars = 0
        #: YAML template -> the paths it and the templates sharing its context read (None: all values)
        self._paths: dict[str, tuple[tuple[str, ...], ...] | None] = {}

    def _script_global(self, name: str, **values: Any) -> str:
        # Scripts see only what the YAML template hands them explicitly.
        return self.script_env.get_template(name).render(**values)

    def render_yaml(self, name: str, values: Mapping[str, Any], where: str) -> Any:
        """Render a YAML template and parse it; errors name the template and the unit (``where``)."""
        key = self._memo_key(name, values)
        text = self._texts.get(key) if key is not None else None
        if text is None:
            text = self._render(name, values, where)
            if key is not None:
                self._remember_text(key, text)
        kept = _parsed.get(text)
        if kept is not None:
            return _private(kept)
        docs = load_documents(text, f"{name} (rendered)")
        if len(docs) != 1:
            raise CompileError([error("TemplateRender", where, f"{name} rendered {len(docs)} documents, expected 1")])
        _remember(text, docs[0])
        return docs[0]

    def _render(self, name: str, values: Mapping[str, Any], where: str) -> str:
        try:
            return self.yaml_env.get_template(name).render(**values)
        except TemplateNotFound as exc:
            raise CompileError([error("TemplateNotFound", where, f"template {exc.name!r} does not exist")]) from None
        except (TemplateError, TypeError) as exc:
            raise CompileError([error("TemplateRender", where, f"rendering {name}: {exc}")]) from None

    def _memo_key(self, name: str, values: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The render memo's key: the template, the names handed to it (in order) and, last, the
        ``repr`` of what it reads of them; None when what it reads is not plain data. A template
        whose reads are not known is keyed by all its values (``_values_key``)."""
        if type(values) is not dict:
            return None
        paths = self._read_paths(name)
        if paths is None:
            whole = _values_key(name, values)
            return None if whole is None else ("all", *whole)
        found = project(values, paths)
        try:
            return ("read", name, *values, repr(found)) if is_plain(found) else None
        except RecursionError:  # nested too deep to walk: rendered without the memo
            return None

    def _read_paths(self, name: str) -> tuple[tuple[str, ...], ...] | None:
        """What ``name`` and every template rendered with its context read, or None when unknown."""
        if name in self._paths:
            return self._paths[name]
        readings: list[Reads] = []
        seen: set[str] = set()
        waiting = [name]
        paths: tuple[tuple[str, ...], ...] | None = None
        while waiting:
            current = waiting.pop()
            if current in seen:
                continue
            seen.add(current)
            reads = self._own_reads(current)
            if reads is None:
                break
            readings.append(reads)
            waiting.extend(reads.shares_context_with)
        else:
            paths = merged(readings)
        self._paths[name] = paths
        return paths

    def _own_reads(self, name: str) -> Reads | None:
        try:
            self.yaml_env.get_template(name)  # loaded now if it was not (the render would load it anyway)
        except Exception:  # noqa: BLE001 - a missing or broken template: the render reports it, keyed by all values
            return None
        source = self._yaml_loader.sources.get(name)
        if source is None:
            return None
        known, reads = shipped_reads("yaml", name, source)
        return reads if known else own_reads(self.yaml_env, source, name)

    def _remember_text(self, key: tuple[str, ...], text: str) -> None:
        size = len(key[-1]) + len(text)
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
