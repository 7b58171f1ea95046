"""``nvcrectl setup render``: print the objects that install the controller, from chart-style values.

Values come from the defaults, then every ``-f/--values`` file in order, then every ``--set`` in
order (Helm's precedence). Nothing talks to a cluster: pipe the output to ``kubectl apply -f -``
or commit it (``--output-dir``) for a GitOps tool to sync.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from .certification import Format, OutputDirOption, emit_workflows
from .output import guarded, print_diagnostics

app = typer.Typer(help="Install the nvcre controller: CRDs, LogProfiles, RBAC and the Deployment.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """Install the nvcre controller."""


def _values_file(path: str) -> dict[str, Any]:
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import load_documents, read_text

    if "://" in path:
        raise CompileError([error("ValuesURL", "--values", f"{path}: values must be a local file (URLs are not fetched)")])
    docs = load_documents(read_text(path), path)
    if not docs:
        return {}
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise CompileError([error("InvalidValues", path, "expected one YAML mapping of values")])
    return docs[0]


@app.command("render")
@guarded
def render(
    values: Annotated[list[str] | None, typer.Option("--values", "-f", help="Values file (repeatable; '-' reads stdin).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value in Helm syntax (repeatable).")] = None,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml or json.")] = Format.yaml,
    output_dir: OutputDirOption = None,
) -> None:
    """Print the install objects in apply order: CRDs, namespace, LogProfiles, RBAC, ServiceAccount, Deployment."""
    from nvcre.compiler.install import parse_set, render_install

    layers = [_values_file(path) for path in values or []]
    layers += [parse_set(expression, f"--set {expression}") for expression in set_ or []]
    installed = render_install(layers)
    print_diagnostics(installed.diagnostics)
    emit_workflows(installed.objects, output=output, output_dir=output_dir)


if __name__ == "__main__":
    sys.exit(app())
