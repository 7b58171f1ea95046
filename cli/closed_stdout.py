"""A closed standard output ends ``nvcrectl`` quietly, as it ends a Go command line.

``nvcrectl ... | head -1`` closes the pipe once ``head`` has its line; the next write then fails
with ``EPIPE``. A Go program dies of ``SIGPIPE`` without a word (the shell reports 141). Python
raises ``BrokenPipeError`` instead, which the command's error handling would print, and the
interpreter's last flush would complain again on the way out.

:func:`watch_stdout` replaces ``sys.stdout`` with a thin proxy: the first failed write or flush
points file descriptor 1 at ``/dev/null`` (nothing else can fail) and raises :class:`StdoutClosed`,
a ``BaseException`` so that no command's ``except Exception`` reports it; ``finally`` blocks
still run. The entry point turns it into exit status :data:`EXIT_STDOUT_CLOSED`, the status a
shell shows for a Go command ended by ``SIGPIPE``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

__all__ = ["EXIT_STDOUT_CLOSED", "StdoutClosed", "watch_stdout"]

#: 128 + SIGPIPE: what ``$?`` (or ``PIPESTATUS``) shows for a Go command whose reader went away.
EXIT_STDOUT_CLOSED = 141


class StdoutClosed(BaseException):
    """Standard output's reader has gone; nothing more can be printed."""


def _silence() -> None:
    """Point descriptor 1 at /dev/null, so no later write or flush can fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.dup2(devnull, 1)
    finally:
        os.close(devnull)


class _Guarded:
    """Forwards to a stream; a write or flush that finds the pipe closed raises StdoutClosed."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._closed = False

    def _call(self, name: str, *args: Any) -> Any:
        if self._closed:
            return len(args[0]) if name == "write" and args else None
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            self._closed = True
            _silence()
            raise StdoutClosed() from None

    def write(self, data: Any) -> Any:
        return self._call("write", data)

    def writelines(self, lines: Any) -> None:
        self._call("writelines", lines)

    def flush(self) -> None:
        if self._closed:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed = True
            _silence()
            raise StdoutClosed() from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _GuardedText(_Guarded):
    """The text stream, whose binary ``buffer`` is guarded the same way."""

    @property
    def buffer(self) -> Any:
        inner = getattr(self._stream, "buffer", None)
        return _Guarded(inner) if inner is not None else None


def watch_stdout() -> None:
    """Guard ``sys.stdout`` (once) so a closed pipe raises :class:`StdoutClosed`."""
    if not isinstance(sys.stdout, _Guarded) and sys.stdout is not None:
        sys.stdout = _GuardedText(sys.stdout)
