"""Reads a whole pod log as a sequence of bounded windows, so no read holds more than one window.

Every log read asks the API server for at most ``cap`` bytes (``limitBytes``). A read that comes
back shorter than the cap reached the end of the log. A read that fills it was cut: the next read
starts from the last timestamp seen (``sinceTime``, with :func:`~nvcre.runtime.measure.cursor.advance`
dropping what was already read), so the windows chain without losing or repeating a line. The
parsers take the windows one at a time; a window is dropped once parsed, so memory follows the
cap, not the log. A log whose windows cannot move on (a log without timestamps, more lines in one
second than a window holds, a read refused half way) or that needs more than ``max_windows``
windows is read as far as it goes and marked incomplete.

The windows may also begin where an earlier read stopped (``start``, the first read made from
``start.since_time()``), and a provisional read (``final=False``, the log still growing) leaves
a last line without its newline for the next read. :attr:`LogWindows.cursor` says where the
lines handed out end, so the next read can begin there.

The reader is given as a function, so this module does no I/O of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .cursor import LogCursor, advance

__all__ = ["LogWindows", "DEFAULT_WINDOW_BYTES", "DEFAULT_MAX_WINDOWS"]

#: Bytes one log read may return.
DEFAULT_WINDOW_BYTES = 8 * 1024 * 1024
#: Windows one whole-log read may take (8 MiB x 256: 2 GiB of log).
DEFAULT_MAX_WINDOWS = 256


def _filled(text: str, cap: int) -> bool:
    """Whether a read may have been cut at the cap. Decoding only ever grows the text (an invalid
    byte becomes a 3-byte replacement character), so a shorter answer certainly was not cut. A
    character is one to four bytes, so the length in characters settles most reads unencoded."""
    if len(text) >= cap:
        return True
    if len(text) * 4 < cap:
        return False
    return len(text.encode("utf-8", "surrogatepass")) >= cap


@dataclass
class LogWindows:
    """The windows of one pod's log, from a first read already made; iterate once."""

    first: str
    read: Callable[[str | None], str | None]
    cap: int = DEFAULT_WINDOW_BYTES
    max_windows: int = DEFAULT_MAX_WINDOWS
    #: False once iteration stopped before the end of the log
    complete: bool = field(default=True, init=False)
    #: where the earlier reads this one goes on from stopped (the first read was made from it)
    start: LogCursor = field(default_factory=LogCursor)
    #: the log is complete (its pod ended): a last line without a newline is handed out too
    final: bool = True
    #: how many reads iteration made (the first one included)
    reads: int = field(default=1, init=False)
    #: after iteration, the cursor after the last complete line handed out
    cursor: LogCursor = field(default_factory=LogCursor, init=False)

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        cursor = self.cursor = self.start
        text: str | None = self.first
        while text is not None:
            chunk, after = advance(cursor, text)
            self.cursor = after
            if not _filled(text, self.cap):
                # the end of the log: a last line without its newline is complete once the log is
                rest = text[text.rfind("\n") + 1 :] if self.final else ""
                if chunk or rest:
                    yield chunk + rest
                return
            if chunk:
                yield chunk
            if after.stamp is None or after == cursor or self.reads >= self.max_windows:
                break
            cursor = after
            text = self.read(cursor.since_time())
            self.reads += 1
        self.complete = False
