"""The detection tables shipped as data under ``nvcre.platforms`` (``detection/*.yaml``).

Tables are parsed once and returned frozen (mappings become read-only, lists become
tuples), so no caller can change what another caller sees. They are read with the YAML
loader's default rules (YAML 1.2: ``yes`` stays a string), through the project's reader, so the
parse shipped in ``yaml_snapshot`` serves them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping


def tables_folder() -> Path:
    """``detection/`` in the platforms data package."""
    import nvcre.platforms

    return Path(nvcre.platforms.__file__).parent / "detection"


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@lru_cache(maxsize=None)
def table(name: str) -> Mapping[str, Any]:
    """Load ``detection/<name>.yaml`` from the platforms data package."""
    from ..yamlio import load_documents

    path = tables_folder() / f"{name}.yaml"
    documents = load_documents(path.read_text(encoding="utf-8"), str(path), version=None)
    data = documents[0] if len(documents) == 1 else None
    if not isinstance(data, dict):
        raise ValueError(f"detection table {name}.yaml must hold a mapping")
    frozen: Mapping[str, Any] = _freeze(data)
    return frozen


def gate_matches(gate: Mapping[str, Any], platform: str, gpu_arch: str) -> bool:
    """A gate is ``{platform, gpuArchitectures: [...]}``: both must match."""
    return gate.get("platform") == platform and gpu_arch in tuple(gate.get("gpuArchitectures") or ())
