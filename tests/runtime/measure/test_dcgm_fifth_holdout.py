"""Defects the fifth hold-out of real DCGM, training and node outputs found in today's readers.

Each test holds a shape of real output that was read wrongly before its fix: a piece of a
DCGM 4 JSON report pasted on its own (one test object with per-entity results and the
``test_summary`` that closes it, no enclosing ``test_categories``), and a Node whose only sign
of its cloud is the CSI node-id annotation of that cloud's block-storage driver.
"""

from __future__ import annotations

import json
from typing import Any

from nvcre.compiler.detect.platform import detect_platform, read_platform
from nvcre.runtime.measure.dcgm import INCOMPLETE, parse_dcgm


def _dcgm4_test_object(name: str, statuses: list[str]) -> str:
    """One DCGM 4 test object as ``dcgmi diag --json`` indents it, followed by the comma a
    paste of a longer report leaves behind."""
    results = [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": index, "status": status} for index, status in enumerate(statuses)]
    summary = "Fail" if "Fail" in statuses else "Pass"
    body = json.dumps({"name": name, "results": results, "test_summary": {"status": summary}}, indent=8)
    return body + ",\n"


def test_a_dcgm4_test_object_pasted_alone_is_read_and_never_a_pass() -> None:
    result = parse_dcgm(_dcgm4_test_object("memory", ["Pass", "Pass", "Pass", "Pass"]))
    assert [(test.name, test.status) for test in result.tests] == [("memory", "Pass")]
    assert result.overall == INCOMPLETE
    assert not result.passed


def test_a_failing_entity_in_a_dcgm4_test_object_fails_the_run() -> None:
    result = parse_dcgm(_dcgm4_test_object("diagnostic", ["Pass", "Fail", "Pass"]))
    assert result.overall == "Fail"
    assert [(test.name, test.status, test.failed_gpus) for test in result.tests] == [("diagnostic", "Fail", ("1",))]


def test_a_dcgm4_test_object_behind_a_launcher_prefix_is_read() -> None:
    piece = "".join(f"[1,0]<stdout>:{line}\n" for line in _dcgm4_test_object("pcie", ["Fail"]).splitlines())
    result = parse_dcgm(piece)
    assert result.overall == "Fail"
    assert [test.name for test in result.tests] == ["pcie"]


def _node(name: str, annotations: dict[str, str], provider: str = "") -> dict[str, Any]:
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations}}
    if provider:
        node["spec"] = {"providerID": provider}
    return node


def test_a_node_registered_by_the_ebs_csi_driver_is_on_aws() -> None:
    node = _node("n1", {"csi.volume.kubernetes.io/nodeid": '{"ebs.csi.aws.com":"i-0abc"}'})
    reading = read_platform(node)
    assert reading.platform == "aws"
    assert reading.basis == "annotation csi.volume.kubernetes.io/nodeid (ebs.csi.aws.com)"
    fact, diags = detect_platform([node])
    assert fact is not None and fact.value == "aws"
    assert any(d.code == "PlatformFromLabel" and "ebs.csi.aws.com" in d.message for d in diags)


def test_the_csi_annotation_never_overrides_a_provider_id_or_decides_between_clouds() -> None:
    kind = _node("n2", {"csi.volume.kubernetes.io/nodeid": '{"ebs.csi.aws.com":"i-0abc"}'}, "kind://docker/k/n2")
    assert read_platform(kind).platform == "onprem"
    both = _node("n3", {"csi.volume.kubernetes.io/nodeid": '{"ebs.csi.aws.com":"i-1","disk.csi.azure.com":"vm"}'})
    assert read_platform(both).platform == "onprem"
    assert read_platform(_node("n4", {"csi.volume.kubernetes.io/nodeid": "{not json"})).platform == "onprem"
