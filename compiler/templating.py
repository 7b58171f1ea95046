"""Sandboxed templates for catalog entries, overlays and the scripts they carry.

Two Jinja environments, both sandboxed and strict about undefined names:

* **YAML templates** (``*.yaml.j2``): every ``{{ expression }}`` is emitted as a JSON value, which
  is also valid YAML. A value can therefore never break out of its scalar, whatever it holds,
  and whole lists or mappings can be interpolated. Structure comes only from the template text.
* **Script templates** (``*.sh.j2``): every ``{{ expression }}`` is shell-quoted (numbers and
  booleans as bare words), so a user value placed in a rendered command is one word, never code.

Templates are looked up by path below a root folder (the catalog or the platforms folder); the
rendered YAML is parsed with the safe loader.
"""

from __future__ import annotations

import json
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError, TemplateNotFound, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .diagnostics import CompileError, error
from .yamlio import load_documents

__all__ = ["TemplateSet", "template_set"]


def _as_json(value: Any) -> str:
    if isinstance(value, Undefined):
        str(value)  # strict undefined (and sandbox refusals) raise here, with the template's own message
    if isinstance(value, str) and value == "":
        return '""'
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


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


class TemplateSet:
    """The two environments over one or more root folders (searched in order)."""

    def __init__(self, *roots: Path):
        self.roots = tuple(Path(root) for root in roots)
        loader = FileSystemLoader([str(root) for root in self.roots])
        common = dict(loader=loader, undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self.yaml_env = ImmutableSandboxedEnvironment(finalize=_as_json, **common)
        self.script_env = ImmutableSandboxedEnvironment(finalize=_as_shell_word, **common)
        for env in (self.yaml_env, self.script_env):
            env.filters["env_list"] = _env_list
            env.filters["mpi_pairs"] = _mpi_pairs
            env.filters["text"] = _scalar_text
        self.yaml_env.globals["script"] = self._script_global

    def _script_global(self, name: str, **values: Any) -> str:
        # Scripts see only what the YAML template hands them explicitly.
        return self.script_env.get_template(name).render(**values)

    def render_yaml(self, name: str, values: Mapping[str, Any], where: str) -> Any:
        """Render a YAML template and parse it; errors name the template and the unit (``where``)."""
        try:
            text = self.yaml_env.get_template(name).render(**values)
        except TemplateNotFound as exc:
            raise CompileError([error("TemplateNotFound", where, f"template {exc.name!r} does not exist")]) from None
        except (TemplateError, TypeError) as exc:
            raise CompileError([error("TemplateRender", where, f"rendering {name}: {exc}")]) from None
        docs = load_documents(text, f"{name} (rendered)")
        if len(docs) != 1:
            raise CompileError([error("TemplateRender", where, f"{name} rendered {len(docs)} documents, expected 1")])
        return docs[0]

    def render_script(self, name: str, values: Mapping[str, Any]) -> str:
        return self.script_env.get_template(name).render(**values)


@lru_cache(maxsize=None)
def template_set(*roots: str) -> TemplateSet:
    """One cached environment pair per set of roots (templates are compiled once)."""
    return TemplateSet(*(Path(root) for root in roots))
