"""Where the committed CRD files live and what each one is named; nothing else, so reading an
installed schema needs neither the CRD generator nor every model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..vocabulary import GROUP

if TYPE_CHECKING:
    from .common import ApiObject

__all__ = ["CRD_DIR", "crd_file_name", "crd_file_of_kind"]

#: Directory holding the generated CRD files.
CRD_DIR = Path(__file__).resolve().parent / "crds"


def crd_file_name(cls: type[ApiObject]) -> str:
    return f"{cls.plural}.{GROUP}.yaml"


def crd_file_of_kind(kind: str) -> str | None:
    """The CRD file name of a kind, read from the kind registry (no model is imported)."""
    from .kinds import kind_plural

    plural = kind_plural(kind)
    return f"{plural}.{GROUP}.yaml" if plural is not None else None
