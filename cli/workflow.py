"""``nvcrectl workflow render``: what a hand-written Workflow becomes on a cluster.

The Workflow is validated, planned over nodes — mock nodes for ``--platform``/``--gpu-arch``, the
Nodes of a ``--nodes-file`` (NVCRE's list of Nodes), a facts file, or the live cluster with
``--dry-run`` — and printed with its overrides applied
(``spec.overrides`` resolved against the detected platform and architecture, and removed). As
NVCRE's ``workflow render`` does, the printed Workflow says what it was rendered for:
``nvcrectl.nvidia.com/detected-platform`` and ``nvcrectl.nvidia.com/detected-gpu-architecture``
always, ``nvcrectl.nvidia.com/applied-overrides`` (the matched overrides as JSON) when any
matched. The plan (groups, nodes, exclusions, events) goes to stderr. Nothing is created.

``nvcrectl workloadrun render`` stamps the same two annotations as NVCRE's does
(:func:`stamp_detected`): the architecture always, the platform when it was given with
``--platform`` or detected (``--dry-run``, ``--facts``), never when it is only the default.
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


#: where a rendered platform came from when NVCRE's render would name it (not "defaulted")
_NAMED_PLATFORM_SOURCES = ("supplied", "detected")


def stamp_detected(rendered: Any) -> Any:
    """``rendered`` with each Workflow annotated as NVCRE's ``workloadrun render`` annotates it.

    ``nvcrectl.nvidia.com/detected-gpu-architecture`` always; ``nvcrectl.nvidia.com/detected-platform``
    only when the platform was supplied (``--platform``) or detected from cluster objects, as NVCRE
    writes it with ``--platform`` and with ``--dry-run`` but not from its default. The input is not changed.
    """
    import dataclasses

    view = rendered.cluster
    if view is None:
        return rendered
    platform_source = str((view.provenance.get("platform") or {}).get("source") or "")
    stamped = []
    for workflow in rendered.workflows:
        meta = dict(workflow.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        annotations[DETECTED_GPU_ARCHITECTURE] = view.gpu_arch
        if platform_source in _NAMED_PLATFORM_SOURCES:
            annotations[DETECTED_PLATFORM] = view.platform
        meta["annotations"] = annotations
        stamped.append({**workflow, "metadata": meta})
    return dataclasses.replace(rendered, workflows=stamped)


@app.callback()
def main() -> None:
    """Render hand-written Workflows."""


def _check_node_sources(platform: str | None, gpu_arch: str | None, nodes_file: Path | None, facts: Path | None, dry_run: bool) -> None:
    """Exactly one place the nodes come from; NVCRE's messages for its own flag pairs."""
    from nvcre.compiler.diagnostics import CompileError, error

    if nodes_file is not None and dry_run:
        message = "--dry-run discovers nodes from cluster; cannot combine with --nodes-file, --platform, or --gpu-arch"
        raise CompileError([error("InvalidFlags", "--nodes-file", message)])
    if nodes_file is not None and (platform or gpu_arch):
        raise CompileError([error("InvalidFlags", "--nodes-file", "--nodes-file and --platform/--gpu-arch are mutually exclusive")])
    sources = [bool(platform or gpu_arch), nodes_file is not None, facts is not None, dry_run]
    if sum(sources) != 1:
        raise CompileError(
            [error("InvalidFlags", "--platform", "give exactly one of --platform/--gpu-arch, --nodes-file, --facts or --dry-run")]
        )


