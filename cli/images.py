"""``nvcrectl certification images``: what a registry mirror must hold before these renders can run.

Renders each file with the same flags as ``render`` and prints the mirror manifest
(``nvcre.compiler.images``): per category, every image with the containers that use it, and the
Git repositories workloads clone. ``--unique`` prints only the distinct image references, one a
line, for a mirroring script.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import FactsOption, GPUArchOption, PlatformOption, load_single
from .output import guarded, print_diagnostics

#: ``certification images`` (listed in the ``certification`` group by :mod:`nvcre.cli.typer_app`)
app = typer.Typer()


class ImagesFormat(str, Enum):
    text = "text"
    json = "json"


def _uses_text(ref: Any) -> str:
    groups: dict[tuple[str, str], list[str]] = {}
    for use in ref.uses:
        jobs = groups.setdefault((use.role, use.container), [])
        if use.job and use.job not in jobs:
            jobs.append(use.job)
    parts = []
    for (role, container), jobs in groups.items():
        where = f" in {', '.join(jobs)}" if jobs else ""
        parts.append(f"{role} {container}{where}" if role != "trainer" else "trainer")
    return "; ".join(parts)


def format_text(manifest: list[Any]) -> str:
    from nvcre.compiler.images import unique_images, unique_sources

    out: list[str] = []
    for entry in manifest:
        out.append(f"{entry.category} ({entry.kind} {entry.name})")
        for ref in entry.images:
            out.append(f"  image   {ref.image}")
            out.append(f"          used by {_uses_text(ref)}")
        for source in entry.sources:
            out.append(f"  source  {source.url}")
            out.append(f"          {source.project}, cloned by {source.container} (env {source.env})")
    images, sources = unique_images(manifest), unique_sources(manifest)
    out.append(f"{len(images)} distinct image(s), {len(sources)} source repository(ies) to mirror")
    return "\n".join(out) + "\n"


def format_json(manifest: list[Any]) -> str:
    from nvcre.compiler.emit import dump_json
    from nvcre.compiler.images import unique_images, unique_sources

    return dump_json(
        {
            "categories": [entry.as_dict() for entry in manifest],
            "images": unique_images(manifest),
            "sourceRepositories": unique_sources(manifest),
        }
    )


def _located(file: Path, diagnostic: Any) -> Any:
    """The diagnostic with its file in front of the path (several files may be rendered at once)."""
    from dataclasses import replace

    if diagnostic.path.startswith(str(file)):
        return diagnostic
    return replace(diagnostic, path=f"{file}: {diagnostic.path}" if diagnostic.path else str(file))


@app.command("images")
@guarded
def images(
    files: Annotated[list[Path], typer.Argument(help="Certification (or WorkloadRun) YAML files to render.")],
    platform: PlatformOption = None,
    gpu_arch: GPUArchOption = None,
    facts: FactsOption = None,
    output: Annotated[ImagesFormat, typer.Option("--output", "-o", help="text or json.")] = ImagesFormat.text,
    unique: Annotated[bool, typer.Option("--unique", help="Print only the distinct image references, one a line.")] = False,
) -> None:
    """List every image and source repository the renders need, per category, init containers and sidecars included."""
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.images import mirror_manifest, unique_images
    from nvcre.compiler.render import render_certification
    from nvcre.compiler.workloadrun import render_workloadrun

    cluster_facts = load_facts(facts) if facts else None
    workflows: list[dict[str, Any]] = []
    problems: list[Any] = []
    for file in files:
        try:
            document = load_single(file)
            renderer = render_workloadrun if document.get("kind") == "WorkloadRun" else render_certification
            rendered = renderer(document, facts=cluster_facts, platform=platform, gpu_arch=gpu_arch)
        except CompileError as exc:
            problems.extend(_located(file, d) for d in exc.diagnostics)
            continue
        print_diagnostics(_located(file, d) for d in rendered.diagnostics)
        workflows.extend(rendered.workflows)
    if problems:
        raise CompileError(problems)
    manifest = mirror_manifest(workflows)
    if unique:
        sys.stdout.write("".join(f"{image}\n" for image in unique_images(manifest)))
        return
    sys.stdout.write(format_json(manifest) if output is ImagesFormat.json else format_text(manifest))
