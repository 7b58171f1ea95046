"""``nvcrectl workflow render``: what a hand-written Workflow becomes on a cluster.

The Workflow is validated, planned over nodes — mock nodes for ``--platform``/``--gpu-arch``, a
facts file, or the live cluster with ``--dry-run`` — and printed with its overrides applied
(``spec.overrides`` resolved against the detected platform and architecture, and removed). As
NVCRE's ``workflow render`` does, the printed Workflow says what it was rendered for:
``nvcrectl.nvidia.com/detected-platform`` and ``nvcrectl.nvidia.com/detected-gpu-architecture``
always, ``nvcrectl.nvidia.com/applied-overrides`` (the matched overrides as JSON) when any
matched. The plan (groups, nodes, exclusions, events) goes to stderr. Nothing is created.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import Format, load_single
from .output import guarded

app = typer.Typer(help="Render hand-written Workflows.", no_args_is_help=True)

#: the annotations the command stamps on the printed Workflow (the CLI's own group, as NVCRE's)
DETECTED_PLATFORM = "nvcrectl.nvidia.com/detected-platform"
DETECTED_GPU_ARCHITECTURE = "nvcrectl.nvidia.com/detected-gpu-architecture"
APPLIED_OVERRIDES = "nvcrectl.nvidia.com/applied-overrides"


@app.callback()
def main() -> None:
    """Render hand-written Workflows."""


@app.command("render")
@guarded
def render(
    file: Annotated[Path, typer.Argument(help="A Workflow YAML ('-' reads standard input).")],
    platform: Annotated[str | None, typer.Option("--platform", help="Plan over mock nodes of this platform.")] = None,
    gpu_arch: Annotated[str | None, typer.Option("--gpu-arch", help="Plan over mock nodes of this GPU architecture.")] = None,
    nodes: Annotated[int, typer.Option("--nodes", help="How many mock nodes.")] = 2,
    facts: Annotated[Path | None, typer.Option("--facts", help="Plan over the Nodes in this facts file instead.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan over the live cluster's nodes.")] = False,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml or json.")] = Format.yaml,
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig")] = None,
    context: Annotated[str | None, typer.Option("--context")] = None,
) -> None:
    """Print the Workflow with its overrides applied; the plan goes to stderr."""
    import copy

    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, error, errors_in
    from nvcre.compiler.emit import dump_json, dump_yaml
    from nvcre.compiler.plan import PlanError, plan_workflow

    sources = [bool(platform or gpu_arch), facts is not None, dry_run]
    if sum(sources) != 1:
        raise CompileError([error("InvalidFlags", "--platform", "give exactly one of --platform/--gpu-arch, --facts or --dry-run")])
    workflow = load_single(file)
    if workflow.get("kind") != "Workflow":
        raise CompileError([error("WrongKind", f"{file}: kind", f"expected kind Workflow, got {workflow.get('kind')!r}")])
    problems = errors_in(validate(workflow))
    if problems:
        raise CompileError(problems)

    cluster: Any
    if facts is not None:
        from nvcre.compiler.facts import load_facts

        cluster = load_facts(facts)
    elif dry_run:
        from nvcre.runtime.ops.facts import live_facts

        from .common import kube_client

        cluster = live_facts(kube_client(kubeconfig, context))
    else:
        if not (platform and gpu_arch):
            raise CompileError([error("InvalidFlags", "--gpu-arch", "mock nodes need both --platform and --gpu-arch")])
        from nvcre.compiler.facts import facts_from_documents
        from nvcre.compiler.mocknodes import mock_nodes

        cluster = facts_from_documents(mock_nodes(platform, gpu_arch, nodes), source=f"mock {platform}/{gpu_arch}")

    try:
        plan = plan_workflow(workflow, cluster)
    except PlanError as exc:
        sys.stderr.write(f"error: {exc.reason}: {exc.message}\n")
        raise typer.Exit(2) from None
    resolved = copy.deepcopy(workflow)
    resolved["spec"] = copy.deepcopy(dict(plan.workflow_spec or workflow.get("spec") or {}))
    resolved["spec"].pop("overrides", None)
    import json

    annotations = resolved.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[DETECTED_PLATFORM] = plan.platform
    annotations[DETECTED_GPU_ARCHITECTURE] = plan.gpu_architecture
    if plan.applied_overrides:
        annotations[APPLIED_OVERRIDES] = json.dumps([dict(o) for o in plan.applied_overrides], sort_keys=True, separators=(",", ":"))
    sys.stderr.write(f"{plan.message}\n")
    for group in plan.groups:
        members = ", ".join(group.nodes) if group.nodes else "(any nodes: Unpinned)"
        sys.stderr.write(f"  {group.name}: {members}\n")
    for event in plan.events:
        sys.stderr.write(f"  {event.type} {event.reason}: {event.message}\n")

    for override in plan.applied_overrides:
        when = json.dumps(override.get("when") or {}, sort_keys=True, separators=(",", ":"))
        sys.stderr.write(f"  override[{override.get('index')}] applied (when {when}): {', '.join(override.get('patches') or [])}\n")
    sys.stdout.write(dump_json(resolved) if output is Format.json else dump_yaml(resolved))
