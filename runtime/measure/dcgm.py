"""Reads the result of a DCGM diagnostic (``dcgmi diag -r <level>``), as JSON or as the text table.

The catalog runs ``dcgmi diag --json``; an operator may run it by hand and get the box table.
Both forms give one ``DcgmTest`` per test with its status (``Pass``, ``Fail``, ``Warn`` or
``Skip``), the GPUs a failure names and the messages DCGM printed, and an overall status: any
``Fail`` fails the run, else any ``Warn`` warns, else ``Pass`` when something passed, ``Skip``
when everything was skipped, ``Unknown`` when no test result was found. Lines that are neither
are ignored, and kubelet timestamp prefixes are cut first. The table patterns run on the RE2
engine (a row pattern with lazy groups is cubic on one long line under a backtracking engine,
and the pod's output is the input) and see at most ``MAX_MATCHED_LINE`` characters of a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import re2

from .profile import matched_part, split_kubelet_timestamp

__all__ = ["DcgmResult", "DcgmTest", "parse_dcgm"]

_STATUSES = ("Fail", "Warn", "Pass", "Skip")
_RANK = {"Fail": 0, "Warn": 1, "Pass": 2, "Skip": 3}
_ROW = re2.compile(r"^\|\s*([^|]*?)\s*\|\s*(.*?)\s*\|\s*$")
_CATEGORY = re2.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z ]*?)\s+-+\+")
_GPU_IDS = re2.compile(r"GPU(?:s)?\s*:?\s*([0-9][0-9, ]*)")


@dataclass(frozen=True)
class DcgmTest:
    """One diagnostic test."""

    name: str
    status: str
    category: str = ""
    failed_gpus: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.category:
            out["category"] = self.category
        if self.failed_gpus:
            out["failedGPUs"] = list(self.failed_gpus)
        if self.messages:
            out["messages"] = list(self.messages)
        return out


@dataclass(frozen=True)
class DcgmResult:
    """Every test found and the overall status."""

    tests: tuple[DcgmTest, ...]
    overall: str

    @property
    def passed(self) -> bool:
        return self.overall in ("Pass", "Warn", "Skip")

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall, "tests": [test.to_dict() for test in self.tests]}


def _status(text: Any) -> str | None:
    word = str(text).strip().split(" ", 1)[0].rstrip(",:-").capitalize()
    if word == "Warning":
        word = "Warn"
    if word == "Skipped":
        word = "Skip"
    if word in ("Passed",):
        word = "Pass"
    if word in ("Failed", "Failure"):
        word = "Fail"
    return word if word in _RANK else None


def _worst(statuses: list[str]) -> str | None:
    return min(statuses, key=_RANK.__getitem__) if statuses else None


def _overall(tests: tuple[DcgmTest, ...]) -> str:
    statuses = {test.status for test in tests}
    for status in ("Fail", "Warn", "Pass", "Skip"):
        if status in statuses:
            return status
    return "Unknown"


def _walk(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        yield value
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child)


def _messages(result: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key in ("warnings", "warning", "info", "errors"):
        value = result.get(key)
        items = value if isinstance(value, list) else [value] if value is not None else []
        for item in items:
            text = item.get("message", item.get("warning")) if isinstance(item, Mapping) else item
            if isinstance(text, str) and text.strip():
                found.append(text.strip())
    return found


def _from_json(document: Any) -> tuple[DcgmTest, ...]:
    tests: list[DcgmTest] = []
    for node in _walk(document):
        categories = node.get("test_categories")
        if not isinstance(categories, list):
            continue
        for category in categories:
            if not isinstance(category, Mapping) or not isinstance(category.get("tests"), list):
                continue
            for test in category["tests"]:
                if not isinstance(test, Mapping) or not isinstance(test.get("name"), str):
                    continue
                statuses: list[str] = []
                failed: list[str] = []
                messages: list[str] = []
                results = test.get("results")
                for result in results if isinstance(results, list) else []:
                    if not isinstance(result, Mapping):
                        continue
                    status = _status(result.get("status", ""))
                    if status is None:
                        continue
                    statuses.append(status)
                    gpu = result.get("gpu_id", result.get("entity_id"))
                    if status == "Fail" and gpu is not None:
                        failed.append(str(gpu))
                    messages.extend(_messages(result))
                summary = test.get("test_summary")
                if isinstance(summary, Mapping):
                    status = _status(summary.get("status", ""))
                    if status is not None:
                        statuses.append(status)
                worst = _worst(statuses)
                if worst is not None:
                    tests.append(
                        DcgmTest(
                            name=test["name"],
                            status=worst,
                            category=str(category.get("category", "")),
                            failed_gpus=tuple(sorted(set(failed))),
                            messages=tuple(messages),
                        )
                    )
    return tuple(tests)


def _json_documents(text: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            document, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        yield document
        position = text.find("{", end)


_NOT_TESTS = {"Diagnostic", "DCGM Version", "Driver Version Detected", "GPU Device IDs Detected", "GPU Device Serials"}


def _from_table(lines: list[str]) -> tuple[DcgmTest, ...]:
    tests: list[DcgmTest] = []
    category = ""
    for line in lines:
        heading = _CATEGORY.match(line)
        if heading is not None:
            category = heading.group(1).strip()
            continue
        row = _ROW.match(line)
        if row is None:
            continue
        name, value = row.group(1), row.group(2)
        if name in ("Warning", "Info", "") and tests:
            if value:
                last = tests[-1]
                tests[-1] = DcgmTest(last.name, last.status, last.category, last.failed_gpus, (*last.messages, value))
            continue
        status = _status(value)
        if status is None or name in _NOT_TESTS:
            continue
        failed: tuple[str, ...] = ()
        if status == "Fail":
            ids = _GPU_IDS.search(value)
            if ids is not None:
                failed = tuple(sorted({part.strip() for part in ids.group(1).split(",") if part.strip()}))
        tests.append(DcgmTest(name=name, status=status, category=category, failed_gpus=failed))
    return tuple(tests)


def parse_dcgm(text: str) -> DcgmResult:
    """The tests and overall status in a ``dcgmi diag`` log; never raises on odd input."""
    lines = [matched_part(split_kubelet_timestamp(raw)[1]) for raw in text.splitlines()]
    body = "\n".join(lines)
    tests: tuple[DcgmTest, ...] = ()
    for document in _json_documents(body):
        tests = _from_json(document)
        if tests:
            break
    if not tests:
        tests = _from_table(lines)
    return DcgmResult(tests=tests, overall=_overall(tests))
