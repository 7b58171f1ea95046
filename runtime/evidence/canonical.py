"""Byte-stable JSON and digests, and reads that never take more than they were promised.

Every JSON file of a bundle is written by :func:`json_bytes`: keys sorted, two-space indentation,
UTF-8 without escaping, a final newline and no NaN or infinity, so the same value always gives
the same bytes. :func:`read_limited` refuses a file larger than its limit instead of reading it,
:func:`digest_limited` hashes one in pieces, and :func:`parse_json` reads JSON that a hostile
bundle may have shaped: bounded in items before parsing (so in memory), never a
``RecursionError``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .errors import EvidenceError

__all__ = ["MAX_JSON_ITEMS", "digest_limited", "json_bytes", "parse_json", "read_limited", "sha256_hex"]
#: how many structural marks (``{``, ``[``, ``,``) one JSON file may hold: a bound on its values,
#: and so on the memory parsing it takes (a large run's predicate holds a few hundred thousand)
MAX_JSON_ITEMS = 2_000_000
_CHUNK = 1024 * 1024


def json_bytes(value: Any) -> bytes:
    """Indented JSON with sorted keys and a trailing newline, as UTF-8."""
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_limited(path: Path, limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; EvidenceError otherwise."""
    try:
        if not path.is_file():
            raise EvidenceError(f"{path}: not a regular file" if path.exists() else f"{path}: no such {what}")
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise EvidenceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise EvidenceError(f"{path}: larger than the {limit:,}-byte limit for a {what}")
    return data


def digest_limited(path: Path, limit: int, what: str = "file") -> str:
    """The SHA-256 of a regular file of at most ``limit`` bytes, read in pieces; EvidenceError otherwise."""
    digest = hashlib.sha256()
    size = 0
    try:
        if not path.is_file():
            raise EvidenceError(f"{path}: not a regular file" if path.exists() else f"{path}: no such {what}")
        with open(path, "rb") as fh:
            while piece := fh.read(_CHUNK):
                size += len(piece)
                if size > limit:
                    raise EvidenceError(f"{path}: larger than the {limit:,}-byte limit for a {what}")
                digest.update(piece)
    except OSError as exc:
        raise EvidenceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return digest.hexdigest()


def parse_json(data: bytes, where: str, *, max_items: int = MAX_JSON_ITEMS) -> Any:
    """The JSON value in ``data``; EvidenceError (exit 2) for text that is not JSON, that holds
    more than ``max_items`` items (counted on the bytes, before anything is built) or that nests
    deeper than the parser's stack (it stops with a RecursionError, caught here; a predicate
    needs about ten levels, and nothing reads a bundle's JSON recursively afterwards)."""
    items = data.count(b"{") + data.count(b"[") + data.count(b",")
    if items > max_items:
        raise EvidenceError(f"{where}: holds more than {max_items:,} JSON items; not a file this nvcrectl wrote")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise EvidenceError(f"{where}: nested too deeply to read; not a file this nvcrectl wrote") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise EvidenceError(f"{where}: not a JSON document, truncated or damaged ({exc})") from None
