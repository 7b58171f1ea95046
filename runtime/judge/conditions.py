"""Conditions, NVCRE style: the exclusive lifecycle set and the additive verdict conditions.

``InProgress``, ``Succeeded`` and ``Failed`` are exclusive: setting one True sets the other two
False with reason ``NotApplicable``. ``HardwareFailed`` and ``ValidationFailed`` stand alone.
A condition's ``lastTransitionTime`` moves only when its status flips. Everything here is pure:
functions take a status dict and return a new one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = [
    "EXCLUSIVE",
    "FAILED",
    "HARDWARE_FAILED",
    "IN_PROGRESS",
    "NOT_APPLICABLE",
    "SUCCEEDED",
    "VALIDATION_FAILED",
    "condition",
    "is_terminal",
    "is_true",
    "lifecycle",
    "phase_of",
    "set_condition",
    "set_lifecycle",
]

IN_PROGRESS = "InProgress"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
HARDWARE_FAILED = "HardwareFailed"
VALIDATION_FAILED = "ValidationFailed"
NOT_APPLICABLE = "NotApplicable"
EXCLUSIVE = (IN_PROGRESS, SUCCEEDED, FAILED)
_MESSAGE_LIMIT = 32768


def _conditions(status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return list((status or {}).get("conditions") or [])


def condition(status: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The condition of ``type_``, or None."""
    for item in _conditions(status):
        if item.get("type") == type_:
            return dict(item)
    return None


def is_true(status: Mapping[str, Any] | None, type_: str) -> bool:
    found = condition(status, type_)
    return bool(found and found.get("status") == "True")


def lifecycle(status: Mapping[str, Any] | None) -> str | None:
    """The exclusive type that is True (Failed wins over Succeeded over InProgress), or None."""
    for type_ in (FAILED, SUCCEEDED, IN_PROGRESS):
        if is_true(status, type_):
            return type_
    return None


def is_terminal(status: Mapping[str, Any] | None) -> bool:
    return lifecycle(status) in (SUCCEEDED, FAILED)


def phase_of(status: Mapping[str, Any] | None) -> str:
    """The project's ``status.phase``, derived from the conditions (they are the truth)."""
    return lifecycle(status) or "Pending"


def set_condition(
    status: Mapping[str, Any],
    type_: str,
    state: str,
    reason: str,
    message: str,
    now: str,
    generation: int | None = None,
) -> dict[str, Any]:
    """A copy of ``status`` with one condition set."""
    new = copy.deepcopy(dict(status))
    items = _conditions(new)
    entry: dict[str, Any] = {
        "type": type_,
        "status": state,
        "reason": reason,
        "message": message[:_MESSAGE_LIMIT],
        "lastTransitionTime": now,
    }
    if generation is not None:
        entry["observedGeneration"] = int(generation)
    for index, item in enumerate(items):
        if item.get("type") == type_:
            if item.get("status") == state and item.get("lastTransitionTime"):
                entry["lastTransitionTime"] = item["lastTransitionTime"]
            items[index] = entry
            break
    else:
        items.append(entry)
    new["conditions"] = items
    return new


def set_lifecycle(
    status: Mapping[str, Any],
    type_: str,
    reason: str,
    message: str,
    now: str,
    generation: int | None = None,
    *,
    inactive_reason: str = NOT_APPLICABLE,
) -> dict[str, Any]:
    """Set one exclusive type True and the others False with ``inactive_reason`` (NotApplicable,
    or a WorkloadRun's Superseded); also refresh ``phase``."""
    if type_ not in EXCLUSIVE:
        raise ValueError(f"{type_} is not a lifecycle condition")
    new = set_condition(status, type_, "True", reason, message, now, generation)
    for other in EXCLUSIVE:
        if other != type_:
            new = set_condition(new, other, "False", inactive_reason, "", now, generation)
    new["phase"] = phase_of(new)
    return new


def jobs_failed_validation(status: Mapping[str, Any], now: str) -> dict[str, Any]:
    """A Workflow's status with ``ValidationFailed`` true: one of its Jobs missed a threshold."""
    return set_condition(
        status, VALIDATION_FAILED, "True", "JobValidationFailed", "One or more Jobs failed performance threshold validation", now
    )
