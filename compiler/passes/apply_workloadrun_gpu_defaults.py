"""Pass: GPU defaults for a WorkloadRun, with advice that names the WorkloadRun's own fields.

The sizing is exactly the shared ``apply_gpu_defaults`` pass (explicit fields win, then the
architecture and platform rows, then the fallback). Only the wording of the
``GPUArchitectureDefaults`` warning differs: a WorkloadRun has no categories, so the advice
names ``spec.gpusPerNode`` and ``spec.mlnxPerNode`` alone.
"""

from __future__ import annotations

from ..diagnostics import Diagnostic, warning
from ..unit import Context, Unit
from .apply_gpu_defaults import apply_gpu_defaults, fallback_message

__all__ = ["apply_workloadrun_gpu_defaults", "WORKLOADRUN_HINT"]

WORKLOADRUN_HINT = "spec.gpusPerNode and spec.mlnxPerNode"
CODE = "GPUArchitectureDefaults"


def apply_workloadrun_gpu_defaults(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    result, found = apply_gpu_defaults(unit, ctx)
    if not any(d.code == CODE for d in found):
        return result, found
    gpus, mlnx, _ = ctx.catalog.gpu_defaults.lookup(ctx.cluster.gpu_arch, ctx.cluster.platform)
    message = fallback_message(
        ctx.cluster.gpu_arch,
        gpus,
        mlnx,
        result.options["gpusPerNode"],
        result.options["mlnxPerNode"],
        WORKLOADRUN_HINT,
    )
    return result, [warning(CODE, d.path, message) if d.code == CODE else d for d in found]
