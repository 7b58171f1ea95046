"""``nvcrectl certification``: offline render (to stdout or a GitOps directory), validation, the category list.

The group's other commands live in their own modules (``diff``, ``images``, ``run``, and the
commands over a submitted run); :mod:`nvcre.cli.typer_app` lists them all in one table.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import (
    DryRunContextOption,
    DryRunKubeconfigOption,
    DryRunOption,
    EnvPrefixOption,
    ExplainOption,
    FactsOption,
    Format,
    GPUArchOption,
    ListFormat,
    OutputDirOption,
    PlatformOption,
    kube_client,
    load_facts,
    load_single,
)
from .evidence import evidence_command_for
from .output import guarded, print_diagnostics
from .render_flags import check_namespace_flag, flags_from_env, in_namespace

if TYPE_CHECKING:
    from nvcre.compiler.facts import ClusterFacts

app = typer.Typer(help="Render, validate and inspect Certifications.", no_args_is_help=True)


@app.command("render")
@guarded
def render(
    file: Annotated[
        Path,
        typer.Argument(help="Certification YAML file ('-' reads standard input), or a directory: every Certification in it."),
    ],
    platform: PlatformOption = None,
    gpu_arch: GPUArchOption = None,
    facts: FactsOption = None,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml (documents separated by ---) or json (one array).")] = Format.yaml,
    explain: ExplainOption = False,
    output_dir: OutputDirOption = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace", "-n", help="Give each Workflow this metadata.namespace (the Certification's, when it names one, must agree)."
        ),
    ] = None,
    env_prefix: EnvPrefixOption = None,
    dry_run: DryRunOption = False,
    kubeconfig: DryRunKubeconfigOption = None,
    context: DryRunContextOption = None,
) -> None:
    """Print one Workflow per category, in spec order, exactly as the controller would create them."""
    from nvcre.compiler.render import render_certification

    platform, gpu_arch, facts = flags_from_env(env_prefix, platform, gpu_arch, facts)
    check_namespace_flag(namespace)
    live = live_facts_for(dry_run, gpu_arch, facts, kubeconfig, context)
    if file.is_dir():
        render_directory(
            file,
            platform=platform,
            gpu_arch=gpu_arch,
            facts=live or facts,
            output=output,
            explain=explain,
            output_dir=output_dir,
            namespace=namespace,
        )
        return
    render_to_stdout(
        render_certification,
        file,
        platform=platform,
        gpu_arch=gpu_arch,
        facts=live or facts,
        output=output,
        explain=explain,
        output_dir=output_dir,
        namespace=namespace,
    )


def live_facts_for(
    dry_run: bool, gpu_arch: str | None, facts: Path | None, kubeconfig: str | None, context: str | None
) -> ClusterFacts | None:
    """With ``--dry-run``, the live cluster's facts (flag conflicts refused with exit 2); else None."""
    if not dry_run:
        return None
    from nvcre.compiler.diagnostics import CompileError, error

    if gpu_arch:
        raise CompileError(
            [
                error(
                    "InvalidFlags",
                    "--gpu-arch",
                    "--dry-run detects the GPU architecture from cluster nodes; cannot combine with --gpu-arch",
                )
            ]
        )
    if facts is not None:
        raise CompileError([error("InvalidFlags", "--facts", "--dry-run reads the facts from the cluster; cannot combine with --facts")])
    from nvcre.runtime.ops.facts import live_facts

    found = live_facts(kube_client(kubeconfig, context))
    sys.stderr.write(f"Read {len(found.nodes)} nodes and {len(found.resource_slices)} ResourceSlices from the cluster.\n")
    return found


def render_to_stdout(
    renderer: Callable[..., Any],
    file: Path,
    *,
    platform: str | None,
    gpu_arch: str | None,
    facts: Path | ClusterFacts | None,
    output: Format,
    explain: bool,
    output_dir: Path | None = None,
    namespace: str | None = None,
    single: bool = False,
) -> None:
    """Shared body of the render commands: load, render, report diagnostics, then print the documents.

    Everything is rendered before anything is printed, so a failing render leaves stdout empty
    (and, with ``output_dir``, the directory untouched). ``single``: the renderer gives exactly
    one Workflow, printed in JSON as that object rather than an array (``workloadrun render``).
    """
    document = load_single(file)
    rendered = renderer(document, facts=load_facts(facts), platform=platform, gpu_arch=gpu_arch)
    workflows = in_namespace(rendered.workflows, document, namespace, str(file))
    print_diagnostics(rendered.diagnostics)
    if explain:
        _explain(rendered)
    if single and output is Format.json and output_dir is None and len(workflows) == 1:
        from nvcre.compiler.emit import dump_json

        sys.stdout.write(dump_json(workflows[0]))
        return
    emit_workflows(workflows, output=output, output_dir=output_dir)


