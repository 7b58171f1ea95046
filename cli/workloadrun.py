"""``nvcrectl workloadrun``: render a WorkloadRun offline into the Workflow the controller would create."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .certification import Format, _explain, _load_facts, _load_single
from .output import guarded, print_diagnostics

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
    from nvcre.compiler.emit import dump_json, dump_yaml_stream
    from nvcre.compiler.workloadrun import render_workloadrun

    document = _load_single(file)
    rendered = render_workloadrun(document, facts=_load_facts(facts), platform=platform, gpu_arch=gpu_arch)
    print_diagnostics(rendered.diagnostics)
    if explain:
        _explain(rendered)
    text = dump_json(rendered.workflows) if output is Format.json else dump_yaml_stream(rendered.workflows)
    sys.stdout.write(text)
