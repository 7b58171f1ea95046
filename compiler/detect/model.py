"""Result types shared by the detection modules.

A :class:`Fact` is one decided value plus where it came from, so every rendered output can
say whether a platform, architecture or resource name was detected from the cluster facts,
supplied by the user, or defaulted. :class:`ExcludedNode` records why a node that matched
the target is not used.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

Provenance = Literal["detected", "supplied", "defaulted"]

DETECTED: Provenance = "detected"
SUPPLIED: Provenance = "supplied"
DEFAULTED: Provenance = "defaulted"


class Fact(NamedTuple):
    """A decided value: ``source`` says how it was decided, ``detail`` from what (for people)."""

    value: Any
    source: Provenance
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """``{"value", "source", "detail"}`` as plain JSON-ready data (fresh copies)."""
        value = self.value.as_dict() if hasattr(self.value, "as_dict") else self.value
        if isinstance(value, tuple):
            value = list(value)
        return {"value": value, "source": self.source, "detail": self.detail}


class ExcludedNode(NamedTuple):
    """A node that matched the target but is left out, and the reason in words."""

    name: str
    reason: str


def name_list(names: list[str] | tuple[str, ...], limit: int = 5) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 3 more``: keeps long node lists readable."""
    names = list(names)
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
