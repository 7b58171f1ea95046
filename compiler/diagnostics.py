"""Structured diagnostics: one record type for every problem or decision the compiler reports.

A Diagnostic carries a stable code, a severity, a field path in the input document
(``spec.categories[2].options.env[0].valueFrom``), an optional fragment of the offending
source, a message written for the person who owns the input, and the stage that reported it
(a pass name, set by the pass runner). ``CompileError`` carries every error found so that a
caller can report them all at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Iterable, Sequence


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


PathPart = str | int


def format_path(parts: Iterable[PathPart]) -> str:
    """Join path parts the way Kubernetes reports field paths: ``a.b[3].c``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with every line break and control character written as an escape (``\\n``),
    so that a key or value from the input cannot break the one-line diagnostic format."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


@dataclass(frozen=True, order=True)
class Diagnostic:
    code: str
    path: str
    message: str
    severity: Severity = Severity.ERROR
    source: str | None = field(default=None, compare=False)
    #: the stage that reported it: a compiler pass name (set by the pass runner), or
    #: ``load``, ``validate``, ``detect`` for the steps before the passes
    pass_name: str | None = field(default=None, compare=False)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def render(self) -> str:
        """One line for a terminal: ``path: message [code]``; line breaks in either are escaped."""
        where = one_line(self.path) if self.path else "<document>"
        return f"{where}: {one_line(self.message)} [{self.code}]"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
        }
        if self.source is not None:
            data["source"] = self.source
        if self.pass_name is not None:
            data["pass"] = self.pass_name
        return data

    def from_stage(self, name: str) -> "Diagnostic":
        """This diagnostic attributed to ``name``, unless a stage is already recorded."""
        return self if self.pass_name is not None else replace(self, pass_name=name)


def error(code: str, path: str | Sequence[PathPart], message: str, source: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, path=_as_path(path), message=message, severity=Severity.ERROR, source=source)


def warning(code: str, path: str | Sequence[PathPart], message: str, source: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, path=_as_path(path), message=message, severity=Severity.WARNING, source=source)


def info(code: str, path: str | Sequence[PathPart], message: str, source: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, path=_as_path(path), message=message, severity=Severity.INFO, source=source)


def _as_path(path: str | Sequence[PathPart]) -> str:
    return path if isinstance(path, str) else format_path(path)


def errors_in(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.is_error]


class CompileError(Exception):
    """Raised with every error diagnostic found; the CLI turns it into exit code 2."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    @property
    def errors(self) -> list[Diagnostic]:
        return errors_in(self.diagnostics)


def attributed(diagnostics: Iterable[Diagnostic], stage: str) -> list[Diagnostic]:
    """Every diagnostic attributed to ``stage`` where none is recorded yet."""
    return [d.from_stage(stage) for d in diagnostics]


def raise_if_errors(diags: Sequence[Diagnostic]) -> None:
    if any(d.is_error for d in diags):
        raise CompileError(diags)
