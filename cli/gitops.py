"""Render directories on disk: write them safely, read them back (also at a Git revision), check them.

``write_directory`` stages every file in a temporary directory beside the target, then moves the
files in (a new directory is renamed into place whole); files whose bytes did not change are
left alone, and files an earlier render wrote (the generated kustomization's ``resources``) that
the new plan lacks are removed. Nothing else in the directory is touched, and a file the earlier
render did not write is never overwritten.

``read_render`` and ``read_render_at`` load the objects of a render file or directory, from the
working tree or, through ``git show`` with an argument list, from a revision.

``check-renders`` reads a small config naming each source and where its render is committed,
renders in memory and reports every stale output (exit 1), or rewrites them with ``--fix``.
Run it as ``python -m nvcre.cli.gitops check-renders`` (the pre-commit hook does).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import guarded

app = typer.Typer(help="GitOps helpers: check that committed renders match their sources.", no_args_is_help=True)

DEFAULT_CONFIG = "nvcre-renders.yaml"


@app.callback()
def main() -> None:
    """GitOps helpers for nvcre renders."""


@dataclass
class WriteResult:
    directory: Path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.directory}: {len(self.written) + len(self.unchanged)} file(s), {len(self.written)} written, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} stale removed"
        )


def previous_resources(directory: Path) -> tuple[str, ...]:
    """Files an earlier render wrote into ``directory``; CompileError when its kustomization is not ours."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.gitops import (
        KUSTOMIZATION,
        is_generated_kustomization,
        owned_resources,
    )

    if not directory.exists():
        return ()
    if not directory.is_dir():
        raise CompileError([error("NotADirectory", "--output-dir", f"{directory} exists and is not a directory")])
    existing = directory / KUSTOMIZATION
    if not existing.exists():
        return ()
    text = existing.read_text(encoding="utf-8")
    if not is_generated_kustomization(text):
        raise CompileError(
            [error("ForeignKustomization", "--output-dir", f"{existing} was not written by nvcrectl; refusing to replace it")]
        )
    return owned_resources(text)


def _check_conflicts(directory: Path, planned: Mapping[str, str], previous: tuple[str, ...]) -> None:
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.gitops import KUSTOMIZATION

    ours = set(previous) | {KUSTOMIZATION}
    clashes = [
        error(
            "ForeignFile", "--output-dir", f"{directory / name} exists and was not written by an earlier render; refusing to overwrite it"
        )
        for name in planned
        if name not in ours and (directory / name).exists()
    ]
    if clashes:
        raise CompileError(clashes)


