"""Apply the user's workload environment (``env``) after the catalog and platform overlays.

The user's variables win by name over what the catalog and overlays rendered. Where a variable
lands depends on how the entry starts its ranks:

* MPI entries: ranks start under sshd with a fresh environment, so each variable becomes a
  ``-x NAME=VALUE`` pair in ``trainer.args``. A name already forwarded is rewritten where it
  stands; a new one goes right after the last ``-x`` pair. An entry whose command line has no
  ``-x`` pair fails rather than guessing where mpirun's own options end, and a command line
  pushed past Kubeflow's 128 ``trainer.args`` fails instead of being refused by the API server.
* every other entry: ``trainer.env``, replaced by name, else appended.

The training entries' script computes with some variables (``TRAIN_SCRIPT_COUNTS``); a value
for one of them that is not plain decimal digits is refused here, where it is known, as well as
by the script itself before any arithmetic.

No env leaves the unit untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..api.env_counts import TRAIN_SCRIPT_COUNTS, count_error, is_count
from ..datacopy import plain_copy
from ..diagnostics import Diagnostic, error
from ..mpi_args import NoForwardAnchor, set_forwarded
from ..unit import Context, Unit
from ..workflow_paths import option_path, trainer

__all__ = ["MAX_ENV_ENTRIES", "MAX_TRAINER_ARGS", "TRAIN_SCRIPT_COUNTS", "merge_env"]

MAX_ENV_ENTRIES = 32
#: Kubeflow Trainer's limit on ``trainer.args`` (and ``trainer.command``)
MAX_TRAINER_ARGS = 128


def merge_env(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    env = unit.options.get("env")
    if not env:
        return unit, []
    where = option_path(ctx, "env")
    pairs, problems = _checked_pairs(env, where)
    if not problems and ctx.entry.domain == "training":
        problems = _checked_counts(env, ctx, unit)
    if problems:
        return unit, problems
    if unit.workflow is None:
        return unit, [error("WorkflowMissing", where, f"{ctx.entry.key}: env is set but no Workflow was rendered to apply it to")]

    workflow = plain_copy(dict(unit.workflow))
    found = trainer(workflow)
    if found is None:
        return unit, [
            error(
                "TrainerNotFound",
                where,
                f"{ctx.entry.key}: env is set but the Workflow has no TrainJob trainer to receive it",
            )
        ]
    if ctx.entry.forwards_env_with_mpi:
        problems = _forward_with_mpi(found.value, pairs, ctx, where)
    else:
        problems = _merge_trainer_env(found.value, pairs)
    if problems:
        return unit, problems
    return replace(unit, workflow=workflow), []


def _checked_pairs(env: Any, where: str) -> tuple[list[tuple[str, str]], list[Diagnostic]]:
    """``(name, value)`` pairs in order; the API layer checks these too, this guards the pass."""
    if not isinstance(env, list):
        return [], [error("EnvInvalid", where, f"env must be a list of {{name, value}} entries, got {type(env).__name__}")]
    if len(env) > MAX_ENV_ENTRIES:
        return [], [error("EnvEntryLimit", where, f"{len(env)} entries exceeds the maximum of {MAX_ENV_ENTRIES}")]
    pairs: list[tuple[str, str]] = []
    problems: list[Diagnostic] = []
    for index, entry in enumerate(env):
        item = f"{where}[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            problems.append(error("EnvInvalid", f"{item}.name", "every env entry needs a non-empty name"))
            continue
        if "valueFrom" in entry:
            problems.append(
                error(
                    "EnvValueFromUnsupported",
                    f"{item}.valueFrom",
                    "valueFrom is not supported: a variable reaches MPI ranks by value",
                )
            )
            continue
        value = entry.get("value", "")
        if not isinstance(value, str):
            problems.append(error("EnvInvalid", f"{item}.value", f"env value must be a string, got {type(value).__name__}"))
            continue
        pairs.append((entry["name"], value))
    return pairs, problems


def _checked_counts(env: list[Any], ctx: Context, unit: Unit) -> list[Diagnostic]:
    """Counts the training script computes with must be decimal digits (never shell text); each
    error names the entry the user wrote (the category's own env, else the spec-wide env)."""
    return [
        count_error(_written_at(entry["name"], ctx, unit), entry["name"])
        for entry in env
        if entry["name"] in TRAIN_SCRIPT_COUNTS and not is_count(entry.get("value", ""))
    ]


def _written_at(name: str, ctx: Context, unit: Unit) -> str:
    """The source path of the value ``name`` got in the merged env."""
    own = (unit.category.get("options") or {}).get("env") if ctx.source_kind != "WorkloadRun" else None
    for levels, base in ((own, option_path(ctx, "env")), (ctx.spec.get("env"), "spec.env")):
        for index, entry in reversed(list(enumerate(levels or ()))):
            if isinstance(entry, dict) and entry.get("name") == name:
                return f"{base}[{index}].value"
    return f"{option_path(ctx, 'env')}.{name}"


def _forward_with_mpi(spec: dict[str, Any], pairs: list[tuple[str, str]], ctx: Context, where: str) -> list[Diagnostic]:
    current = spec.get("args")
    args: list[str] = list(current) if isinstance(current, list) else []
    try:
        for name, value in pairs:
            args = set_forwarded(args, name, value)
    except NoForwardAnchor:
        names = ", ".join(name for name, _ in pairs)
        return [
            error(
                "MPIEnvAnchorMissing",
                where,
                f"{ctx.entry.key}: trainer.args hold no -x pair to place {names} after; "
                "an MPI entry forwards env to its ranks with -x NAME=VALUE pairs",
            )
        ]
    if len(args) > MAX_TRAINER_ARGS:
        return [
            error(
                "TrainerArgsLimit",
                where,
                f"{ctx.entry.key}: forwarding env makes {len(args)} trainer.args, over Kubeflow's maximum of {MAX_TRAINER_ARGS}",
            )
        ]
    spec["args"] = args
    return []


def _merge_trainer_env(spec: dict[str, Any], pairs: list[tuple[str, str]]) -> list[Diagnostic]:
    merged = list(spec.get("env") or [])
    for name, value in pairs:
        entry = {"name": name, "value": value}
        hits = [index for index, item in enumerate(merged) if isinstance(item, dict) and item.get("name") == name]
        for index in hits:
            merged[index] = dict(entry)
        if not hits:
            merged.append(entry)
    spec["env"] = merged
    return []
