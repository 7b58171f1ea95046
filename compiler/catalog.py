"""The certification catalog: entries as data, loaded from the ``nvcre.catalog`` package folder.

Each entry lives in ``catalog/<domain>/<variant>/entry.yaml`` and names the template that renders
its Workflow spec. The GPU defaults table lives in ``catalog/_lib/gpu-defaults.yaml``. Loading
checks every file against a schema, so a broken catalog fails loudly at start, not mid-render.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .diagnostics import CompileError, error
from .unit import EntryInfo
from .yamlio import load_file

__all__ = ["Catalog", "CatalogEntry", "GPUDefaults", "catalog_root", "load_catalog"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Parallelism(_Strict):
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)


class CatalogEntry(_Strict):
    domain: str
    variant: str
    description: str
    launch: Literal["mpi", "torch", "single"]
    template: str
    measurement: Literal["bandwidth", "goodput", "none"]
    #: values handed to the template as ``vars``
    vars: dict[str, Any] = Field(default_factory=dict)
    timeout_per_job: str = Field("1h", alias="timeoutPerJob")
    startup_stall_timeout_seconds: int | None = Field(None, alias="startupStallTimeoutSeconds")
    min_gpus: int | None = Field(None, alias="minGPUs")
    #: rows keyed by configuration architecture, plus ``default``
    parallelism: dict[str, Parallelism] = Field(default_factory=dict)
    multi_node: bool = Field(True, alias="multiNode")
    #: replicated jobs that run on GPU nodes, and the MPI launcher if any
    node_jobs: tuple[str, ...] = Field(("node",), alias="nodeJobs")
    launcher_job: str | None = Field(None, alias="launcherJob")

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"

    def info(self) -> EntryInfo:
        return EntryInfo(
            domain=self.domain,
            variant=self.variant,
            launch=self.launch,
            node_jobs=self.node_jobs,
            launcher_job=self.launcher_job,
        )


class ArchDefaults(_Strict):
    gpus_per_node: int | None = Field(None, alias="gpusPerNode", ge=1)
    mlnx_per_node: int | None = Field(None, alias="mlnxPerNode", ge=0)


class GPUDefaults(_Strict):
    architectures: dict[str, ArchDefaults]
    #: platform -> arch -> fields that replace the architecture row
    platforms: dict[str, dict[str, ArchDefaults]] = Field(default_factory=dict)
    fallback: ArchDefaults
    #: architectures whose configuration rows are shared with another (gb300 -> gb200)
    config_arch: dict[str, str] = Field(default_factory=dict, alias="configArch")

    def known(self, arch: str) -> bool:
        return arch in self.architectures

    def lookup(self, arch: str, platform: str) -> tuple[int, int, str]:
        """(gpusPerNode, mlnxPerNode, source) where source is ``table``, ``platform`` or ``fallback``."""
        row = self.architectures.get(arch)
        if row is None:
            return self.fallback.gpus_per_node or 4, self.fallback.mlnx_per_node or 0, "fallback"
        gpus, mlnx, source = row.gpus_per_node, row.mlnx_per_node, "table"
        override = self.platforms.get(platform, {}).get(arch)
        if override is not None:
            if override.gpus_per_node is not None:
                gpus, source = override.gpus_per_node, "platform"
            if override.mlnx_per_node is not None:
                mlnx, source = override.mlnx_per_node, "platform"
        return int(gpus or 4), int(mlnx or 0), source

    def configuration_arch(self, arch: str) -> str:
        return self.config_arch.get(arch, arch)


@dataclass(frozen=True)
class Catalog:
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
    return Path(str(resources.files("nvcre.catalog")))


def _model(model: type[BaseModel], data: Any, where: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [error("CatalogInvalid", f"{where}: " + ".".join(str(p) for p in err["loc"]), err["msg"]) for err in exc.errors()]
        raise CompileError(problems) from None


@lru_cache(maxsize=None)
def load_catalog(root: str | None = None) -> Catalog:
    base = Path(root) if root else catalog_root()
    entries: list[CatalogEntry] = []
    for path in sorted(base.glob("*/*/entry.yaml")):
        if path.parent.parent.name.startswith("_"):
            continue
        entry = _model(CatalogEntry, load_file(path)[0], str(path.relative_to(base)))
        expected = (path.parent.parent.name, path.parent.name)
        if (entry.domain, entry.variant) != expected:
            raise CompileError(
                [error("CatalogInvalid", str(path.relative_to(base)), f"entry names {entry.key} but lives in {'/'.join(expected)}")]
            )
        if not (base / entry.template).is_file():
            raise CompileError([error("CatalogInvalid", str(path.relative_to(base)), f"template {entry.template} does not exist")])
        entries.append(entry)
    defaults = _model(GPUDefaults, load_file(base / "_lib" / "gpu-defaults.yaml")[0], "_lib/gpu-defaults.yaml")
    entries.sort(key=lambda e: (e.domain, e.variant))
    return Catalog(root=base, entries=tuple(entries), gpu_defaults=defaults)