def write_directory(files: Mapping[str, str], directory: Path) -> WriteResult:
    """Make ``directory`` hold exactly the planned files among those renders own (see the module doc)."""
    from nvcre.compiler.gitops import DirectoryPlan, stale_files

    previous = previous_resources(directory)
    _check_conflicts(directory, files, previous)
    directory.parent.mkdir(parents=True, exist_ok=True)
    result = WriteResult(directory=directory)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        for name, text in files.items():
            with open(staging / name, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        if not directory.exists():
            os.chmod(staging, 0o777 & ~_umask())
            os.rename(staging, directory)
            result.written = list(files)
            return result
        for name, text in files.items():  # the kustomization is last in the plan, so it moves in last
            target = directory / name
            if target.is_file() and target.read_bytes() == text.encode("utf-8"):
                result.unchanged.append(name)
                continue
            os.replace(staging / name, target)
            result.written.append(name)
        for name in stale_files(previous, DirectoryPlan(files=dict(files), resources=())):
            (directory / name).unlink(missing_ok=True)
            result.removed.append(name)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# --- reading renders back (for diff) ------------------------------------------------------------

_RENDER_SUFFIXES = (".yaml", ".yml", ".json")


def objects_from_text(text: str, source: str) -> list[dict[str, Any]]:
    """Objects in a YAML stream or a JSON array (as ``render -o json`` prints)."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import FILE_LIMITS, load_documents

    docs = load_documents(text, source, limits=FILE_LIMITS)
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    bad = [
        error("DocumentNotMapping", f"{source}[{i}]", "expected a Kubernetes object (a mapping)")
        for i, d in enumerate(docs)
        if not isinstance(d, dict)
    ]
    if bad:
        raise CompileError(bad)
    return docs


def _resource_names(listing: list[str], read: Callable[[str], str], where: str) -> list[str]:
    """The files a render directory holds: its kustomization's resources, else every YAML/JSON file."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.gitops import KUSTOMIZATION
    from nvcre.compiler.yamlio import load_documents

    if KUSTOMIZATION not in listing:
        return sorted(name for name in listing if name.endswith(_RENDER_SUFFIXES))
    docs = load_documents(read(KUSTOMIZATION), f"{where}/{KUSTOMIZATION}")
    resources = docs[0].get("resources") if len(docs) == 1 and isinstance(docs[0], dict) else None
    if not isinstance(resources, list):
        raise CompileError([error("InvalidKustomization", f"{where}/{KUSTOMIZATION}: resources", "expected a list of files")])
    problems = [
        error(
            "UnsupportedResource",
            f"{where}/{KUSTOMIZATION}: resources[{i}]",
            f"{item!r} is not a file in this directory; diff reads plain files only",
        )
        for i, item in enumerate(resources)
        if not isinstance(item, str) or item not in listing
    ]
    if problems:
        raise CompileError(problems)
    return list(resources)


def read_render(path: Path) -> list[dict[str, Any]]:
    """The objects of a render on disk: a file (YAML stream or JSON array) or a render directory."""
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import read_text

    if path.is_dir():
        listing = sorted(p.name for p in path.iterdir() if p.is_file())
        objects: list[dict[str, Any]] = []
        for name in _resource_names(listing, lambda n: read_text(path / n), str(path)):
            objects.extend(objects_from_text(read_text(path / name), str(path / name)))
        return objects
    if not path.exists():
        raise CompileError([error("FileNotFound", str(path), "no such file or directory")])
    return objects_from_text(read_text(path), str(path))


_REVISION = re.compile(r"^[A-Za-z0-9_./~^@{}+-]+$")


def _git(args: list[str], cwd: Path, what: str) -> str:
    from nvcre.compiler.diagnostics import CompileError, error

    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    except FileNotFoundError:
        raise CompileError([error("GitUnavailable", "--git", "git is not installed or not on PATH")]) from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CompileError([error("GitRevision", "--git", f"{what}: {reason[-1] if reason else 'git failed'}")])
    return done.stdout.decode("utf-8", "replace")


def read_render_at(revision: str, path: Path) -> list[dict[str, Any]]:
    """The objects ``path`` (a file or a render directory) held at ``revision``, read with ``git show``.

    A path the revision does not have yields no objects (the diff then shows everything as added).
    """
    from nvcre.compiler.diagnostics import CompileError, error

    if not _REVISION.match(revision) or revision.startswith("-"):
        raise CompileError([error("InvalidRevision", "--git", f"{revision!r} is not a revision name")])
    if path.is_dir():
        cwd, spec = path, f"{revision}:./"
    else:
        cwd, spec = path.parent if str(path.parent) else Path("."), f"{revision}:./{path.name}"
    if not cwd.is_dir():
        raise CompileError([error("FileNotFound", str(path), "its folder does not exist")])
    _git(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd, f"{revision} is not a commit here")
    try:
        kind = _git(["cat-file", "-t", spec], cwd, f"{path} at {revision}").strip()
    except CompileError:
        return []  # the path did not exist at the revision: everything in it is new
    if kind == "blob":
        return objects_from_text(_git(["show", spec], cwd, f"{path} at {revision}"), f"{revision}:{path}")
    if kind != "tree":
        raise CompileError([error("GitRevision", "--git", f"{path} at {revision} is a {kind}, not a file or folder")])
    listing = [n for n in _git(["ls-tree", "--full-tree", "--name-only", "-z", spec], cwd, f"{path} at {revision}").split("\0") if n]

    base = spec if spec.endswith("/") else f"{spec}/"

    def show(name: str) -> str:
        return _git(["show", f"{base}{name}"], cwd, f"{path / name} at {revision}")

    objects: list[dict[str, Any]] = []
    for name in _resource_names(listing, show, f"{revision}:{path}"):
        objects.extend(objects_from_text(show(name), f"{revision}:{path / name}"))
    return objects


# --- check-renders -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderSpec:
    """One entry of the config: a source document and where its render is committed."""

    index: int
    source: Path
    output_dir: Path | None
    output_file: Path | None
    platform: str | None
    gpu_arch: str | None
    facts: Path | None

    @property
    def target(self) -> Path:
        return self.output_dir or self.output_file  # type: ignore[return-value]


_ENTRY_KEYS = {"source", "outputDir", "output", "platform", "gpuArch", "facts"}


def load_config(path: Path) -> list[RenderSpec]:
    """Parse the check-renders config; every problem is a CompileError with its field path."""
    from nvcre.compiler.diagnostics import CompileError, Diagnostic, error
    from nvcre.compiler.yamlio import load_file

    docs = load_file(path)
    root = path.parent
    if len(docs) != 1 or not isinstance(docs[0].get("renders"), list):
        raise CompileError([error("InvalidConfig", f"{path}: renders", "expected one document with a list under 'renders'")])
    problems: list[Diagnostic] = []
    specs: list[RenderSpec] = []
    for index, entry in enumerate(docs[0]["renders"]):
        where = f"{path}: renders[{index}]"
        if not isinstance(entry, dict):
            problems.append(error("InvalidConfig", where, "expected a mapping"))
            continue
        for key in sorted(set(entry) - _ENTRY_KEYS):
            problems.append(error("UnknownField", f"{where}.{key}", f"unknown field; expected one of {', '.join(sorted(_ENTRY_KEYS))}"))
        for key in sorted(_ENTRY_KEYS & set(entry)):
            if not isinstance(entry[key], str) or not entry[key]:
                problems.append(error("InvalidConfig", f"{where}.{key}", "expected a non-empty string"))
        if not isinstance(entry.get("source"), str):
            problems.append(error("Required", f"{where}.source", "the source Certification or WorkloadRun file is required"))
        if ("outputDir" in entry) == ("output" in entry):
            problems.append(error("InvalidConfig", where, "set exactly one of outputDir (a render directory) or output (one YAML stream)"))
        if problems:
            continue

        paths = {key: root / entry[key] for key in ("outputDir", "output", "facts") if key in entry}
        specs.append(
            RenderSpec(
                index,
                root / entry["source"],
                paths.get("outputDir"),
                paths.get("output"),
                entry.get("platform"),
                entry.get("gpuArch"),
                paths.get("facts"),
            )
        )
    if problems:
        raise CompileError(problems)
    return specs


def render_documents(source: Path, *, platform: str | None, gpu_arch: str | None, facts: Path | None) -> list[dict[str, Any]]:
    """Render a Certification or WorkloadRun file (chosen by its kind) to its objects."""
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.render import render_certification
    from nvcre.compiler.workloadrun import render_workloadrun

    from .common import load_single

    document = load_single(source)
    renderer: Callable[..., Any] = render_workloadrun if document.get("kind") == "WorkloadRun" else render_certification
    rendered = renderer(document, facts=load_facts(facts) if facts else None, platform=platform, gpu_arch=gpu_arch)
    return list(rendered.workflows)


def expected_files(spec: RenderSpec) -> dict[Path, str]:
    """Every file (absolute path -> text) the committed render of ``spec`` must hold."""
    from nvcre.compiler.emit import dump_yaml_stream
    from nvcre.compiler.gitops import plan_directory

    documents = render_documents(spec.source, platform=spec.platform, gpu_arch=spec.gpu_arch, facts=spec.facts)
    if spec.output_file is not None:
        return {spec.output_file: dump_yaml_stream(documents)}
    assert spec.output_dir is not None
    return {spec.output_dir / name: text for name, text in plan_directory(documents).files.items()}


def stale_outputs(spec: RenderSpec) -> list[str]:
    """Human lines, one per file that differs from what the source renders to (empty when current)."""
    expected = expected_files(spec)
    lines = []
    for path, text in expected.items():
        if not path.is_file():
            lines.append(f"{path}: missing")
        elif path.read_bytes() != text.encode("utf-8"):
            lines.append(f"{path}: differs from a fresh render of {spec.source}")
    if spec.output_dir is not None:
        for name in previous_resources(spec.output_dir):
            if spec.output_dir / name not in expected and (spec.output_dir / name).exists():
                lines.append(f"{spec.output_dir / name}: stale (the source no longer renders it)")
    return lines


def fix_output(spec: RenderSpec) -> None:
    expected = expected_files(spec)
    if spec.output_dir is not None:
        write_directory({path.name: text for path, text in expected.items()}, spec.output_dir)
        return
    for path, text in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")


@app.command("check-renders")
@guarded
def check_renders(
    config: Annotated[Path, typer.Option("--config", "-c", help="Config listing each source and its committed render.")] = Path(
        DEFAULT_CONFIG
    ),
    fix: Annotated[bool, typer.Option("--fix", help="Rewrite stale renders instead of only reporting them.")] = False,
    files: Annotated[list[str] | None, typer.Argument(help="Ignored (pre-commit passes changed files); every entry is checked.")] = None,
) -> None:
    """Exit 1 when a committed render differs from a fresh render of its source; 0 when all are current."""
    specs = load_config(config)
    stale = 0
    for spec in specs:
        lines = stale_outputs(spec)
        if not lines:
            continue
        stale += 1
        for line in lines:
            sys.stderr.write(f"{line}\n")
        if fix:
            fix_output(spec)
            sys.stderr.write(f"{spec.target}: re-rendered\n")
    if stale and not fix:
        sys.stderr.write(f"{stale} of {len(specs)} render(s) are stale; run with --fix (or re-render) and commit the result\n")
        raise typer.Exit(1)
    sys.stderr.write(f"{len(specs)} render(s) checked, {stale} fixed\n" if fix else f"{len(specs)} render(s) are current\n")


if __name__ == "__main__":
    app()
