"""The two ways evidence work fails: the input cannot be used, or it was checked and does not match."""

from __future__ import annotations

__all__ = ["EvidenceError", "Mismatch"]


class EvidenceError(Exception):
    """Input that cannot be used (unreadable, malformed, of another format or version): exit 2.

    The message is one line, naming the file and, where there is one, the field path.
    """


class Mismatch(Exception):
    """Input that was read and checked, and does not match (a changed file, another key): exit 1."""
