"""An overlay file as checked, immutable data: when it applies, and which patch template it renders.

The loader (:func:`nvcre.compiler.overlays.load_overlays`) builds these from the files under
``platforms/``: :mod:`.source_check` for a file that is plainly valid, the models of
:mod:`.source_models` for any other, which also word every problem. The records are named
tuples, so importing this module costs next to nothing on the render path.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Overlay", "StringMatch", "When"]


class StringMatch(NamedTuple):
    """``{equals: x}``, ``{in: [...]}``, ``{notIn: [...]}``: every clause given must hold."""

    equals: str | None = None
    in_: tuple[str, ...] | None = None
    not_in: tuple[str, ...] | None = None

    def matches(self, value: str) -> bool:
        if self.equals is not None and value != self.equals:
            return False
        if self.in_ is not None and value not in self.in_:
            return False
        return self.not_in is None or value not in self.not_in

    def describe(self) -> str:
        parts = []
        if self.equals is not None:
            parts.append(f"={self.equals}")
        if self.in_ is not None:
            parts.append(f" in [{','.join(self.in_)}]")
        if self.not_in is not None:
            parts.append(f" notIn [{','.join(self.not_in)}]")
        return "".join(parts)


class When(NamedTuple):
    """An overlay's conditions; a clause left out matches everything."""

    platform: StringMatch | None = None
    gpu_architecture: StringMatch | None = None
    all_architectures: bool = False
    entry: StringMatch | None = None
    launch: StringMatch | None = None
    source_kind: StringMatch | None = None
    expression: str | None = None

    def describe(self) -> str:
        parts = []
        for label, clause in (
            ("platform", self.platform),
            ("gpuArchitecture", self.gpu_architecture),
            ("entry", self.entry),
            ("launch", self.launch),
            ("sourceKind", self.source_kind),
        ):
            if clause is not None:
                parts.append(f"{label}{clause.describe()}")
        if self.expression:
            parts.append(f"expression: {self.expression}")
        return ", ".join(parts) or "always"


class Overlay(NamedTuple):
    """One overlay: its unique name, why it exists, when it applies, and its patch template."""

    name: str
    reason: str
    when: When
    patches: str
    #: overlays apply in (order, name) order
    order: int = 100
    #: where the overlay file lives, relative to the platforms folder (filled by the loader)
    source: str = ""