def emit_workflows(workflows: list[Any], *, output: Format, output_dir: Path | None) -> None:
    """Print the objects on stdout, or lay them out in ``output_dir`` (a summary line goes to stderr)."""
    from nvcre.compiler.emit import dump_json, dump_yaml_stream

    if output_dir is not None:
        from nvcre.compiler.diagnostics import CompileError, error
        from nvcre.compiler.gitops import plan_directory

        from .gitops import write_directory

        if output is Format.json:
            raise CompileError([error("InvalidFlags", "--output", "--output-dir writes YAML files; drop -o json")])
        result = write_directory(plan_directory(workflows).files, output_dir)
        sys.stderr.write(result.summary() + "\n")
        return
    sys.stdout.write(dump_json(workflows) if output is Format.json else dump_yaml_stream(workflows))


#: YAML files one directory walk may read; a walk that finds more stops with an error.
MAX_DIRECTORY_FILES = 10_000


def yaml_files(directory: Path) -> list[Path]:
    """The ``.yaml``/``.yml`` regular files under ``directory``, sorted; hidden entries skipped.

    Symbolic links to directories are not followed (no loops, no walk out of the tree), nor are
    mount points (a bind-mounted /proc is not a folder of YAML); a folder that cannot be read is an error, one that vanishes during the walk is skipped, and a tree of
    more than ``MAX_DIRECTORY_FILES`` YAML files is refused rather than read.
    """
    from nvcre.compiler.diagnostics import CompileError, error

    problems: list[Any] = []

    def unreadable(exc: OSError) -> None:
        if not isinstance(exc, FileNotFoundError):
            problems.append(error("DirectoryUnreadable", str(exc.filename or directory), f"cannot read: {exc.strerror or exc}"))

    def same_device(folder: str) -> bool:
        try:
            return os.lstat(folder).st_dev == device
        except OSError:
            return False

    device = os.stat(directory).st_dev
    found: list[Path] = []
    for root, folders, files in os.walk(directory, onerror=unreadable, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and same_device(os.path.join(root, f)))
        for name in files:
            path = Path(root) / name
            if name.startswith(".") or path.suffix not in (".yaml", ".yml") or not path.is_file():
                continue
            found.append(path)
            if len(found) > MAX_DIRECTORY_FILES:
                raise CompileError(
                    [
                        error(
                            "TooManyFiles",
                            str(directory),
                            f"more than {MAX_DIRECTORY_FILES:,} YAML files under this directory; give a narrower one",
                        )
                    ]
                )
    if problems:
        raise CompileError(problems)
    return sorted(found)


def certifications_in(directory: Path, kinds: tuple[str, ...] = ("Certification",)) -> list[tuple[str, dict[str, Any]]]:
    """Every nvcre document of ``kinds`` under ``directory`` (recursively, hidden folders skipped), by path.

    Returns ``(label, document)`` pairs in path order; the label names the file (and the
    document's position when a file holds several). Other documents, empty files and documents
    that are not mappings are ignored; a file that is not valid YAML is an error.
    """
    from nvcre.compiler.vocabulary import GROUP
    from nvcre.compiler.yamlio import FILE_LIMITS, load_documents, read_text

    found: list[tuple[str, dict[str, Any]]] = []
    for path in yaml_files(directory):
        relative = path.relative_to(directory).as_posix()
        docs = load_documents(read_text(path, FILE_LIMITS.max_bytes or 0), relative, limits=FILE_LIMITS)
        for index, doc in enumerate(docs):
            if isinstance(doc, dict) and doc.get("kind") in kinds and str(doc.get("apiVersion", "")).startswith(f"{GROUP}/"):
                found.append((relative if len(docs) == 1 else f"{relative}[{index}]", doc))
    return found


