"""The project's own YAML files, shipped already parsed: a render reads JSON instead of YAML.

Every render loads the catalog entries, the GPU defaults, the platform overlays and the CRD
schemas: about a hundred YAML files that only change with the package. Their parsed documents
are kept in ``yaml_snapshot.jsonl`` beside this module, one line per distinct file text and YAML
version (1.1, and the loader's default for the detection tables): the SHA-256 of the version and
the text, a tab, and the documents as JSON. ``yamlio`` asks
``lookup`` before parsing; a text that is not in the snapshot (a user's file, an edited
overlay, a rendered template) is parsed as usual, so a stale snapshot costs time, never
correctness. Only texts whose documents JSON keeps exactly (mappings with string keys, lists,
strings, booleans, integers, finite numbers, null) are recorded.

The snapshot is data built from data, like the catalog itself: ``python -m
nvcre.compiler.snapshot_build --write`` rebuilds it (see :mod:`.snapshot_build`), and a test
fails when it is stale.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["HEADER", "SNAPSHOT_FILE", "default_version_files", "lookup", "source_files", "text_key"]

#: The committed snapshot, beside this module (package data).
SNAPSHOT_FILE = Path(__file__).resolve().parent / "yaml_snapshot.jsonl"
HEADER = "nvcre-yaml-snapshot 1"


def text_key(text: str, version: tuple[int, int] | None) -> str:
    """The snapshot key of a text read with a YAML version (None: the loader's default)."""
    label = "default" if version is None else f"{version[0]}.{version[1]}"
    return hashlib.sha256(f"{label}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


@lru_cache(maxsize=1)
def _entries(path: Path) -> dict[str, str]:
    """Key -> JSON text of the documents; empty when the file is missing or not a snapshot."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return {}
    if not lines or lines[0] != HEADER:
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        key, tab, documents = line.partition("\t")
        if tab:
            out[key] = documents
    return out


def lookup(text: str, version: tuple[int, int] | None, path: Path | None = None) -> list[Any] | None:
    """Fresh copies of the documents ``text`` parses to, when the snapshot holds it; else None."""
    found = _entries(path or SNAPSHOT_FILE).get(text_key(text, version))
    if found is None:
        return None
    try:
        documents = json.loads(found)
    except ValueError:
        return None
    return documents if isinstance(documents, list) else None


def source_files() -> list[Path]:
    """The package's own YAML files a render reads: catalog, platform overlays, CRDs."""
    import nvcre.catalog
    import nvcre.platforms

    roots = [Path(nvcre.catalog.__file__).parent, Path(nvcre.platforms.__file__).parent, Path(__file__).resolve().parent / "api" / "crds"]
    return sorted({path for root in roots for path in root.rglob("*.yaml")})


def default_version_files() -> list[Path]:
    """The files a render reads with the loader's default YAML version rather than 1.1: the
    detection tables (``nvcre.compiler.detect.tables``). They are shipped parsed both ways."""
    import nvcre.platforms

    return sorted((Path(nvcre.platforms.__file__).parent / "detection").glob("*.yaml"))
