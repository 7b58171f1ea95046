"""The catalog's records: an entry, its parallelism rows, and the GPU defaults table, as checked data.

:mod:`.catalog` loads them (through :mod:`.source_check`, or the models of :mod:`.source_models`
for a file that is not plainly valid). They are named tuples: cheap to define and to build,
immutable, compared by value; fields use the Python spelling of the file's camelCase keys.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from .unit import EntryInfo

__all__ = ["ArchDefaults", "CatalogEntry", "GPUDefaults", "Parallelism"]


class Parallelism(NamedTuple):
    """Tensor and pipeline parallelism of one configuration architecture."""

    tp: int = 1
    pp: int = 1


class CatalogEntry(NamedTuple):
    """One catalog entry, checked (``entry.yaml``, fields in Python spelling)."""

    domain: str
    variant: str
    description: str
    launch: Literal["mpi", "torch", "single"]
    template: str
    measurement: Literal["bandwidth", "goodput", "none"]
    #: values handed to the template as ``vars``
    vars: dict[str, Any]
    #: rows keyed by configuration architecture, plus ``default``
    parallelism: dict[str, Parallelism]
    timeout_per_job: str = "1h"
    startup_stall_timeout_seconds: int | None = None
    min_gpus: int | None = None
    multi_node: bool = True
    #: replicated jobs that run on GPU nodes, and the MPI launcher if any
    node_jobs: tuple[str, ...] = ("node",)
    launcher_job: str | None = None

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


class ArchDefaults(NamedTuple):
    """Per-node GPU and RDMA NIC counts of one architecture (None: not given here)."""

    gpus_per_node: int | None = None
    mlnx_per_node: int | None = None


class GPUDefaults(NamedTuple):
    """``_lib/gpu-defaults.yaml``, checked."""

    architectures: dict[str, ArchDefaults]
    fallback: ArchDefaults
    #: platform -> arch -> fields that replace the architecture row
    platforms: dict[str, dict[str, ArchDefaults]]
    #: architectures whose configuration rows are shared with another (gb300 -> gb200)
    config_arch: dict[str, str]

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
