"""Object names: the Workflow name of a category, with NVCRE's options suffix and FNV-1a truncation.

A Workflow is named ``<certification>-<domain>-<variant>`` plus a suffix built from the category's
own options, then shortened to 31 characters. Shortening keeps a prefix and appends the first five
hex digits of the 32-bit FNV-1a hash of the full name, so the same inputs always give the same
name, and the controller and the offline renderer agree.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["fnv1a_32", "truncate_name", "options_suffix", "workflow_name", "MAX_WORKFLOW_NAME_LEN"]

MAX_WORKFLOW_NAME_LEN = 31
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a_32(text: str) -> int:
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value ^= byte
        value = (value * _FNV_PRIME) & 0xFFFFFFFF
    return value


def truncate_name(name: str, limit: int = MAX_WORKFLOW_NAME_LEN) -> str:
    """Return ``name`` when it fits; else a prefix (no trailing dash) + ``-`` + 5 hex digits of its hash."""
    if len(name) <= limit:
        return name
    prefix = name[: limit - 6].rstrip("-")
    digest = format(fnv1a_32(name), "05x")[:5]
    return f"{prefix}-{digest}"


def options_suffix(options: Mapping[str, Any] | None) -> str:
    """The suffix a category's own options add to its Workflow name (empty when it sets none of them)."""
    if options is None:
        return ""
    parts: list[str] = []
    if options.get("nodesPerJob") is not None:
        parts.append(f"n{options['nodesPerJob']}")
    if options.get("enableMNNVL") is not None:
        parts.append("mnnvl" if options["enableMNNVL"] else "nomnnvl")
    if options.get("testScale"):
        parts.append(str(options["testScale"]))
    if options.get("enableCheckpoint"):
        parts.append("ckpt")
    if options.get("maxSteps") is not None:
        parts.append(f"s{options['maxSteps']}")
    if options.get("exitDurationMins") is not None:
        parts.append(f"e{options['exitDurationMins']}")
    if options.get("gpusPerNode") is not None:
        parts.append(f"g{options['gpusPerNode']}")
    access = options.get("rdmaDeviceAccess")
    if access == "hostPath":
        parts.append("hostrdma")
    elif access == "devicePlugin":
        parts.append("dprdma")
    return "-" + "-".join(parts) if parts else ""


def workflow_name(certification: str, domain: str, variant: str, options: Mapping[str, Any] | None) -> str:
    return truncate_name(f"{certification}-{domain}-{variant}{options_suffix(options)}")
