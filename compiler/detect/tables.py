"""The detection tables shipped as data under ``nvcre.platforms`` (``detection/*.yaml``).

Tables are parsed once and returned frozen (mappings become read-only, lists become
tuples), so no caller can change what another caller sees.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@lru_cache(maxsize=None)
def table(name: str) -> Mapping[str, Any]:
    """Load ``detection/<name>.yaml`` from the platforms data package."""
    from ruamel.yaml import YAML

    text = resources.files("nvcre.platforms").joinpath("detection").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    data = YAML(typ="safe").load(text)
    if not isinstance(data, dict):
        raise ValueError(f"detection table {name}.yaml must hold a mapping")
    frozen: Mapping[str, Any] = _freeze(data)
    return frozen


def gate_matches(gate: Mapping[str, Any], platform: str, gpu_arch: str) -> bool:
    """A gate is ``{platform, gpuArchitectures: [...]}``: both must match."""
    return gate.get("platform") == platform and gpu_arch in tuple(gate.get("gpuArchitectures") or ())
