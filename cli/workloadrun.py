"""``nvcrectl workloadrun``: render a WorkloadRun offline into the Workflow the controller would create."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .certification import Format, render_to_stdout
from .output import guarded

app = typer.Typer(help="Render WorkloadRuns: ad-hoc MPI, torch or exec workloads.", no_args_is_help=True)


@app.command("render")
@guarded
def render(
    file: Path = typer.Argument(..., help="WorkloadRun YAML file ('-' reads standard input)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="Platform to render for (overrides detection)."),
    gpu_arch: Optional[str] = typer.Option(None, "--gpu-arch", help="GPU architecture: gb300, NVIDIA-GB300 or 'NVIDIA GB300'."),
    facts: Optional[Path] = typer.Option(None, "--facts", help="Cluster facts: Nodes, ResourceSlices, Pods as YAML."),
    output: Format = typer.Option(Format.yaml, "--output", "-o", help="yaml (one document) or json (an array of one)."),
    explain: bool = typer.Option(False, "--explain", help="Print every render decision and where it came from to stderr."),
) -> None:
    """Print the one Workflow the WorkloadRun becomes, exactly as the controller would create it."""
    from nvcre.compiler.workloadrun import render_workloadrun

    render_to_stdout(render_workloadrun, file, platform=platform, gpu_arch=gpu_arch, facts=facts, output=output, explain=explain)
