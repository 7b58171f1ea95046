"""``nvcrectl workloadrun``: render a WorkloadRun offline into the Workflow the controller would create."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .certification import render_to_stdout
from .common import ContextOption, ExplainOption, FactsOption, Format, GPUArchOption, KubeconfigOption, NamespaceOption, PlatformOption
from .output import guarded

app = typer.Typer(help="Render WorkloadRuns: ad-hoc MPI, torch or exec workloads.", no_args_is_help=True)


@app.command("render")
@guarded
def render(
    file: Path = typer.Argument(..., help="WorkloadRun YAML file ('-' reads standard input)."),
    platform: PlatformOption = None,
    gpu_arch: GPUArchOption = None,
    facts: FactsOption = None,
    output: Format = typer.Option(Format.yaml, "--output", "-o", help="yaml (one document) or json (an array of one)."),
    explain: ExplainOption = False,
) -> None:
    """Print the one Workflow the WorkloadRun becomes, exactly as the controller would create it."""
    from nvcre.compiler.workloadrun import render_workloadrun

    render_to_stdout(render_workloadrun, file, platform=platform, gpu_arch=gpu_arch, facts=facts, output=output, explain=explain)


@app.command("evidence")
@guarded
def evidence(
    name: Annotated[str, typer.Argument(help="WorkloadRun name.")],
    out: Annotated[Path, typer.Option("--out", help="The bundle directory to create (must be absent or empty).")],
    namespace: NamespaceOption = "default",
    sign_key: Annotated[Path | None, typer.Option("--sign-key", help="Sign with this PEM private key (ECDSA P-256 or Ed25519).")] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Write the WorkloadRun's evidence bundle (see `nvcrectl certification evidence`)."""
    from .evidence import evidence_command

    evidence_command("WorkloadRun", name, namespace, out, sign_key, kubeconfig, context)
