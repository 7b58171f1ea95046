"""The in-toto Statement (v1) of a bundle: its subjects, and reading one back with every check.

A Statement is ``{"_type", "subject", "predicateType", "predicate"}``; each subject has a
``name`` and a ``digest`` holding at least ``sha256`` (64 lowercase hex digits). Reading one
back refuses, with the field path, anything that is not such a document (JSON bounded in items
and nesting, :func:`~.canonical.parse_json`), a predicate of another type, and a predicate of
this project's type but a newer major version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .canonical import parse_json
from .errors import EvidenceError
from .predicate import PREDICATE_PREFIX, PREDICATE_TYPE, PREDICATE_VERSION

__all__ = ["STATEMENT_TYPE", "build_statement", "parse_statement", "subject"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
_HEX = re.compile(r"[0-9a-f]{64}")
_NEWER = re.compile(re.escape(PREDICATE_PREFIX) + r"(\d+)")


def subject(name: str, sha256: str) -> dict[str, Any]:
    return {"name": name, "digest": {"sha256": sha256}}


def build_statement(subjects: Sequence[Mapping[str, Any]], predicate: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": sorted((dict(s) for s in subjects), key=lambda s: s["name"]),
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(predicate),
    }


def _fail(where: str, field: str, message: str) -> EvidenceError:
    return EvidenceError(f"{where}: {field}: {message}")


def parse_statement(data: bytes, where: str) -> dict[str, Any]:
    """The Statement in ``data`` after every structural check; EvidenceError naming the field otherwise."""
    value = parse_json(data, where)
    if not isinstance(value, dict):
        raise EvidenceError(f"{where}: expected a JSON object (an in-toto Statement)")
    if value.get("_type") != STATEMENT_TYPE:
        raise _fail(where, "_type", f"expected {STATEMENT_TYPE!r}, got {value.get('_type')!r}")
    kind = value.get("predicateType")
    if kind != PREDICATE_TYPE:
        newer = _NEWER.fullmatch(str(kind))
        if newer and int(newer.group(1)) > PREDICATE_VERSION:
            raise _fail(
                where,
                "predicateType",
                f"{kind} was written by a newer nvcre; this nvcrectl reads {PREDICATE_TYPE} (upgrade nvcrectl)",
            )
        raise _fail(where, "predicateType", f"expected {PREDICATE_TYPE!r}, got {kind!r} (not an nvcre evidence bundle)")
    subjects = value.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise _fail(where, "subject", "expected a non-empty list")
    for index, item in enumerate(subjects):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise _fail(where, f"subject[{index}].name", "expected a non-empty string")
        digest = item.get("digest")
        if not isinstance(digest, dict) or not isinstance(digest.get("sha256"), str) or not _HEX.fullmatch(digest["sha256"]):
            raise _fail(where, f"subject[{index}].digest.sha256", "expected 64 lowercase hexadecimal digits")
    if not isinstance(value.get("predicate"), dict):
        raise _fail(where, "predicate", "expected an object")
    return value
