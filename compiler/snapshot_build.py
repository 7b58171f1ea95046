"""Builds the render's shipped snapshots from the package's own files, and checks they are current.

``yaml_snapshot.jsonl`` (the catalog's, overlays' and CRDs' YAML, parsed) and
``template_snapshot.json`` (the code Jinja generates for every template, and what each YAML
template reads of its values) are data built from data. ``python -m
nvcre.compiler.snapshot_build --write`` rebuilds both, ``--check`` exits 1 when either is stale.
The readers (:mod:`.yaml_snapshot`, :mod:`.template_snapshot`) only look entries up; building
needs the loader and the template environments, which use those readers, so the builders live
here and the import graph stays free of circles.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from . import template_reads, template_snapshot, yaml_snapshot
from .diagnostics import CompileError
from .templating import TemplateSet
from .yamlio import INTERNAL_LIMITS, load_documents

__all__ = ["build_templates", "build_yaml"]


def _json_exact(value: Any) -> bool:
    """True when JSON gives ``value`` back with the same types (bool, int and float kept apart)."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_json_exact(item) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _json_exact(item) for key, item in value.items())
    return False


def build_yaml(files: list[Path] | None = None, default_version: list[Path] | None = None) -> str:
    """The snapshot text for ``files`` read as YAML 1.1 (default: ``source_files()``) and for
    ``default_version`` read with the loader's default version (default: ``default_version_files()``),
    parsed by the project's loader."""
    entries: dict[str, str] = {}
    readings: list[tuple[Path, tuple[int, int] | None]] = [
        *((path, (1, 1)) for path in (files if files is not None else yaml_snapshot.source_files())),
        *((path, None) for path in (default_version if default_version is not None else yaml_snapshot.default_version_files())),
    ]
    for path, version in readings:
        text = path.read_text(encoding="utf-8")
        try:
            documents = load_documents(text, str(path), limits=INTERNAL_LIMITS, version=version, snapshot=False)
        except CompileError:
            continue  # a broken file is reported by whoever reads it, from its own text
        if _json_exact(documents):
            entries[yaml_snapshot.text_key(text, version)] = json.dumps(documents, separators=(",", ":"))
    return "\n".join([yaml_snapshot.HEADER, *(f"{key}\t{entries[key]}" for key in sorted(entries))]) + "\n"


def build_templates() -> str:
    """The snapshot text: the code Jinja generates for every template in its environment."""
    templates = TemplateSet()
    envs: dict[str, Any] = {"yaml": templates.yaml_env, "script": templates.script_env}
    entries: dict[str, str] = {}
    reads: dict[str, Any] = {}
    for path, name in template_snapshot.template_files():
        source = path.read_text(encoding="utf-8")
        kind = template_snapshot.kind_of(name)
        try:
            code = envs[kind].compile(source, name, str(path), raw=True)
        except Exception:  # a template Jinja refuses is reported when it is used, from its own text
            continue
        key = template_snapshot.entry_key(kind, name, source)
        entries[key] = code
        if kind == "yaml":  # only YAML renders are memoised by what they read
            reads[key] = template_reads.to_data(template_reads.own_reads(envs[kind], source, name))
    document = {
        "format": template_snapshot.FORMAT,
        "jinja": template_snapshot.jinja_version(),
        "templates": dict(sorted(entries.items())),
        "reads": dict(sorted(reads.items())),
    }
    return json.dumps(document, indent=0, ensure_ascii=True) + "\n"


def _main(argv: list[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print("usage: python -m nvcre.compiler.snapshot_build --write | --check", file=sys.stderr)
        return 2
    stale = 0
    for target, text in ((yaml_snapshot.SNAPSHOT_FILE, build_yaml()), (template_snapshot.SNAPSHOT_FILE, build_templates())):
        if argv == ["--write"]:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.name} ({len(text)} characters)")
            continue
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{target.name} is stale: run python -m nvcre.compiler.snapshot_build --write", file=sys.stderr)
            stale += 1
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
