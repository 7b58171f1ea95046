"""The built-in LogProfiles, loaded from the data files under ``catalog/logprofiles/``.

Each file holds one cluster-scoped LogProfile (``nccl-bandwidth``, ``nccl-loopback``,
``megatron-training``, ``megatron-bridge``). Loading checks every document against the API
model, and checks that every pattern is valid RE2 (Go) syntax and matches its own example, so a
broken profile fails when it is loaded rather than when a measurement first reads a log.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import re2
from pydantic import ValidationError

from .api.logprofile import LogProfile
from .catalog import catalog_root
from .diagnostics import CompileError, Diagnostic, error
from .yamlio import load_file

__all__ = ["builtin_logprofiles", "check_logprofile", "logprofiles_dir"]


def logprofiles_dir() -> Path:
    """The folder the built-in profiles are read from."""
    return catalog_root() / "logprofiles"


def check_logprofile(document: Any, source: str) -> list[Diagnostic]:
    """Every problem with one LogProfile document: model errors, bad RE2 syntax, examples that do not match."""
    problems: list[Diagnostic] = []
    try:
        LogProfile.from_dict(document)
    except ValidationError as exc:
        for err in exc.errors():
            path = ".".join(str(part) for part in err["loc"])
            problems.append(error("LogProfileInvalid", f"{source}: {path}", err["msg"]))
        return problems
    patterns = document["spec"]["patterns"]
    for key in sorted(patterns):
        pattern = patterns[key]
        where = f"{source}: spec.patterns.{key}.regex"
        try:
            compiled = re2.compile(pattern["regex"])
        except re2.error as exc:
            problems.append(error("LogProfileRegex", where, f"not a valid RE2 expression: {exc}"))
            continue
        example = pattern.get("example")
        if example is not None and compiled.search(example) is None:
            problems.append(error("LogProfileExample", f"{source}: spec.patterns.{key}.example", "does not match its regex"))
    return problems


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, Any], ...]:
    profiles: list[dict[str, Any]] = []
    problems: list[Diagnostic] = []
    names: set[str] = set()
    base = logprofiles_dir()
    for path in sorted(base.glob("*.yaml")):
        source = f"logprofiles/{path.name}"
        for document in load_file(path):
            found = check_logprofile(document, source)
            problems.extend(found)
            if found:
                continue
            name = document["metadata"]["name"]
            if name in names:
                problems.append(error("LogProfileDuplicate", f"{source}: metadata.name", f"profile {name!r} is defined twice"))
            names.add(name)
            profiles.append(document)
    if problems:
        raise CompileError(problems)
    return tuple(sorted(profiles, key=lambda doc: doc["metadata"]["name"]))


def builtin_logprofiles() -> list[dict[str, Any]]:
    """The built-in LogProfile objects, sorted by name; each call returns fresh copies."""
    return [copy.deepcopy(profile) for profile in _load()]