@app.command("render")
@guarded
def render(
    file: Annotated[Path, typer.Argument(help="A Workflow YAML ('-' reads standard input).")],
    platform: Annotated[str | None, typer.Option("--platform", help="Plan over mock nodes of this platform.")] = None,
    gpu_arch: Annotated[str | None, typer.Option("--gpu-arch", help="Plan over mock nodes of this GPU architecture.")] = None,
    nodes: Annotated[int, typer.Option("--nodes", help="How many mock nodes.")] = 2,
    facts: Annotated[Path | None, typer.Option("--facts", help="Plan over the Nodes in this facts file instead.")] = None,
    nodes_file: Annotated[
        Path | None,
        typer.Option("--nodes-file", help="Plan over the Nodes in this YAML file (a list of Nodes, as NVCRE reads it, or a NodeList)."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan over the live cluster's nodes.")] = False,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml or json.")] = Format.yaml,
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig")] = None,
    context: Annotated[str | None, typer.Option("--context")] = None,
) -> None:
    """Print the Workflow with its overrides applied; the plan goes to stderr."""
    from nvcre.compiler.emit import dump_json, dump_yaml
    from nvcre.compiler.plan import PlanError, plan_workflow

    _check_node_sources(platform, gpu_arch, nodes_file, facts, dry_run)
    workflow = _load_workflow(file)
    cluster = _nodes_for(platform, gpu_arch, nodes, nodes_file, facts, dry_run, kubeconfig, context)
    try:
        plan = plan_workflow(workflow, cluster)
    except PlanError as exc:
        sys.stderr.write(f"error: {exc.reason}: {exc.message}\n")
        raise typer.Exit(2) from None
    resolved = _resolved(workflow, plan)
    _print_plan(plan)
    sys.stdout.write(dump_json(resolved) if output is Format.json else dump_yaml(resolved))


def _load_workflow(file: Path) -> Any:
    """The one Workflow of ``file``, valid as the API server would have it (exit 2 otherwise)."""
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError, error, errors_in

    workflow = load_single(file)
    if workflow.get("kind") != "Workflow":
        raise CompileError([error("WrongKind", f"{file}: kind", f"expected kind Workflow, got {workflow.get('kind')!r}")])
    problems = errors_in(validate(workflow))
    if problems:
        raise CompileError(problems)
    return workflow


def _nodes_for(
    platform: str | None,
    gpu_arch: str | None,
    nodes: int,
    nodes_file: Path | None,
    facts: Path | None,
    dry_run: bool,
    kubeconfig: str | None,
    context: str | None,
) -> Any:
    """The cluster facts to plan over, from the one source the flags name."""
    if nodes_file is not None:
        from .nodes_file import load_nodes_file

        return load_nodes_file(nodes_file)
    if facts is not None:
        from nvcre.compiler.facts import load_facts

        return load_facts(facts)
    if dry_run:
        from nvcre.runtime.ops.facts import live_facts

        from .common import kube_client

        return live_facts(kube_client(kubeconfig, context))
    if not (platform and gpu_arch):
        from nvcre.compiler.diagnostics import CompileError, error

        raise CompileError([error("InvalidFlags", "--gpu-arch", "mock nodes need both --platform and --gpu-arch")])
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.compiler.mocknodes import mock_nodes

    return facts_from_documents(mock_nodes(platform, gpu_arch, nodes), source=f"mock {platform}/{gpu_arch}")


def _resolved(workflow: Any, plan: Any) -> Any:
    """The Workflow with the planned spec (overrides applied and removed) and what it was rendered for."""
    import copy
    import json

    resolved = copy.deepcopy(workflow)
    resolved["spec"] = copy.deepcopy(dict(plan.workflow_spec or workflow.get("spec") or {}))
    resolved["spec"].pop("overrides", None)
    annotations = resolved.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[DETECTED_PLATFORM] = plan.platform
    annotations[DETECTED_GPU_ARCHITECTURE] = plan.gpu_architecture
    if plan.applied_overrides:
        annotations[APPLIED_OVERRIDES] = json.dumps([dict(o) for o in plan.applied_overrides], sort_keys=True, separators=(",", ":"))
    return resolved


def _print_plan(plan: Any) -> None:
    """The plan on stderr: its message, the groups, the events and the overrides applied."""
    sys.stderr.write(f"{plan.message}\n")
    for group in plan.groups:
        members = ", ".join(group.nodes) if group.nodes else "(any nodes: Unpinned)"
        sys.stderr.write(f"  {group.name}: {members}\n")
    for event in plan.events:
        sys.stderr.write(f"  {event.type} {event.reason}: {event.message}\n")
    for override in plan.applied_overrides:
        when, patches = _listed(override.get("when")), _listed(override.get("patches"))
        sys.stderr.write(f"  override[{override.get('index')}] applied (when {when}): {patches}\n")


def _listed(value: Any) -> str:
    """An applied override's ``when`` or ``patches``: the planner's text as it is, a list joined."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    return str(value or "none")
