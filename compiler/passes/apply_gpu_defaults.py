"""Pass: fill gpusPerNode, mlnxPerNode and enableMNNVL from the GPU defaults table.

Explicit options win. Otherwise the architecture row applies, with single fields replaced by a
platform row (OCI GB200 requests no NICs). An architecture the table does not know is sized at
the fallback (4 GPUs, no NICs) and the run says so with a GPUArchitectureDefaults warning, the
same message every render path and ``cluster info`` print.
"""

from __future__ import annotations

from dataclasses import replace

from ..diagnostics import Diagnostic, warning
from ..unit import Context, Unit

__all__ = ["apply_gpu_defaults", "fallback_message", "MNNVL_ARCHS"]

MNNVL_ARCHS = ("gb200", "gb300")


def fallback_message(arch: str, gpus: int, mlnx: int, used_gpus: int, used_mlnx: int, hint: str) -> str:
    return (
        f"GPU architecture {arch!r} is not in the catalog's GPU defaults, so it falls back to "
        f"gpusPerNode={gpus} mlnxPerNode={mlnx}; this run is sized at gpusPerNode={used_gpus} "
        f"mlnxPerNode={used_mlnx}. If the nodes differ, set {hint}, and report the architecture "
        f"so it can be added to the catalog."
    )


def apply_gpu_defaults(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    table = ctx.catalog.gpu_defaults
    arch, platform = ctx.cluster.gpu_arch, ctx.cluster.platform
    gpus, mlnx, source = table.lookup(arch, platform)
    options = dict(unit.options)
    records = []
    diags: list[Diagnostic] = []
    for key, value in (("gpusPerNode", gpus), ("mlnxPerNode", mlnx)):
        if key in options:
            records.append({"decision": key, "value": options[key], "source": "option"})
        else:
            options[key] = value
            records.append({"decision": key, "value": value, "source": f"gpu-defaults:{source}"})
    if source == "fallback" and arch not in ("", "unknown"):
        hint = "spec.gpusPerNode and spec.mlnxPerNode (or spec.categories[].options)"
        diags.append(
            warning(
                "GPUArchitectureDefaults",
                ctx.path,
                fallback_message(arch, gpus, mlnx, options["gpusPerNode"], options["mlnxPerNode"], hint),
            )
        )
    if "enableMNNVL" not in options:
        options["enableMNNVL"] = arch in MNNVL_ARCHS
        records.append({"decision": "enableMNNVL", "value": options["enableMNNVL"], "source": "architecture"})
    return replace(unit, options=options).with_provenance(*records), diags
