"""CEL for the compiler: one shared cel-python environment, compiled programs cached by text.

Overlay conditions and the API's validation rules evaluate here, against plain Python data,
when their Python equivalents (``cel_native``, ``api.native_rules``) cannot decide them. Building cel-python's parser means Lark computing LALR tables for the CEL grammar, so
the process builds it once, from the tables shipped with the package (``cel_tables``: plain
JSON data, checked against the installed grammar and Lark version). When they are missing or
do not match, the parser is built from the grammar, and the tables are kept on disk between
processes: ``$XDG_CACHE_HOME/nvcre/cel/`` (``~/.cache`` when unset), one file per cel-python
and Lark version. ``NVCRE_NO_CACHE=1`` turns that disk cache off (the shipped tables are data,
like the catalog, and stay in use); a cache directory that other users could write to is never
used. Programs are compiled once per expression text. A CEL error is raised as ``CELError``
with the expression in the message.
"""

from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from . import cel_tables

__all__ = ["CELError", "SHIPPED_TABLES", "environment", "program", "evaluate_bool", "to_cel", "cache_file"]


class CELError(ValueError):
    """A CEL expression that does not parse, or that evaluates to something other than a boolean."""


def cache_file() -> Path | None:
    """Where the parser tables are kept, or None when the disk cache is off or unsafe."""
    if os.environ.get("NVCRE_NO_CACHE", "") not in ("", "0"):
        return None
    from importlib.metadata import version

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nvcre" / "cel"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = base.stat()
    except OSError:
        return None
    # The tables are a pickle: only read them from a directory no one else can write to.
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        return None
    return base / f"lark-{version('lark')}-cel-python-{version('cel-python')}.tables"


#: The shipped parser tables; None makes the process build the parser from the grammar.
SHIPPED_TABLES: Path | None = cel_tables.TABLES_FILE


def _install_parser() -> None:
    """Give cel-python its LALR parser: the shipped tables, else the disk cache, else a build.

    cel-python keeps one parser for the process in ``CELParser.CEL_PARSER`` and builds it on
    the first ``Environment()``; installed here first, with the same options, it is read from
    data in milliseconds instead.
    """
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:
        return
    if SHIPPED_TABLES is not None:
        parser = cel_tables.load_parser(SHIPPED_TABLES)
        if parser is not None:
            CELParser.CEL_PARSER = parser
            return
    path = cache_file()
    if path is None:
        return  # cel-python builds it the usual way
    CELParser.CEL_PARSER = cel_tables.build_parser(cache=str(path))


@lru_cache(maxsize=1)
def environment() -> celpy.Environment:
    """The process's one cel-python environment."""
    _install_parser()
    return celpy.Environment()


@lru_cache(maxsize=1024)
def program(expression: str, functions: tuple[tuple[str, Callable[..., Any]], ...] = ()) -> Any:
    """A runnable program for ``expression`` with extra ``functions`` (name, callable) pairs,
    compiled once per text; ``celpy.CELParseError`` when it does not parse."""
    env = environment()
    return env.program(env.compile(expression), functions=dict(functions) or None)


def _program(expression: str) -> Any:
    try:
        return program(expression)
    except CELParseError as exc:
        raise CELError(f"cannot parse CEL expression {expression!r}: {exc}") from None


def to_cel(value: Any) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise CELError("an integer past 64 bits cannot be passed to CEL")
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, Mapping):
        return celtypes.MapType({celtypes.StringType(k): to_cel(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return celtypes.ListType([to_cel(v) for v in value])
    if value is None:
        return None
    raise CELError(f"cannot pass a {type(value).__name__} to CEL")


def evaluate_bool(expression: str, activation: Mapping[str, Any]) -> bool:
    """The boolean ``expression`` gives over ``activation``; CELError for anything else."""
    runnable = _program(expression)
    values = {name: to_cel(value) for name, value in activation.items()}
    try:
        result = runnable.evaluate(values)
    except Exception as exc:  # cel-python raises CELEvalError, and TypeError for some operand mixes
        raise CELError(
            f"CEL expression {expression!r} failed: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"
        ) from None
    if isinstance(result, CELEvalError) or not isinstance(result, celtypes.BoolType):
        raise CELError(f"CEL expression {expression!r} did not give a boolean: {result!r}")
    return bool(result)
