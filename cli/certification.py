"""``nvcrectl certification``: offline render, validation and the category list."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .output import guarded, print_diagnostics

app = typer.Typer(help="Render, validate and inspect Certifications.", no_args_is_help=True)


class Format(str, Enum):
    yaml = "yaml"
    json = "json"


class ListFormat(str, Enum):
    text = "text"
    json = "json"


# Options shared by every render command (certification and workloadrun).
PlatformOption = Annotated[Optional[str], typer.Option("--platform", help="Platform to render for (overrides detection).")]
GPUArchOption = Annotated[
    Optional[str], typer.Option("--gpu-arch", help="GPU architecture: gb300, NVIDIA-GB300 or 'NVIDIA GB300'.")
]
FactsOption = Annotated[Optional[Path], typer.Option("--facts", help="Cluster facts: Nodes, ResourceSlices, Pods as YAML.")]
ExplainOption = Annotated[
    bool, typer.Option("--explain", help="Print every render decision and where it came from to stderr.")
]


def _load_single(path: Path) -> dict:
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import load_file

    docs = load_file(path)
    if len(docs) != 1:
        raise CompileError([error("MultipleDocuments", str(path), f"expected one document, found {len(docs)}")])
    return docs[0]


def _load_facts(path: Optional[Path]):
    if path is None:
        return None
    from nvcre.compiler.facts import load_facts

    return load_facts(path)


@app.command("render")
@guarded
def render(
    file: Path = typer.Argument(..., help="Certification YAML file ('-' reads standard input)."),
    platform: PlatformOption = None,
    gpu_arch: GPUArchOption = None,
    facts: FactsOption = None,
    output: Format = typer.Option(Format.yaml, "--output", "-o", help="yaml (documents separated by ---) or json (one array)."),
    explain: ExplainOption = False,
) -> None:
    """Print one Workflow per category, in spec order, exactly as the controller would create them."""
    from nvcre.compiler.render import render_certification

    render_to_stdout(render_certification, file, platform=platform, gpu_arch=gpu_arch, facts=facts, output=output, explain=explain)


def render_to_stdout(renderer, file: Path, *, platform, gpu_arch, facts, output: Format, explain: bool) -> None:
    """Shared body of the render commands: load, render, report diagnostics, then print the documents.

    Everything is rendered before anything is printed, so a failing render leaves stdout empty.
    """
    from nvcre.compiler.emit import dump_json, dump_yaml_stream

    rendered = renderer(_load_single(file), facts=_load_facts(facts), platform=platform, gpu_arch=gpu_arch)
    print_diagnostics(rendered.diagnostics)
    if explain:
        _explain(rendered)
    text = dump_json(rendered.workflows) if output is Format.json else dump_yaml_stream(rendered.workflows)
    sys.stdout.write(text)


def _explain(rendered) -> None:
    for workflow, records in zip(rendered.workflows, rendered.provenance):
        sys.stderr.write(f"# {workflow['metadata']['name']}\n")
        for record in records:
            extra = f" ({record['reason']})" if record.get("reason") else ""
            source = f" from {record['source']}" if record.get("source") else ""
            sys.stderr.write(f"#   {record['decision']}: {record['value']}{source}{extra}\n")


@app.command("validate")
@guarded
def validate(file: Path = typer.Argument(..., help="Certification or WorkloadRun YAML file.")) -> None:
    """Check a document against the same rules the API server applies; no cluster needed."""
    from nvcre.compiler.api.validate import validate as check
    from nvcre.compiler.diagnostics import raise_if_errors

    found = check(_load_single(file))
    raise_if_errors(found)
    print_diagnostics(found)
    sys.stdout.write(f"{file}: valid\n")


@app.command("list-categories")
@guarded
def list_categories(output: ListFormat = typer.Option(ListFormat.text, "--output", "-o")) -> None:
    """List the catalog's categories."""
    from nvcre.compiler.catalog import load_catalog
    from nvcre.compiler.emit import dump_json

    catalog = load_catalog()
    if output is ListFormat.json:
        rows = [
            {"domain": e.domain, "variant": e.variant, "description": e.description,
             "measurement": e.measurement, "timeoutPerJob": e.timeout_per_job}
            for e in catalog.entries
        ]
        sys.stdout.write(dump_json(rows))
        return
    width = max(len(e.key) for e in catalog.entries)
    sys.stdout.write(f"{'CATEGORY':<{width}}  {'TIMEOUT':<7}  DESCRIPTION\n")
    for e in catalog.entries:
        sys.stdout.write(f"{e.key:<{width}}  {e.timeout_per_job:<7}  {e.description}\n")
