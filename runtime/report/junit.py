"""The JUnit XML report (``--junit FILE``): the verdict as CI dashboards read test results.

One ``testsuite`` per Certification or WorkloadRun (its name, ``tests``/``failures``/``skipped``
counts and the run's result as a property), one ``testcase`` per category (``classname`` the
run's name, ``name`` ``domain/variant``, ``time`` the category's runtime). A failed category
carries a ``failure`` whose message is its failure reason and whose text lists each failed group
with its nodes and reason and each blamed node with its reason; a category that has not finished
is ``skipped`` with its status. The document is built with the standard library's ElementTree, so
every value is escaped, and is deterministic: the same verdicts give the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..judge.model import CategoryVerdict, CertificationVerdict

__all__ = ["dumps"]


def _failure_text(category: CategoryVerdict, verdict: CertificationVerdict) -> str:
    lines: list[str] = []
    members: set[str] = set()
    for group in category.failed_groups:
        members.update(group.nodes)
        nodes = ", ".join(group.nodes) or f"{group.node_count} node(s)"
        lines.append(f"group {group.name} ({nodes}): {group.reason or 'failed'}")
    for node in verdict.failed_nodes:
        if not members or node.name in members:
            detail = f": {node.message}" if node.message else ""
            lines.append(f"node {node.name}: {node.reason or 'failed'}{detail}")
    return "\n".join(lines)


def _case(suite: ET.Element, category: CategoryVerdict, verdict: CertificationVerdict) -> tuple[int, int]:
    case = ET.SubElement(
        suite,
        "testcase",
        {
            "classname": verdict.name,
            "name": category.key,
            "time": f"{category.runtime_seconds or 0:.0f}",
        },
    )
    if category.status == "Failed":
        failure = ET.SubElement(
            case,
            "failure",
            {
                "message": category.failure_reason or "failed",
                "type": "CategoryFailed",
            },
        )
        failure.text = _failure_text(category, verdict)
        return 1, 0
    if category.status != "Succeeded":
        ET.SubElement(case, "skipped", {"message": f"category is {category.status or 'Pending'}"})
        return 0, 1
    return 0, 0


def dumps(verdicts: Sequence[CertificationVerdict]) -> str:
    """The JUnit XML document for ``verdicts``, with an XML declaration and a trailing newline."""
    root = ET.Element("testsuites", {"name": "nvcre"})
    totals = [0, 0, 0]
    for verdict in verdicts:
        suite = ET.SubElement(root, "testsuite", {"name": f"{verdict.kind} {verdict.namespace}/{verdict.name}"})
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", {"name": "result", "value": verdict.result})
        ET.SubElement(properties, "property", {"name": "platform", "value": verdict.platform})
        ET.SubElement(properties, "property", {"name": "gpu", "value": verdict.gpu})
        failures = skipped = 0
        for category in verdict.categories:
            failed, skip = _case(suite, category, verdict)
            failures, skipped = failures + failed, skipped + skip
        counts = {"tests": len(verdict.categories), "failures": failures, "errors": 0, "skipped": skipped}
        suite.attrib.update({k: str(v) for k, v in counts.items()})
        totals = [totals[0] + len(verdict.categories), totals[1] + failures, totals[2] + skipped]
    root.attrib.update({"tests": str(totals[0]), "failures": str(totals[1]), "errors": "0", "skipped": str(totals[2])})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
