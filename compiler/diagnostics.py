"""Structured diagnostics: one record type for every problem or decision the compiler reports.

A Diagnostic carries a stable code, a severity, a field path in the input document
(``spec.categories[2].options.env[0].valueFrom``), an optional fragment of the offending
source, and a message written for the person who owns the input. ``CompileError`` carries
every error found so that a caller can report them all at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True, order=True)
class Diagnostic:
    code: str
    path: str
    message: str
    severity: Severity = Severity.ERROR
    source: str | None = field(default=None, compare=False)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def render(self) -> str:
        """One line for a terminal: ``path: message [code]``."""
        where = self.path or "<document>"
        return f"{where}: {self.message} [{self.code}]"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
        }
        if self.source is not None:
            data["source"] = self.source
        return data


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


def raise_if_errors(diags: Sequence[Diagnostic]) -> None:
    if any(d.is_error for d in diags):
        raise CompileError(diags)
