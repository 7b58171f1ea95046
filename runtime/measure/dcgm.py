"""Reads the result of a DCGM diagnostic (``dcgmi diag -r <level>``), as JSON or as the text table.

The catalog runs ``dcgmi diag --json``; an operator may run it by hand and get the box table.
Both forms give one ``DcgmTest`` per test with its status (``Pass``, ``Fail``, ``Warn`` or
``Skip``), the GPUs a failure names and the messages DCGM printed, and an overall status, the
worst row: any ``Fail`` fails the run (in a cut JSON piece too, even one that no longer parses),
else a report cut short (a table without its closing rule, a JSON document that never closed)
is ``Incomplete``, else any ``Warn`` warns, else
``Pass`` when something passed, ``Skip`` when everything was skipped, ``Unknown`` when no test
result was found. Every test row counts whatever its name (level 3 runs a test called
``Diagnostic``; only the ``Diagnostic | Result`` header and the Metadata rows are not tests),
and each entity row under a test (DCGM 3 ``| | Fail - GPU: 0 |``, DCGM 4 ``| | GPU0: Fail |``)
folds into it, as does an ``Error`` row under a test of the same section (the test fails with
it; an ``Error`` row with no test above it in its section is a failure of its own). Lines that
are neither are ignored, and kubelet timestamps and launcher tags are cut first; a table a
document quotes behind an indent or a comment or quote marker (``#``, ``//``, ``>``) reads as the
table, and so does one a tool's own JSON report carries as a string (the table decides, never
the tool's summary). The table patterns run on the RE2
engine (a row pattern with lazy groups is cubic on one long line under a backtracking engine,
and the pod's output is the input) and see at most ``MAX_MATCHED_LINE`` characters of a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from .profile import matched_part, split_line

__all__ = ["INCOMPLETE", "DcgmResult", "DcgmTest", "parse_dcgm"]

#: the overall status of a report that was cut short (a table without its last rule, a JSON
#: document that never closed): never a pass, whatever its rows say
INCOMPLETE = "Incomplete"
_JSON_STARTED = '"test_categories"'

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


def _worst(statuses: Sequence[str | None]) -> str | None:
    known = [status for status in statuses if status is not None]
    return min(known, key=_RANK.__getitem__) if known else None


def _overall(tests: tuple[DcgmTest, ...], complete: bool = True) -> str:
    """The worst row: any ``Fail`` fails; a run cut short is ``Incomplete``, never a pass."""
    statuses = {test.status for test in tests}
    if "Fail" in statuses:
        return "Fail"
    if not complete:
        return INCOMPLETE
    for status in ("Warn", "Pass", "Skip"):
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


def _json_test(test: Mapping[str, Any], category: str) -> DcgmTest | None:
    """One test object of the JSON report (``name``, ``results[]``, DCGM 4's ``test_summary``)."""
    if not isinstance(test.get("name"), str):
        return None
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
    if worst is None:
        return None
    return DcgmTest(
        name=test["name"],
        status=worst,
        category=category,
        failed_gpus=tuple(sorted(set(failed))),
        messages=tuple(messages),
    )


def _category_tests(category: Mapping[str, Any]) -> list[DcgmTest]:
    """The tests of one ``test_categories[]`` entry (``category``, ``tests[]``)."""
    tests = category.get("tests")
    if not isinstance(tests, list):
        return []
    name = str(category.get("category", ""))
    found = (_json_test(test, name) for test in tests if isinstance(test, Mapping))
    return [test for test in found if test is not None]


def _from_json(document: Any) -> tuple[DcgmTest, ...]:
    tests: list[DcgmTest] = []
    for node in _walk(document):
        categories = node.get("test_categories")
        if not isinstance(categories, list):
            continue
        for category in categories:
            if isinstance(category, Mapping):
                tests.extend(_category_tests(category))
    return tuple(tests)


#: the last test name written before a position in a cut JSON report
_JSON_NAME = re2.compile(r'"name"\s*:\s*"([^"]{1,200})"')
#: a status value and a result's entity key, as a JSON report (or a pasted piece of one) writes them
_JSON_STATUS = re2.compile(r'"status"\s*:\s*"([A-Za-z]{1,20})"')
_JSON_RESULT_ID = re2.compile(r'"(?:gpu_id|entity_id)"\s*:')
#: the key of a DCGM failure-reason code in a result's warnings: a result piece shows it
_DCGM_ERROR_KEY = '"error_id"'
#: the per-test verdict DCGM 4 writes after a test's per-entity results: a pasted test object shows it
_DCGM4_SUMMARY_KEY = '"test_summary"'
#: the most loose failures a cut JSON piece gives (one already fails it)
_MAX_LOOSE = 64


def _from_cut_json(text: str) -> tuple[DcgmTest, ...]:
    """The tests a JSON report that never closed still shows whole.

    The report as a whole does not parse, so each object in it that does is read on its own: a
    whole category (``category`` with ``tests``), a whole test (``name`` with ``results``), or a
    lone result (``status`` with ``gpu_id``/``entity_id``) whose test object was cut; that result
    takes the last test name written before it, so a visible ``Fail`` still fails the run.
    """
    decoder = json.JSONDecoder()
    tests: list[DcgmTest] = []
    position = text.find("{")
    while position != -1:
        try:
            found, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(found, Mapping):
            if isinstance(found.get("tests"), list):
                tests.extend(_category_tests(found))
            elif isinstance(found.get("results"), list):
                test = _json_test(found, "")
                tests.extend([test] if test is not None else [])
            elif "status" in found and ("gpu_id" in found or "entity_id" in found):
                names = _JSON_NAME.findall(text[max(0, position - 4096) : position])
                test = _json_test({"name": names[-1] if names else "", "results": [found]}, "")
                tests.extend([test] if test is not None else [])
        position = text.find("{", end)
    return tuple(tests)


def _loose_failures(text: str) -> tuple[DcgmTest, ...]:
    """Each ``"status": "Fail"`` of a cut JSON piece that no whole object holds.

    A pasted result may not parse at all (a terminal wrapped a message across lines, the
    closing braces were cut), yet its ``Fail`` is plain to read: each one (up to
    ``_MAX_LOOSE``, which bounds the look-back for names) becomes a result of the last test named
    before it (nameless when none is), so the piece fails.
    """
    found: list[DcgmTest] = []
    for match in _JSON_STATUS.finditer(text):
        if len(found) >= _MAX_LOOSE:
            break
        if _status(match.group(1)) != "Fail":
            continue
        names = _JSON_NAME.findall(text[max(0, match.start() - 4096) : match.start()])
        test = _json_test({"name": names[-1] if names else "", "results": [{"status": "Fail"}]}, "")
        found.extend([test] if test is not None else [])
    return tuple(found)


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


#: rows of the Metadata section: facts about the run, not tests
_METADATA = frozenset(
    {
        "DCGM Version",
        "Driver Version Detected",
        "GPU Device IDs Detected",
        "GPU PCI Device IDs Detected",
        "GPU Device Serials",
        "CPU Device IDs Detected",
        "CPU Device Serials",
        "EUD Test Version",
        "CPU EUD Test Version",
    }
)
_MESSAGE_ROWS = frozenset({"Warning", "Info"})
_ERROR_ROW = "Error"
#: DCGM 4 names a message row after its entity: ``Warning: GPU0``
_MESSAGE_PREFIXES = ("Warning:", "Info:")


def _entity_result(value: str, strict: bool = False) -> tuple[str | None, tuple[str, ...]]:
    """The status of one result cell and the GPUs it names as failing.

    DCGM 3 writes ``Fail - GPU: 0`` (or ``Pass - All``), DCGM 4 one row per entity, ``GPU0: Fail``.
    ``strict`` (a row without a test name, which may also continue a wrapped message) takes
    only those two shapes, so message text that starts with "Failed" is not read as a result.
    """
    head, sep, tail = value.partition(": ")
    group = head.rstrip("0123456789")
    if sep and group.isalpha() and group != head and tail.strip() in _STATUSES:
        entity_status = tail.strip()
        return entity_status, ((head[len(group) :] if group == "GPU" else head,) if entity_status == "Fail" else ())
    word, _, rest = value.partition(" ")
    if strict and (word not in _STATUSES or (rest and not rest.startswith("- "))):
        return None, ()
    status = _status(value)
    failed: tuple[str, ...] = ()
    if status == "Fail":
        ids = _GPU_IDS.search(value)
        if ids is not None:
            failed = tuple(sorted({part.strip() for part in ids.group(1).split(",") if part.strip()}))
    return status, failed


def _with(test: DcgmTest, status: str | None = None, failed: tuple[str, ...] = (), message: str = "") -> DcgmTest:
    """``test`` with a further entity result or message folded in (the worse status wins)."""
    worst = _worst([test.status, status]) if status is not None else test.status
    gpus = tuple(sorted(set(test.failed_gpus) | set(failed)))
    messages = (*test.messages, message) if message else test.messages
    return DcgmTest(test.name, worst or test.status, test.category, gpus, messages)


#: what a document may put before each line of a table it quotes: a comment or quote marker
_QUOTE_MARKERS = ("#", "//", ">")


def _table_part(line: str) -> str:
    """The line from its first ``|`` or ``+`` on when only an indent, or an indent and a comment
    or quote marker (a table pasted into a list item, a code comment or a mail quote), comes
    before it; the line as it is otherwise."""
    text = line.lstrip(" \t")
    if text[:1] in ("|", "+"):
        return text
    for marker in _QUOTE_MARKERS:
        if text.startswith(marker):
            rest = text[len(marker) :].lstrip(" \t")
            if rest[:1] in ("|", "+"):
                return rest
    return line


def _read_lines(text: str) -> list[str]:
    """The lines of ``text`` as the readers see them: kubelet timestamp and launcher tag cut, and
    no more than a pattern may match."""
    return [matched_part(split_line(raw)[1]) for raw in text.splitlines()]


def _embedded_tables(documents: Sequence[Any]) -> Iterator[list[str]]:
    """The lines of each box table the JSON ``documents`` carry inside a string (a health-check
    tool that wraps ``dcgmi diag``'s text output in its own report), in document order."""
    pending: list[Any] = list(reversed(documents))
    while pending:
        value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            pending.extend(reversed(value))
        elif isinstance(value, str) and "\n" in value and "| Diagnostic" in value:
            yield _read_lines(value)


def _is_border(line: str) -> bool:
    """A ``+----+----+`` rule (the table's first and last line; section rules carry a name).

    A rule cut after its column mark (``+------+-----``, a paste that lost the end of the last
    line) is still one: every row was printed before it."""
    text = line.strip()
    return len(text) > 10 and text[0] == "+" and "+" in text[1:] and not text.strip("+-")


# One pass over the box table; every kind of row (header, section, test, entity result,
# message, metadata) is one short branch of the same loop, sharing the current test and section.
def _from_table(lines: list[str]) -> tuple[tuple[DcgmTest, ...], bool]:
    """The tests of the box table and whether the table was closed by its last rule."""
    tests: list[DcgmTest] = []
    category = ""
    started = closed = False
    for raw in lines:
        line = _table_part(raw)
        heading = _CATEGORY.match(line)
        if heading is not None:
            category = heading.group(1).strip()
            continue
        if _is_border(line):
            closed = started and bool(tests)
            continue
        row = _ROW.match(line)
        if row is None:
            continue
        name, value = row.group(1), row.group(2)
        if name == "Diagnostic" and value == "Result":
            started, closed = True, False
            continue
        if name in _METADATA:
            continue
        if not name or name in _MESSAGE_ROWS or name.startswith(_MESSAGE_PREFIXES):
            if tests:
                status, failed = _entity_result(value, strict=True) if not name else (None, ())
                tests[-1] = _with(tests[-1], status, failed, "" if status is not None else value)
            continue
        if name == _ERROR_ROW:
            # DCGM 3 reports a check that could not pass as an Error row: under a test of the same
            # section it is that test's error (the test fails with it); alone, a failure of its own
            if tests and tests[-1].category == category and tests[-1].name != _ERROR_ROW:
                tests[-1] = _with(tests[-1], "Fail", (), value)
            else:
                tests.append(DcgmTest(name=name, status="Fail", category=category, messages=(value,) if value else ()))
            closed = False
            continue
        status, failed = _entity_result(value)
        if status is None:
            continue
        tests.append(DcgmTest(name=name, status=status, category=category, failed_gpus=failed))
        closed = False
    return tuple(tests), closed or not started


def _json_piece(body: str) -> bool:
    """The text is a JSON report, or a piece of one, rather than a table or a refusal.

    A report opens with ``test_categories``; a pasted piece shows a result's entity key beside a
    failure-reason code, or (DCGM 4) beside the ``test_summary`` that closes each test object.
    """
    if _JSON_STARTED in body:
        return True
    if _DCGM_ERROR_KEY not in body and _DCGM4_SUMMARY_KEY not in body:
        return False
    return _JSON_RESULT_ID.search(body) is not None


def parse_dcgm(text: str) -> DcgmResult:
    """The tests and overall status in a ``dcgmi diag`` log; never raises on odd input."""
    lines = _read_lines(text)
    body = "\n".join(lines)
    tests: tuple[DcgmTest, ...] = ()
    documents: list[Any] = []  # decoded once: a report with no DCGM result may carry its table
    for document in _json_documents(body):
        documents.append(document)
        tests = _from_json(document)
        if tests:
            break
    complete = True
    if not tests:
        tests, complete = _from_table(lines)
    if not tests:
        # a tool's own JSON report that carries dcgmi's table as text: the table decides, never
        # the tool's summary of it
        for table in _embedded_tables(documents):
            tests, complete = _from_table(table)
            if tests:
                break
    if not tests and _json_piece(body):
        # a JSON report (or a piece of one) that never closed: what it shows whole is read, a
        # status no whole object holds still counts when it fails, and nothing in it is a pass
        tests, complete = _from_cut_json(body), False
        loose = _loose_failures(body)
        if loose and not any(test.status == "Fail" for test in tests):
            tests = tests + loose
    return DcgmResult(tests=tests, overall=_overall(tests, complete))
