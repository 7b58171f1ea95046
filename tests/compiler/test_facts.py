"""Loading cluster facts: formats accepted, strict validation with paths, order independence."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from nvcre.compiler.diagnostics import CompileError, Severity
from nvcre.compiler.facts import (
    ClusterFacts,
    allocatable,
    device_attributes,
    facts_from_documents,
    facts_from_objects,
    facts_from_text,
    is_cordoned,
    is_ready,
    load_facts,
    name_of,
    parse_quantity,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facts"


def _errors(text: str, source: str = "facts.yaml") -> list[tuple[str, str, str]]:
    with pytest.raises(CompileError) as info:
        facts_from_text(text, source=source)
    return [(d.code, d.path, d.message) for d in info.value.diagnostics]


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.yaml")))
def test_every_fixture_loads_and_is_sorted(fixture):
    facts = load_facts(FIXTURES / fixture)
    assert facts.nodes, "every fixture has nodes"
    names = [name_of(n) for n in facts.nodes]
    assert names == sorted(names)
    assert [name_of(s) for s in facts.resource_slices] == sorted(name_of(s) for s in facts.resource_slices)
    assert facts.source.endswith(fixture)


def test_fixture_contents_by_kind():
    gcp = load_facts(FIXTURES / "gcp-h100-a3mega.yaml")
    assert (len(gcp.nodes), len(gcp.resource_slices), len(gcp.pods)) == (2, 0, 3)
    nscale = load_facts(FIXTURES / "nscale-gb300-dra.yaml")
    assert (len(nscale.nodes), len(nscale.resource_slices), len(nscale.pods)) == (4, 7, 0)


def test_list_stream_and_typed_list_are_equivalent():
    as_list = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n2}, spec: {providerID: "aws://x"}}
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
"""
    as_stream = """
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {providerID: "aws://x"}
"""
    # The API's typed lists leave kind and apiVersion off their items.
    as_typed = """
apiVersion: v1
kind: NodeList
items:
- metadata: {name: n2}
  spec: {providerID: "aws://x"}
- metadata: {name: n1}
"""
    a, b, c = (facts_from_text(t, source="f") for t in (as_list, as_stream, as_typed))
    assert [name_of(n) for n in a.nodes] == ["n1", "n2"]
    assert a.nodes[1]["spec"]["providerID"] == "aws://x"
    assert a == b
    assert c.nodes[0]["kind"] == "Node" and c.nodes[0]["apiVersion"] == "v1"
    assert [name_of(n) for n in c.nodes] == ["n1", "n2"]


def test_json_input_is_accepted():
    doc = {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "j1"}}]}
    facts = facts_from_text(json.dumps(doc, indent=2), source="facts.json")
    assert [name_of(n) for n in facts.nodes] == ["j1"]


def test_empty_input_gives_empty_facts():
    assert facts_from_text("", source="f").nodes == ()
    assert facts_from_text("---\n---\n", source="f").nodes == ()


def test_unused_kinds_are_ignored_with_one_info_per_kind():
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c1}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c2}}
- {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}}
- {apiVersion: example.com/v1, kind: Node, metadata: {name: not-a-core-node}}
"""
    facts = facts_from_text(text, source="facts.yaml")
    assert [name_of(n) for n in facts.nodes] == ["n1"]
    notes = [(d.code, d.severity, d.path, d.message) for d in facts.diagnostics]
    assert notes == [
        (
            "FactsKindIgnored",
            Severity.INFO,
            "facts.yaml: items[1]",
            "2 ConfigMap (v1) object(s) ignored: detection reads only Nodes, ResourceSlices and Pods",
        ),
        (
            "FactsKindIgnored",
            Severity.INFO,
            "facts.yaml: items[3]",
            "1 DaemonSet (apps/v1) object(s) ignored: detection reads only Nodes, ResourceSlices and Pods",
        ),
        (
            "FactsKindIgnored",
            Severity.INFO,
            "facts.yaml: items[4]",
            "1 Node (example.com/v1) object(s) ignored: detection reads only Nodes, ResourceSlices and Pods",
        ),
    ]


def test_resource_slices_of_any_served_version_are_read():
    text = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s1}
spec: {driver: gpu.nvidia.com, nodeName: n1, pool: {name: n1, generation: 1}, devices: []}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSliceList
items:
- metadata: {name: s0}
  spec: {driver: gpu.nvidia.com, nodeName: n1, pool: {name: n1, generation: 1}}
"""
    facts = facts_from_text(text, source="f")
    assert [name_of(s) for s in facts.resource_slices] == ["s0", "s1"]


