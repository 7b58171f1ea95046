"""The certification catalog: entries as data, loaded from the ``nvcre.catalog`` package folder.

Each entry lives in ``catalog/<domain>/<variant>/entry.yaml`` and names the template that renders
its Workflow spec. The GPU defaults table lives in ``catalog/_lib/gpu-defaults.yaml``. Loading
checks every file, so a broken catalog fails loudly at start, not mid-render: a plainly valid
file becomes its record (:mod:`.catalog_model`) directly (:mod:`.source_check`), any other goes
through the models of :mod:`.source_models`, which decide it and word every problem at its
field path.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from .catalog_model import ArchDefaults, CatalogEntry, GPUDefaults, Parallelism
from .diagnostics import CompileError, error
from .yamlio import load_file

__all__ = ["ArchDefaults", "Catalog", "CatalogEntry", "GPUDefaults", "Parallelism", "catalog_root", "load_catalog", "parse_entry"]


class Catalog(NamedTuple):
    root: Path
    entries: tuple[CatalogEntry, ...]
    gpu_defaults: GPUDefaults

    def lookup(self, domain: str, variant: str) -> CatalogEntry | None:
        for entry in self.entries:
            if entry.domain == domain and entry.variant == variant:
                return entry
        return None

    def keys(self) -> list[str]:
        return [entry.key for entry in self.entries]


def catalog_root() -> Path:
    import nvcre.catalog

    return Path(nvcre.catalog.__file__).parent


def parse_entry(data: Any, prefix: str) -> CatalogEntry:
    """The entry ``data`` describes; CompileError (``CatalogInvalid`` at ``prefix`` + field path) otherwise."""
    from .source_check import catalog_entry

    found = catalog_entry(data)
    if found is not None:
        return found
    from .source_models import checked_entry

    return checked_entry(data, prefix)


def _defaults(data: Any, prefix: str) -> GPUDefaults:
    from .source_check import gpu_defaults

    found = gpu_defaults(data)
    if found is not None:
        return found
    from .source_models import checked_defaults

    return checked_defaults(data, prefix)


@lru_cache(maxsize=None)
def load_catalog(root: str | None = None) -> Catalog:
    base = Path(root) if root else catalog_root()
    entries: list[CatalogEntry] = []
    for path in sorted(base.glob("*/*/entry.yaml")):
        if path.parent.parent.name.startswith("_"):
            continue
        entry = parse_entry(load_file(path)[0], f"{path.relative_to(base)}: ")
        expected = (path.parent.parent.name, path.parent.name)
        if (entry.domain, entry.variant) != expected:
            raise CompileError(
                [error("CatalogInvalid", str(path.relative_to(base)), f"entry names {entry.key} but lives in {'/'.join(expected)}")]
            )
        if not (base / entry.template).is_file():
            raise CompileError([error("CatalogInvalid", str(path.relative_to(base)), f"template {entry.template} does not exist")])
        entries.append(entry)
    defaults = _defaults(load_file(base / "_lib" / "gpu-defaults.yaml")[0], "_lib/gpu-defaults.yaml: ")
    entries.sort(key=lambda e: (e.domain, e.variant))
    return Catalog(root=base, entries=tuple(entries), gpu_defaults=defaults)
