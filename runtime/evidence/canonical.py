"""Byte-stable JSON and digests, and reads that never take more than they were promised.

Every JSON file of a bundle is written by :func:`json_bytes`: keys sorted, two-space indentation,
UTF-8 without escaping, a final newline and no NaN or infinity, so the same value always gives
the same bytes. :func:`read_limited` refuses a file larger than its limit instead of reading it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .errors import EvidenceError

__all__ = ["json_bytes", "read_limited", "sha256_hex"]


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