def render_directory(
    directory: Path,
    *,
    platform: str | None,
    gpu_arch: str | None,
    facts: Path | ClusterFacts | None,
    output: Format,
    explain: bool,
    output_dir: Path | None,
    namespace: str | None = None,
) -> None:
    """Render every Certification under ``directory``; errors from all of them are reported together."""
    from dataclasses import replace

    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.render import render_certification

    sources = certifications_in(directory)
    if not sources:
        raise CompileError([error("NoCertifications", str(directory), "no Certification (nvcre.nvidia.com) found in any YAML file")])
    cluster_facts = load_facts(facts)
    workflows: list[Any] = []
    problems: list[Any] = []
    for label, document in sources:
        try:
            rendered = render_certification(document, facts=cluster_facts, platform=platform, gpu_arch=gpu_arch)
            placed = in_namespace(rendered.workflows, document, namespace, "")
        except CompileError as exc:
            problems.extend(replace(d, path=f"{label}: {d.path}" if d.path else label) for d in exc.diagnostics)
            continue
        print_diagnostics(replace(d, path=f"{label}: {d.path}" if d.path else label) for d in rendered.diagnostics)
        if explain:
            _explain(rendered)
        workflows.extend(placed)
    if problems:
        raise CompileError(problems)
    emit_workflows(workflows, output=output, output_dir=output_dir)


def _explain(rendered: Any) -> None:
    cluster = getattr(rendered, "cluster", None)
    if cluster is not None and cluster.provenance:
        # The cluster-wide decisions first: which flag, label or default decided each.
        sys.stderr.write("# cluster\n")
        for name, fact in cluster.provenance.items():
            detail = f": {fact['detail']}" if fact.get("detail") else ""
            value = fact["value"] if not isinstance(fact["value"], (dict, list)) else json.dumps(fact["value"], sort_keys=True)
            sys.stderr.write(f"#   {name}: {value} ({fact['source']}{detail})\n")
    for workflow, records in zip(rendered.workflows, rendered.provenance):
        sys.stderr.write(f"# {workflow['metadata']['name']}\n")
        for record in records:
            extra = f" ({record['reason']})" if record.get("reason") else ""
            source = f" from {record['source']}" if record.get("source") else ""
            sys.stderr.write(f"#   {record['decision']}: {record['value']}{source}{extra}\n")


@app.command("validate")
@guarded
def validate(
    file: Annotated[Path, typer.Argument(help="Certification or WorkloadRun YAML file, or a directory: every one in it.")],
) -> None:
    """Check a document against the same rules the API server applies; no cluster needed."""
    from dataclasses import replace

    from nvcre.compiler.api.validate import validate as check
    from nvcre.compiler.diagnostics import CompileError, error, raise_if_errors

    if not file.is_dir():
        found = check(load_single(file))
        raise_if_errors(found)
        print_diagnostics(found)
        sys.stdout.write(f"{file}: valid\n")
        return
    sources = certifications_in(file, kinds=("Certification", "WorkloadRun"))
    if not sources:
        raise CompileError([error("NoDocuments", str(file), "no Certification or WorkloadRun (nvcre.nvidia.com) found in any YAML file")])
    every = [replace(d, path=f"{label}: {d.path}" if d.path else label) for label, doc in sources for d in check(doc)]
    raise_if_errors(every)
    print_diagnostics(every)
    sys.stdout.write("".join(f"{label}: valid\n" for label, _ in sources))


@app.command("list-categories")
@guarded
def list_categories(
    output: Annotated[
        ListFormat,
        typer.Option(
            "--output",
            "-o",
            help="table (default: DOMAIN and VARIANT, as NVCRE prints it), wide (with timeout and description), yaml or json.",
        ),
    ] = ListFormat.table,
) -> None:
    """List the catalog's categories."""
    from nvcre.compiler.catalog import load_catalog
    from nvcre.compiler.emit import dump_json, dump_yaml

    catalog = load_catalog()
    if output in (ListFormat.json, ListFormat.yaml):
        rows = [
            {
                "domain": e.domain,
                "variant": e.variant,
                "description": e.description,
                "measurement": e.measurement,
                "timeoutPerJob": e.timeout_per_job,
            }
            for e in catalog.entries
        ]
        sys.stdout.write(dump_json(rows) if output is ListFormat.json else dump_yaml(rows))
        return
    if output is ListFormat.wide:
        width = max(len(e.key) for e in catalog.entries)
        sys.stdout.write(f"{'CATEGORY':<{width}}  {'TIMEOUT':<7}  DESCRIPTION\n")
        sys.stdout.write("".join(f"{e.key:<{width}}  {e.timeout_per_job:<7}  {e.description}\n" for e in catalog.entries))
        return
    # NVCRE's layout, Go's "%-20s %s": a script splitting on whitespace gets domain and variant.
    sys.stdout.write(f"{'DOMAIN':<20} VARIANT\n" + "".join(f"{e.domain:<20} {e.variant}\n" for e in catalog.entries))


app.command("evidence")(guarded(evidence_command_for("Certification")))