def test_order_of_the_file_does_not_matter():
    yaml = YAML(typ="safe")
    docs = list(yaml.load_all((FIXTURES / "nscale-gb300-dra.yaml").read_text()))
    baseline = facts_from_documents(docs, source="f")
    for seed in range(5):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        assert facts_from_documents(shuffled, source="f") == baseline


def test_facts_are_frozen():
    facts = load_facts(FIXTURES / "aws-h100-2nodes.yaml")
    with pytest.raises(AttributeError):
        facts.nodes = ()  # type: ignore[misc]
    assert isinstance(facts.nodes, tuple)


def test_direct_construction_sorts_too():
    facts = ClusterFacts(nodes=({"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}))
    assert [name_of(n) for n in facts.nodes] == ["a", "b"]
    assert facts.node("b") == {"metadata": {"name": "b"}}
    assert facts.node("zzz") is None


# --------------------------------------------------------------------------- errors


def test_error_paths_point_into_list_items():
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: ok-0}}
- {apiVersion: v1, kind: Node, metadata: {name: ok-1}}
- {apiVersion: v1, kind: Node, metadata: {name: ok-2}}
- {apiVersion: v1, kind: Node, metadata: {labels: {a: b}}}
"""
    assert _errors(text) == [("FactsMalformed", "facts.yaml: items[3].metadata.name", "Node needs a non-empty string name")]


def test_error_paths_in_multi_document_streams_name_the_document():
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- 42\n"
    assert _errors(text) == [
        ("FactsMalformed", "facts.yaml: documents[1].items[0]", "expected a Kubernetes object (a mapping), found a number")
    ]


def test_every_problem_is_reported_at_once():
    text = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    labels: {nvidia.com/gpu.present: true}
  status:
    allocatable: {nvidia.com/gpu: eight}
- apiVersion: v1
  kind: Node
  metadata: {name: n2}
  spec:
    unschedulable: "yes"
    taints: [{effect: NoSchedule}]
- kind: ""
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: kube-system}
  spec: {containers: [{image: 7}]}
"""
    assert _errors(text) == [
        (
            "FactsMalformed",
            "facts.yaml: items[0].metadata.labels.nvidia.com/gpu.present",
            'label values must be strings: quote it, e.g. "true"',
        ),
        ("FactsMalformed", "facts.yaml: items[0].status.allocatable.nvidia.com/gpu", "'eight' is not a Kubernetes quantity"),
        ("FactsMalformed", "facts.yaml: items[1].spec.unschedulable", "expected true or false, found a string"),
        ("FactsMalformed", "facts.yaml: items[1].spec.taints[0].key", "required"),
        ("FactsMalformed", "facts.yaml: items[2].kind", "every object needs a kind (Node, ResourceSlice or Pod)"),
        ("FactsMalformed", "facts.yaml: items[3].spec.containers[0].image", "expected a string, found a number"),
    ]


def test_top_level_shapes_are_checked():
    assert _errors("- a\n- b\n") == [("FactsMalformed", "facts.yaml", "expected a Kubernetes object (a mapping), found a list")]
    assert _errors("metadata: {name: x}\n") == [
        ("FactsMalformed", "facts.yaml: kind", "every object needs a kind (Node, ResourceSlice, Pod or a List of them)")
    ]
    assert _errors("kind: List\nitems: {a: 1}\n") == [
        ("FactsMalformed", "facts.yaml: items", "expected a list of objects, found a mapping")
    ]


def test_resource_slice_shapes_are_checked():
    text = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  pool: {name: p, generation: "1"}
  devices:
  - name: gpu-0
    attributes:
      productName: NVIDIA GB300
"""
    assert _errors(text) == [
        ("FactsMalformed", "facts.yaml: spec.pool.generation", "expected an integer, found a string"),
        ("FactsMalformed", "facts.yaml: spec.devices[0].attributes.productName", "expected one of string, int, bool or version"),
    ]


def test_duplicate_objects_are_rejected():
    text = "kind: List\napiVersion: v1\nitems:\n- {kind: Node, metadata: {name: a}}\n- {kind: Node, metadata: {name: a}}\n"
    assert _errors(text) == [("FactsDuplicateObject", "facts.yaml: items[1]", "Node a appears twice (first at facts.yaml: items[0])")]
    # Pods are namespaced: the same name in two namespaces is two pods.
    pods = "kind: PodList\napiVersion: v1\nitems:\n- {metadata: {name: p, namespace: a}}\n- {metadata: {name: p, namespace: b}}\n"
    assert len(facts_from_text(pods, source="f").pods) == 2


def test_yaml_syntax_errors_carry_the_position():
    [(code, path, message)] = _errors("kind: List\nitems:\n  - {a: 1\n")
    assert (code, path) == ("FactsYAMLError", "facts.yaml")
    assert message.startswith("not valid YAML (line ")


def test_duplicate_keys_are_a_yaml_error():
    [(code, _, _)] = _errors("kind: Node\nkind: Pod\nmetadata: {name: x}\n")
    assert code == "FactsYAMLError"


def test_unreadable_file(tmp_path):
    with pytest.raises(CompileError) as info:
        load_facts(tmp_path / "missing.yaml")
    [d] = info.value.diagnostics
    assert d.code == "FactsUnreadable" and d.path.endswith("missing.yaml")


def test_yaml_tags_are_not_constructed(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("kind: Node\nmetadata: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(CompileError) as info:
        load_facts(path)
    assert info.value.diagnostics[0].code == "FactsYAMLError"


# --------------------------------------------------------------------------- accessors


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("8", Fraction(8)),
        (8, Fraction(8)),
        ("1k", Fraction(1000)),
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(1024**3)),
        ("2045839400Ki", Fraction(2045839400 * 1024)),
        ("1e3", Fraction(1000)),
        ("1.5", Fraction(3, 2)),
        (" 4 ", Fraction(4)),
    ],
)
def test_parse_quantity(raw, expected):
    assert parse_quantity(raw) == expected


@pytest.mark.parametrize("raw", ["eight", "", "1KB", True, None, [1], "1.2.3"])
def test_parse_quantity_rejects(raw):
    with pytest.raises(ValueError):
        parse_quantity(raw)


def test_node_accessors():
    facts = load_facts(FIXTURES / "onprem-gb200-rdma.yaml")
    cordoned = facts.node("gb200-r01-t04")
    assert is_cordoned(cordoned) and is_ready(cordoned)
    assert allocatable(facts.node("gb200-r01-t01"))["rdma/ib"] == 8
    assert not is_ready({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
    assert not is_ready({})


def test_device_attributes_handle_both_layouts():
    v1 = {"name": "gpu-0", "attributes": {"productName": {"string": "NVIDIA GB300"}, "index": {"int": 0}}}
    v1beta1 = {
        "name": "gpu-0",
        "basic": {"attributes": {"productName": {"string": "NVIDIA GB300"}, "cudaComputeCapability": {"version": "10.3.0"}}},
    }
    assert device_attributes(v1) == {"productName": "NVIDIA GB300", "index": 0}
    assert device_attributes(v1beta1) == {"productName": "NVIDIA GB300", "cudaComputeCapability": "10.3.0"}


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(
    "raw",
    ["1e999999999", "1e-999999999", "1e41", "9" * 30, "9223372036854775808", 2**63, "8Ei", "1" * 65, float("inf"), float("nan")],
)
def test_parse_quantity_refuses_what_kubernetes_cannot_store_without_computing_it(raw):
    with pytest.raises(ValueError):
        parse_quantity(raw)


def test_parse_quantity_keeps_the_largest_storable_values():
    assert parse_quantity("9223372036854775807") == 2**63 - 1
    assert parse_quantity("1e18") == 10**18
    assert parse_quantity("7Ei") == 7 * 1024**6
    assert parse_quantity("1e-40") == Fraction(1, 10**40)


def test_oversized_facts_are_refused_before_parsing():
    text = "kind: List\nitems: []\n# " + "x" * (17 * 1024 * 1024) + "\n"
    [(code, path, _)] = _errors(text)
    assert (code, path) == ("FactsTooLarge", "facts.yaml")


def test_facts_values_json_cannot_hold_are_refused_at_their_path():
    # An unquoted timestamp (as old kubectl printed it) reads as text; a binary value still cannot.
    text = "kind: Node\napiVersion: v1\nmetadata:\n  name: a\n  creationTimestamp: 2026-01-01T00:00:00Z\nx: !!binary aGk=\n"
    [(code, path, message)] = _errors(text)
    assert (code, path) == ("FactsMalformed", "facts.yaml: x")
    assert "base64" in message


def test_deep_facts_are_refused_in_json_and_yaml():
    deep = "[" * 5000 + "]" * 5000
    for text in ('{"kind": "Node", "metadata": {"name": "a"}, "x": ' + deep + "}", "kind: Node\nmetadata: {name: a}\nx: " + deep + "\n"):
        [(code, _, message)] = _errors(text)
        assert code == "FactsMalformed" and "nest" in message


def test_facts_from_objects_fills_in_the_kind_informer_items_lack():
    facts = facts_from_objects(
        nodes=[{"metadata": {"name": "b"}}, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}],
        resource_slices=[{"apiVersion": "resource.k8s.io/v1", "metadata": {"name": "s"}, "spec": {"driver": "gpu.nvidia.com"}}],
    )
    assert [name_of(n) for n in facts.nodes] == ["a", "b"]
    assert len(facts.resource_slices) == 1 and facts.source == "cluster"
