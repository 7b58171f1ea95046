"""Display-cell arithmetic and sanitising for the boxed text report.

Width is counted in terminal cells: combining marks and format characters take none, East
Asian wide and fullwidth characters take two, everything else one. ``sanitize`` makes log text
safe to print inside a box: tabs become four spaces, C0, DEL and C1 controls become ``\\xNN``
and bidirectional controls become ``\\uNNNN``, so a log line can neither move the cursor nor
reorder the text around it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["fit", "sanitize", "width", "wrap", "wrap_words"]

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _cell(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width(text: str) -> int:
    """Display cells ``text`` takes (ASCII fast path)."""
    if text.isascii():
        return len(text)
    return sum(_cell(char) for char in text)


def sanitize(text: str) -> str:
    """Printable text: tabs expanded, control and bidi characters escaped (newlines kept)."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char == "\t":
            out.append("    ")
        elif char == "\n":
            out.append(char)
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif code in _BIDI:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def fit(text: str, cells: int, ellipsis: str = "...") -> str:
    """``text`` cut to at most ``cells`` cells, ending in ``ellipsis`` when cut."""
    if width(text) <= cells:
        return text
    room = max(0, cells - width(ellipsis))
    out: list[str] = []
    used = 0
    for char in text:
        step = _cell(char)
        if used + step > room:
            break
        out.append(char)
        used += step
    return "".join(out) + ellipsis


def wrap(text: str, cells: int) -> list[str]:
    """Hard-wrap one line at ``cells`` cells (mid-word, as the report does); at least one line."""
    lines: list[str] = []
    current: list[str] = []
    used = 0
    for char in text:
        step = _cell(char)
        if used + step > cells and current:
            lines.append("".join(current))
            current, used = [], 0
        current.append(char)
        used += step
    lines.append("".join(current))
    return lines


def wrap_words(text: str, cells: int) -> list[str]:
    """Wrap at spaces within ``cells`` cells; a word longer than a line is hard-wrapped."""
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if width(candidate) <= cells:
            current = candidate
            continue
        if current:
            lines.append(current)
        pieces = wrap(word, cells)
        lines.extend(pieces[:-1])
        current = pieces[-1]
    lines.append(current)
    return lines
