"""The box a report card is drawn in: 66 display cells per line, content cut or wrapped to fit.

A :class:`Card` collects the lines of one category (or Summary) card: ``┌`` title ``├``, rows
``│  content  │`` and ``└``. Content is sanitised (no control or bidi characters reach the
terminal) and cut with ``...`` when it would not fit; ``wrapped`` hard-wraps or word-wraps long
text under a label.
"""

from __future__ import annotations

from .cells import fit, sanitize, width, wrap, wrap_words

__all__ = ["BOX_WIDTH", "CONTENT", "INNER", "MARK_FAIL", "MARK_PASS", "MARK_PROVISIONAL", "MARK_RESTART", "Card", "clean"]

BOX_WIDTH = 66
INNER = BOX_WIDTH - 2
CONTENT = INNER - 2
MARK_PASS, MARK_FAIL, MARK_PROVISIONAL, MARK_RESTART = "✓", "✗", "?", "↻"


def clean(text: str) -> str:
    """One printable line: controls and bidi escaped, line breaks too."""
    return sanitize(text).replace("\n", "\\x0a")


class Card:
    """Lines of one box."""

    def __init__(self, title: str):
        self.lines = ["┌" + "─" * INNER + "┐", self._row(fit(clean(title), CONTENT)), "├" + "─" * INNER + "┤"]

    @staticmethod
    def _row(content: str) -> str:
        return "│  " + content + " " * (CONTENT - width(content)) + "│"

    def add(self, content: str) -> None:
        self.lines.append(self._row(fit(clean(content), CONTENT)))

    def blank(self) -> None:
        self.lines.append("│" + " " * INNER + "│")

    def wrapped(self, label: str, text: str, indent: int = 11, words: bool = False) -> None:
        """``label`` then ``text`` wrapped (hard, or at word breaks), continuation lines indented."""
        room = CONTENT - indent
        clean = sanitize(" ".join(text.split()))
        pieces = (wrap_words(clean, room) if words else wrap(clean, room)) or [""]
        self.add(label.ljust(indent) + pieces[0])
        for piece in pieces[1:]:
            self.add(" " * indent + piece)

    def close(self) -> list[str]:
        return [*self.lines, "└" + "─" * INNER + "┘"]
