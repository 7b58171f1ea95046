"""The facts reader takes 2017-era ``kubectl get -o yaml`` output, whose timestamps are unquoted.

``tests/fixtures/facts/gke-2017-unquoted-timestamps.yaml`` is the node dump of
https://github.com/kubernetes/kubernetes/issues/55005: ``creationTimestamp: 2017-11-02T14:00:08Z``
without quotes, which a YAML 1.1 reader turns into a datetime, not a JSON value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nvcre.cli.cluster import app
from nvcre.compiler.detect import node_platform
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.facts import facts_from_text, load_facts

FIXTURE = Path(__file__).parents[1] / "fixtures" / "facts" / "gke-2017-unquoted-timestamps.yaml"


def test_unquoted_timestamps_are_read_as_the_text_they_are() -> None:
    facts = load_facts(FIXTURE)
    [node] = facts.nodes
    assert node["metadata"]["creationTimestamp"] == "2017-11-02T14:00:08Z"
    assert node_platform(node) == "gcp"


def test_dates_and_spaced_timestamps_stay_text_too() -> None:
    text = "kind: Node\nmetadata:\n  name: a\n  creationTimestamp: 2017-11-02\n  annotations:\n    at: 2001-12-14 21:59:43.10 -5\n"
    [node] = facts_from_text(text).nodes
    assert node["metadata"]["creationTimestamp"] == "2017-11-02"
    assert node["metadata"]["annotations"]["at"] == "2001-12-14 21:59:43.10 -5"


def test_other_values_json_cannot_hold_are_still_refused() -> None:
    # Safe loading stays: only timestamps changed.
    with pytest.raises(CompileError) as caught:
        facts_from_text("kind: Node\nmetadata:\n  name: a\nx: !!binary aGk=\n")
    assert [d.code for d in caught.value.errors] == ["FactsMalformed"]
    with pytest.raises(CompileError):
        facts_from_text("kind: Node\nmetadata:\n  name: a\nx: !!python/object:os.system {}\n")


def test_cluster_info_gets_past_reading_the_2017_dump() -> None:
    r = CliRunner().invoke(app, ["info", "--facts", str(FIXTURE)])
    # The node is then left out for want of nvidia.com/gpu.present (a 2017 node has no GFD labels).
    assert "FactsMalformed" not in r.output and "creationTimestamp" not in r.output
    assert "NoTargetNodes" in r.output and "nvidia.com/gpu.present" in r.output
