"""How the CLI speaks: diagnostics to stderr, documents to stdout, and the exit-code contract.

Exit codes: 0 success, 2 invalid input (every error printed with its field path, nothing on
stdout), 1 any other failure. No command prints a traceback.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:  # Typer is loaded only by the functions that raise its Exit (the render fast path never does)
    import typer

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INVALID = 2


def fail_invalid(message: str) -> typer.Exit:
    """Print ``error: <message>`` on stderr; the exit (code 2, invalid input) is for the caller to raise."""
    import typer

    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(EXIT_INVALID)


def stderr_lines(prefix: str = "") -> Any:
    """A progress callback writing each line to stderr, after ``prefix``."""
    return lambda line: sys.stderr.write(f"{prefix}{line}\n")


def print_diagnostics(diagnostics: Iterable[Any]) -> None:
    for diag in diagnostics:
        sys.stderr.write(f"{diag.severity.value}: {diag.render()}\n")


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command body; CompileError -> exit 2 with every diagnostic, anything else -> exit 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import typer

        from nvcre.compiler.diagnostics import CompileError

        try:
            return func(*args, **kwargs)
        except CompileError as exc:
            print_diagnostics(exc.diagnostics)
            errors = sum(1 for d in exc.diagnostics if d.is_error)
            sys.stderr.write(f"{errors} error(s); nothing was written\n")
            raise typer.Exit(EXIT_INVALID) from None
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(130) from None
        except Exception as exc:  # the contract: a clear line, never a traceback
            sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
            raise typer.Exit(EXIT_FAILURE) from None

    return wrapper
