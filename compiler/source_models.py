"""The models that decide, and word the problems of, catalog entries, GPU defaults and overlays.

A source file that :mod:`.source_check` does not accept outright comes here: the pydantic
models below validate it (with pydantic's usual conversions, ``"2"`` to ``2`` and the like) and
either give the same records the plain check builds, or raise :class:`CompileError` with one
diagnostic per problem, at ``<file>: <field path>``. The model classes keep their names:
pydantic puts them in some messages (``a valid dictionary or instance of When``).

Importing this module loads pydantic, so nothing imports it on the way to a render of valid
files.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import catalog_model as catalog
from . import overlay_model
from .diagnostics import CompileError, error

__all__ = ["checked_defaults", "checked_entry", "checked_overlay"]


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
    vars: dict[str, Any] = Field(default_factory=dict)
    timeout_per_job: str = Field("1h", alias="timeoutPerJob")
    startup_stall_timeout_seconds: int | None = Field(None, alias="startupStallTimeoutSeconds")
    min_gpus: int | None = Field(None, alias="minGPUs")
    parallelism: dict[str, Parallelism] = Field(default_factory=dict)
    multi_node: bool = Field(True, alias="multiNode")
    node_jobs: tuple[str, ...] = Field(("node",), alias="nodeJobs")
    launcher_job: str | None = Field(None, alias="launcherJob")

    def record(self) -> catalog.CatalogEntry:
        return catalog.CatalogEntry(
            domain=self.domain,
            variant=self.variant,
            description=self.description,
            launch=self.launch,
            template=self.template,
            measurement=self.measurement,
            vars=self.vars,
            timeout_per_job=self.timeout_per_job,
            startup_stall_timeout_seconds=self.startup_stall_timeout_seconds,
            min_gpus=self.min_gpus,
            parallelism={name: catalog.Parallelism(tp=row.tp, pp=row.pp) for name, row in self.parallelism.items()},
            multi_node=self.multi_node,
            node_jobs=self.node_jobs,
            launcher_job=self.launcher_job,
        )


class ArchDefaults(_Strict):
    gpus_per_node: int | None = Field(None, alias="gpusPerNode", ge=1)
    mlnx_per_node: int | None = Field(None, alias="mlnxPerNode", ge=0)

    def record(self) -> catalog.ArchDefaults:
        return catalog.ArchDefaults(gpus_per_node=self.gpus_per_node, mlnx_per_node=self.mlnx_per_node)


class GPUDefaults(_Strict):
    architectures: dict[str, ArchDefaults]
    platforms: dict[str, dict[str, ArchDefaults]] = Field(default_factory=dict)
    fallback: ArchDefaults
    config_arch: dict[str, str] = Field(default_factory=dict, alias="configArch")

    def record(self) -> catalog.GPUDefaults:
        return catalog.GPUDefaults(
            architectures={arch: row.record() for arch, row in self.architectures.items()},
            platforms={name: {arch: row.record() for arch, row in rows.items()} for name, rows in self.platforms.items()},
            fallback=self.fallback.record(),
            config_arch=dict(self.config_arch),
        )


class StringMatch(_Strict):
    equals: str | None = None
    in_: tuple[str, ...] | None = Field(None, alias="in")
    not_in: tuple[str, ...] | None = Field(None, alias="notIn")

    @model_validator(mode="after")
    def _one_clause(self) -> StringMatch:
        if self.equals is None and self.in_ is None and self.not_in is None:
            raise ValueError("give equals, in or notIn")
        return self

    def record(self) -> overlay_model.StringMatch:
        return overlay_model.StringMatch(equals=self.equals, in_=self.in_, not_in=self.not_in)


def _record(clause: StringMatch | None) -> overlay_model.StringMatch | None:
    return None if clause is None else clause.record()


class When(_Strict):
    platform: StringMatch | None = None
    gpu_architecture: StringMatch | None = Field(None, alias="gpuArchitecture")
    all_architectures: bool = Field(False, alias="allArchitectures")
    entry: StringMatch | None = None
    launch: StringMatch | None = None
    source_kind: StringMatch | None = Field(None, alias="sourceKind")
    expression: str | None = None

    @model_validator(mode="after")
    def _guarded(self) -> When:
        if self.gpu_architecture is None and not self.all_architectures:
            raise ValueError("an overlay must name gpuArchitecture, or say allArchitectures: true")
        if self.gpu_architecture is not None and self.all_architectures:
            raise ValueError("gpuArchitecture and allArchitectures: true contradict each other")
        return self

    def record(self) -> overlay_model.When:
        return overlay_model.When(
            platform=_record(self.platform),
            gpu_architecture=_record(self.gpu_architecture),
            all_architectures=self.all_architectures,
            entry=_record(self.entry),
            launch=_record(self.launch),
            source_kind=_record(self.source_kind),
            expression=self.expression,
        )


class Overlay(_Strict):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    reason: str = Field(min_length=1)
    order: int = 100
    when: When
    patches: str
    source: str = ""

    def record(self) -> overlay_model.Overlay:
        return overlay_model.Overlay(
            name=self.name, reason=self.reason, when=self.when.record(), patches=self.patches, order=self.order, source=self.source
        )


def _problems(exc: ValidationError, code: str, prefix: str) -> CompileError:
    return CompileError([error(code, prefix + ".".join(str(part) for part in err["loc"]), err["msg"]) for err in exc.errors()])


def checked_entry(data: Any, prefix: str) -> catalog.CatalogEntry:
    """The catalog entry ``data`` describes; CompileError (``CatalogInvalid`` at ``prefix`` + field) otherwise."""
    try:
        return CatalogEntry.model_validate(data).record()
    except ValidationError as exc:
        raise _problems(exc, "CatalogInvalid", prefix) from None


def checked_defaults(data: Any, prefix: str) -> catalog.GPUDefaults:
    """The GPU defaults table ``data`` describes; CompileError (``CatalogInvalid``) otherwise."""
    try:
        return GPUDefaults.model_validate(data).record()
    except ValidationError as exc:
        raise _problems(exc, "CatalogInvalid", prefix) from None


def checked_overlay(data: Any, prefix: str) -> overlay_model.Overlay:
    """The overlay ``data`` describes (its ``source`` included); CompileError (``OverlayInvalid``) otherwise."""
    try:
        return Overlay.model_validate(data).record()
    except ValidationError as exc:
        raise _problems(exc, "OverlayInvalid", prefix) from None
