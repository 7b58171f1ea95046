"""expand_node_results: gzip-stable succeeded/failed node ConfigMaps."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand import decode_failed, decode_succeeded, expand_node_results

WORKFLOW = {"metadata": {"name": "wf", "namespace": "burn", "uid": "9a8b7c6d-1111-2222-3333-444444444444"}, "spec": {}}


def raw(config_map: dict, key: str) -> bytes:
    return gzip.decompress(base64.b64decode(config_map["binaryData"][key]))


def test_succeeded_nodes_are_sorted_unique_csv_named_after_the_uid() -> None:
    (succeeded,) = expand_node_results(WORKFLOW, ["n2", "n1", "n2"], [])
    assert succeeded["metadata"]["name"] == "succeeded-nodes-9a8b7c6d"
    assert succeeded["metadata"]["namespace"] == "burn"
    assert succeeded["metadata"]["ownerReferences"][0]["kind"] == "Workflow"
    assert raw(succeeded, "succeeded-nodes.csv.gz") == b"n1,n2"
    assert decode_succeeded(succeeded) == ["n1", "n2"]


def test_failed_nodes_are_one_entry_per_name_and_reason_sorted_as_compact_json() -> None:
    failed = [
        {"name": "n2", "reason": "WorkloadFailed", "message": "exit <1> & more"},
        {"name": "n1", "reason": "ThresholdViolation", "message": "low"},
        {"name": "n1", "reason": "HardwareFailureDetected", "message": "hw"},
        {"name": "n2", "reason": "WorkloadFailed", "message": "a later duplicate"},
    ]
    (config_map,) = expand_node_results(WORKFLOW, [], failed)
    assert config_map["metadata"]["name"] == "failed-nodes-9a8b7c6d"
    text = raw(config_map, "failed-nodes.json.gz").decode()
    assert text == (
        '[{"name":"n1","reason":"HardwareFailureDetected","message":"hw"},'
        '{"name":"n1","reason":"ThresholdViolation","message":"low"},'
        '{"name":"n2","reason":"WorkloadFailed","message":"exit \\u003c1\\u003e \\u0026 more"}]'
    )
    assert decode_failed(config_map)[2]["message"] == "exit <1> & more"
    assert json.loads(text) == decode_failed(config_map)


def test_bytes_are_stable_and_empty_lists_give_nothing() -> None:
    first = expand_node_results(WORKFLOW, ["b", "a"], [{"name": "a", "reason": "WorkloadFailed", "message": "m"}])
    again = expand_node_results(WORKFLOW, ["a", "b"], [{"name": "a", "reason": "WorkloadFailed", "message": "m"}])
    assert first == again
    assert base64.b64decode(first[0]["binaryData"]["succeeded-nodes.csv.gz"])[4:8] == b"\0\0\0\0"  # gzip mtime 0
    assert expand_node_results(WORKFLOW, [], []) == []


def test_bad_entries_are_reported_with_their_index() -> None:
    with pytest.raises(CompileError) as caught:
        expand_node_results(WORKFLOW, [], [{"name": "", "reason": "WorkloadFailed"}])
    assert caught.value.diagnostics[0].path == "failed[0].name"
    with pytest.raises(CompileError):
        expand_node_results(WORKFLOW, "n1", [])  # type: ignore[arg-type]
