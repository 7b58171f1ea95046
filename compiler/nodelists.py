"""The node-list payloads of a Workflow's result ConfigMaps: one encoder, one bounded decoder.

``succeeded-nodes-<uid8>`` holds ``binaryData["succeeded-nodes.csv.gz"]``: the sorted, unique
node names joined by commas, gzipped. ``failed-nodes-<uid8>`` holds
``binaryData["failed-nodes.json.gz"]``: a compact JSON array of ``{name, reason, message}``
(HTML characters escaped as Go's encoder escapes them), gzipped. Gzip is written with mtime 0,
so the same list always gives the same bytes.

The compiler encodes (``expand_node_results``); the controller, the report and the CLI decode.
Every decode reads at most :data:`MAX_DECODED` bytes of decompressed data: a payload no
controller writes is refused rather than inflated. The ``read_*`` functions are the tolerant
form (an absent or unreadable payload gives an empty list); ``decode_*`` raise ``ValueError``.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .vocabulary import CONFIGMAP_FAILED_NODES_KEY, CONFIGMAP_SUCCEEDED_NODES_KEY

__all__ = [
    "MAX_DECODED",
    "decode_failed",
    "decode_succeeded",
    "encode_failed",
    "encode_succeeded",
    "read_failed",
    "read_succeeded",
]

#: the largest decompressed payload read (a 1 MiB object compresses far less than this)
MAX_DECODED = 64 * 1024 * 1024

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _gzip(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def _go_json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in _GO_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def encode_succeeded(names: Sequence[str]) -> str:
    """The base64 payload of a succeeded-nodes ConfigMap for ``names`` (sorted, unique)."""
    return _gzip(",".join(sorted(set(names))))


def encode_failed(entries: Sequence[Mapping[str, str]]) -> str:
    """The base64 payload of a failed-nodes ConfigMap for already ordered ``entries``."""
    return _gzip(_go_json([dict(e) for e in entries]))


def _payload(config_map: Mapping[str, Any], key: str) -> str:
    """The decompressed text under ``binaryData[key]``; ValueError when absent, bad or too large."""
    data = (config_map.get("binaryData") or {}).get(key) if isinstance(config_map, Mapping) else None
    if not isinstance(data, str):
        raise ValueError(f"binaryData[{key!r}] is missing")
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(base64.b64decode(data, validate=True))) as fh:
            raw = fh.read(MAX_DECODED + 1)
    except (binascii.Error, OSError, EOFError) as exc:
        raise ValueError(f"binaryData[{key!r}] is not gzipped base64: {exc}") from exc
    if len(raw) > MAX_DECODED:
        raise ValueError(f"binaryData[{key!r}] inflates past {MAX_DECODED} bytes")
    return raw.decode("utf-8")


def decode_succeeded(config_map: Mapping[str, Any]) -> list[str]:
    """The node names a succeeded-nodes ConfigMap holds, in stored order."""
    return [n for n in _payload(config_map, CONFIGMAP_SUCCEEDED_NODES_KEY).split(",") if n]


def decode_failed(config_map: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries a failed-nodes ConfigMap holds (those with a name), in stored order."""
    decoded = json.loads(_payload(config_map, CONFIGMAP_FAILED_NODES_KEY))
    if not isinstance(decoded, list):
        raise ValueError("the failed-nodes payload is not a JSON array")
    return [dict(e) for e in decoded if isinstance(e, Mapping) and e.get("name")]


def read_succeeded(config_map: Mapping[str, Any] | None) -> list[str]:
    """:func:`decode_succeeded`, or [] when the ConfigMap is absent or unreadable."""
    try:
        return decode_succeeded(config_map) if config_map else []
    except ValueError:
        return []


def read_failed(config_map: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """:func:`decode_failed`, or [] when the ConfigMap is absent or unreadable."""
    try:
        return decode_failed(config_map) if config_map else []
    except ValueError:
        return []
