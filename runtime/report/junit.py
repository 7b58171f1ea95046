"""The JUnit XML report (``--junit FILE``): the verdict as NVCRE's JUnit file lays it out.

One ``testsuite`` per Certification or WorkloadRun, named after it, with ``tests``, ``failures``,
``errors`` and ``time`` (seconds). One ``testcase`` per category: ``name`` the variant (``variant
[2]``, ``[3]``... when the same domain/variant comes again), ``classname`` ``<run>.<domain>``,
``time`` the category's report runtime in seconds (left out when the report has none).

- A failed category is a ``failure`` whose message is its failure reason and whose body is the
  category's JSON, as the JSON report writes it.
- A category that has not finished (Running, Pending...) is an ``error``
  (``Category did not complete: <status>``) with the category's JSON as its body.
- In a run whose result is INCOMPLETE or RUNNING, every succeeded category is an ``error`` too
  (``Certification did not complete: <result>``) whose body is the whole report, so a CI gate
  on ``errors`` fails on a run that did not finish or left nodes untested.
- A run without categories gets one ``certification`` case that is such an error.

The root ``testsuites`` carries the totals as well. XML 1.0 cannot carry most C0 control
characters (NUL, ESC...), so any of them in a message is written as U+FFFD, as Go's XML encoder
does; the JSON bodies keep them as ``\\u`` escapes. The document is deterministic: the same
verdicts give the same bytes.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from ..judge.model import INCOMPLETE, RUNNING, CertificationVerdict
from . import json as report_json

__all__ = ["dumps"]

#: characters XML 1.0 cannot hold in any form (C0 controls but tab/LF/CR, surrogates, U+FFFE/F)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: a report runtime as ``report.format.human_duration`` writes it: ``45s``, ``12m 5s``, ``2h 3m``
_RUNTIME = re.compile(r"^(?:(\d+)h)? ?(?:(\d+)m)? ?(?:(\d+)s)?$")
_UNFINISHED_RUNS = (INCOMPLETE, RUNNING)


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _json_body(value: Any) -> str:
    return _xml_text(json.dumps(value, indent=2, ensure_ascii=False))


def _runtime_seconds(runtime: object) -> float | None:
    """The seconds of a report runtime string; ``None`` when there is none or it does not read."""
    if not isinstance(runtime, str) or not runtime.strip():
        return None
    match = _RUNTIME.match(runtime.strip())
    if match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


def _seconds_text(seconds: float) -> str:
    """Seconds as Go's shortest decimal form: ``62``, ``0.5``."""
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def _issue(case: ET.Element, tag: str, message: str, body: Any) -> None:
    issue = ET.SubElement(case, tag, {"message": _xml_text(message)})
    issue.text = _json_body(body)


def _suite(root: ET.Element, verdict: CertificationVerdict) -> tuple[int, int, int, float]:
    """One run's suite; returns its tests, failures, errors and seconds."""
    report = report_json.to_dict(verdict)
    suite = ET.SubElement(root, "testsuite", {"name": _xml_text(verdict.name)})
    failures = errors = 0
    total = 0.0
    seen: dict[str, int] = {}
    categories: list[Mapping[str, Any]] = report["categories"]
    for category in categories:
        domain, variant = str(category["domain"]), str(category["variant"])
        identity = f"{domain}/{variant}"
        seen[identity] = seen.get(identity, 0) + 1
        name = variant if seen[identity] == 1 else f"{variant} [{seen[identity]}]"
        attributes = {"name": _xml_text(name), "classname": _xml_text(f"{verdict.name}.{domain}")}
        seconds = _runtime_seconds(category.get("runtime"))
        if seconds is not None:
            attributes["time"] = _seconds_text(seconds)
            total += seconds
        case = ET.SubElement(suite, "testcase", attributes)
        status = str(category["status"])
        if status == "Succeeded":
            if report["result"] in _UNFINISHED_RUNS:
                _issue(case, "error", f"Certification did not complete: {report['result']}", report)
                errors += 1
        elif status == "Failed":
            _issue(case, "failure", str(category.get("failureReason") or "Category failed"), category)
            failures += 1
        else:
            _issue(case, "error", f"Category did not complete: {status}", category)
            errors += 1
    if not categories:
        case = ET.SubElement(suite, "testcase", {"name": "certification", "classname": _xml_text(verdict.name)})
        _issue(case, "error", f"Certification did not complete: {report['result']}", report)
        errors += 1
    tests = len(suite.findall("testcase"))
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors), "time": _seconds_text(total)}
    suite.attrib.update(counts)
    return tests, failures, errors, total


def dumps(verdicts: Sequence[CertificationVerdict]) -> str:
    """The JUnit XML document for ``verdicts``, with an XML declaration and a trailing newline."""
    root = ET.Element("testsuites")
    tests = failures = errors = 0
    seconds = 0.0
    for verdict in verdicts:
        t, f, e, s = _suite(root, verdict)
        tests, failures, errors, seconds = tests + t, failures + f, errors + e, seconds + s
    root.attrib.update({"tests": str(tests), "failures": str(failures), "errors": str(errors), "time": _seconds_text(seconds)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
