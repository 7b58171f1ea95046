"""``nvcrectl workloadrun``: render a WorkloadRun offline into the Workflow the controller would create."""

from __future__ import annotations

from pathlib import Path

import typer

from .certification import live_facts_for, render_to_stdout
from .common import (
    DryRunContextOption,
    DryRunKubeconfigOption,
    DryRunOption,
    ExplainOption,
    FactsOption,
    Format,
    GPUArchOption,
    PlatformOption,
)
from .evidence import evidence_command_for
from .output import guarded

app = typer.Typer(help="Render WorkloadRuns: ad-hoc MPI, torch or exec workloads.", no_args_is_help=True)


@app.command("render")
@guarded
def render(
    file: Path = typer.Argument(..., help="WorkloadRun YAML file ('-' reads standard input)."),
    platform: PlatformOption = None,
    gpu_arch: GPUArchOption = None,
    facts: FactsOption = None,
    output: Format = typer.Option(Format.yaml, "--output", "-o", help="yaml (one document) or json (one object)."),
    explain: ExplainOption = False,
    dry_run: DryRunOption = False,
    kubeconfig: DryRunKubeconfigOption = None,
    context: DryRunContextOption = None,
) -> None:
    """Print the one Workflow the WorkloadRun becomes, as the controller would create it, with what it was rendered for."""
    from nvcre.compiler.workloadrun import render_workloadrun

    from .workflow import stamp_detected

    live = live_facts_for(dry_run, gpu_arch, facts, kubeconfig, context)
    render_to_stdout(
        lambda document, **inputs: stamp_detected(render_workloadrun(document, **inputs)),
        file,
        platform=platform,
        gpu_arch=gpu_arch,
        facts=live or facts,
        output=output,
        explain=explain,
        single=True,
    )


app.command("evidence")(guarded(evidence_command_for("WorkloadRun")))
