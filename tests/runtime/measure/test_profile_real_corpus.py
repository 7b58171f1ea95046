"""Real tool outputs from public sources, read by nvcre's parsers and node detection.

``golden/measure/real/manifest.yaml`` lists each artefact with its source and the reading a
person gets from it (see the README beside it). One test per artefact runs the public entry
point (``parse_bandwidth`` with the catalog's ``nccl-bandwidth`` profile, ``parse_dcgm``,
``parse_training`` with the built-in profile that reads the log best, or the detection
functions ``cluster info`` uses) and compares. An entry with ``pending`` is read wrongly today:
it is a strict xfail, so the day the parser learns the shape the stale ``pending`` fails.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.detect import node_gpu_counts, node_platform
from nvcre.compiler.detect.gpu_arch import node_products
from nvcre.compiler.facts import facts_from_objects, name_of
from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import CORRUPTED
from nvcre.runtime.measure.training import TrainingParse, parse_training
from tests.goldenharness import GOLDEN

REAL = GOLDEN / "measure" / "real"
KINDS = ("nccl", "dcgm", "training", "nodes")
ENTRIES: list[dict[str, Any]] = yaml.safe_load((REAL / "manifest.yaml").read_text(encoding="utf-8"))["entries"]

# Names a parse result may use to report a failed run or wrong values (the parsers grow them).
_FAILURE_FIELDS = ("failure", "failures", "failure_reason", "failure_reasons", "failed")
_WRONG_FIELDS = ("wrong_elements", "wrong", "wrong_count", "wrong_values")
_SKIPPED_FIELDS = ("skipped", "skipped_iterations")


def _text(entry: Mapping[str, Any]) -> str:
    return (REAL / str(entry["file"])).read_text(encoding="utf-8")


def _profiles() -> list[dict[str, Any]]:
    profiles: list[dict[str, Any]] = builtin_logprofiles()
    return profiles


# ------------------------------------------------------------------ nccl


def _reported(parse: object, fields: tuple[str, ...]) -> list[Any]:
    return [value for value in (getattr(parse, name, None) for name in fields) if value]


def _nccl_reading(text: str) -> dict[str, Any]:
    profile = next(p for p in _profiles() if p["metadata"]["name"] == "nccl-bandwidth")
    parsed = parse_bandwidth(text, profile)
    largest = parsed.results[-1] if parsed.results else None
    failures = _reported(parsed, _FAILURE_FIELDS)
    # a #wrong count above zero is the one corruption whose message counts wrong elements (an
    # 'Out of bounds values : N FAILED' line corrupts the run too, but counts nothing)
    wrong = _reported(parsed, _WRONG_FIELDS) or [
        f for f in failures if getattr(f, "reason", None) == CORRUPTED and " wrong elements in " in str(getattr(f, "message", ""))
    ]
    return {
        "rows": parsed.row_count,
        "largest_size": largest.size_bytes if largest else None,
        "largest_busbw": largest.bus_bw if largest else None,
        "avg_busbw": parsed.avg_bus_bandwidth,
        "wrong_nonzero": bool(wrong),
        "failed": bool(failures),
        "network": sorted(parsed.transport),
    }


def _check_nccl(reading: Mapping[str, Any], expect: Mapping[str, Any]) -> None:
    for key in ("rows", "largest_size", "wrong_nonzero", "failed"):
        assert reading[key] == expect[key], key
    assert reading["network"] == sorted(expect["network"]), "network"
    for key in ("largest_busbw", "avg_busbw"):
        if expect[key] is None:
            assert reading[key] is None, key
        else:
            assert reading[key] == pytest.approx(expect[key], abs=0.005), key


# ------------------------------------------------------------------ dcgm


def _check_dcgm(text: str, expect: Mapping[str, Any]) -> None:
    result = parse_dcgm(text)
    assert result.overall == expect["overall"], "overall"
    if "tests" in expect:
        assert [[t.name, t.status] for t in result.tests] == [list(t) for t in expect["tests"]], "tests"


# ------------------------------------------------------------------ training


def _reads(parsed: TrainingParse) -> tuple[int, int, int, int]:
    """How much of the log a parse read: iteration lines, then steps, then steps with a TFLOP/s
    figure, then with a loss."""
    steps = parsed.steps
    return (
        parsed.iteration_lines,
        len(steps),
        sum(s.tflops is not None for s in steps),
        sum(s.loss is not None for s in steps),
    )


def _best_training_parse(text: str) -> TrainingParse:
    """The built-in profile that reads the log best (most steps, then most fields; ties: the
    first by name)."""
    best = TrainingParse()
    for profile in _profiles():
        if "trainingStep" not in profile["spec"].get("patterns", {}):
            continue
        parsed = parse_training(text, profile)
        if _reads(parsed) > _reads(best):
            best = parsed
    return best


def _training_reading(text: str) -> dict[str, Any]:
    """The progress the iteration lines show, timed or not (a line with no step time, nor a
    timestamp to derive one from, is no step but still an iteration the run reached)."""
    parsed = _best_training_parse(text)
    skipped = 0
    for step in parsed.steps:
        skipped += sum(int(value) for value in _reported(step, _SKIPPED_FIELDS))
    return {
        "iterations": parsed.iteration_lines,
        "first": parsed.first_line_iteration,
        "last": parsed.last_line_iteration,
        "skipped": skipped,
        "last_loss": parsed.last_line_loss,
        "tflops": parsed.tflops_lines > 0,
    }


def _check_training(reading: Mapping[str, Any], expect: Mapping[str, Any]) -> None:
    for key in ("iterations", "first", "last", "skipped", "tflops"):
        assert reading[key] == expect[key], key
    want, got = expect["last_loss"], reading["last_loss"]
    if want is None:
        assert got is None, "last_loss"
    elif want == "nan":
        assert got is not None and math.isnan(got), "last_loss"
    else:
        assert got == pytest.approx(float(want), rel=1e-6), "last_loss"


# ------------------------------------------------------------------ nodes

_SECTION = re.compile(r"^([A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*):(\s*)(.*)$")
_PAIR_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._/-]*)([=:])\s*(.*)$")
_DESCRIBE_MAPS = {"Labels": "=", "Annotations": ":", "Capacity": ":", "Allocatable": ":"}


def _node(name: str, pieces: Mapping[str, Mapping[str, str]], provider: str) -> dict[str, Any]:
    """A Node with the name, labels, annotations, providerID and GPU resources a piece shows."""
    metadata: dict[str, Any] = {"name": name, "labels": dict(pieces.get("Labels", {}))}
    if pieces.get("Annotations"):
        metadata["annotations"] = dict(pieces["Annotations"])
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    if provider:
        node["spec"] = {"providerID": provider}
    status = {key.lower(): dict(pieces[key]) for key in ("Capacity", "Allocatable") if pieces.get(key)}
    if status:
        node["status"] = status
    return node


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _node_from_mapping(item: Mapping[str, Any], fallback_name: str) -> dict[str, Any]:
    """A Node object, or a piece of one without ``kind`` (``metadata``, ``spec``, ``status``),
    or one pasted with its metadata fields at the top and its keys capitalised (``"Status"``)."""
    item = {str(key).lower(): value for key, value in item.items()}
    meta = item.get("metadata") if isinstance(item.get("metadata"), Mapping) else {}
    if not meta and ("labels" in item or "name" in item):
        meta = item
    status = item.get("status") if isinstance(item.get("status"), Mapping) else {}
    spec = item.get("spec") if isinstance(item.get("spec"), Mapping) else {}
    hostnames = [
        str(address.get("address"))
        for address in status.get("addresses") or []
        if isinstance(address, Mapping) and address.get("type") == "Hostname"
    ]
    name = str(meta.get("name") or (hostnames[0] if hostnames else fallback_name))
    pieces = {
        "Labels": _strings(meta.get("labels")),
        "Annotations": _strings(meta.get("annotations")),
        "Capacity": _strings(status.get("capacity")),
        "Allocatable": _strings(status.get("allocatable")),
    }
    return _node(name, pieces, str(spec.get("providerID") or ""))


def _nodes_from_yaml(text: str, fallback_name: str) -> list[dict[str, Any]]:
    """The Nodes of a ``kubectl get nodes -o yaml`` dump or of a piece of one: a Node's
    ``metadata``/``spec``/``status`` without its ``kind``, a bare resource list (what
    ``.status.capacity`` prints: ``cpu``, ``memory`` and ``pods`` among its keys) or a bare
    ``labels:`` mapping (one unnamed node)."""
    doc = yaml.safe_load(text)
    if not isinstance(doc, Mapping):
        return []
    if "kind" not in doc and "items" not in doc:
        if {"metadata", "spec", "status"} & set(doc):
            return [_node_from_mapping(doc, fallback_name)]
        if {"allocatable", "capacity"} & set(doc):
            # a piece of ``status`` cut above its own key (``grep -A`` from ``allocatable:``)
            return [_node_from_mapping({"status": doc}, fallback_name)]
        if {"cpu", "memory", "pods"} <= set(doc):
            return [_node(fallback_name, {"Capacity": _strings(doc)}, "")]
        return [_node(fallback_name, {"Labels": _strings(doc)}, "")]
    items = doc.get("items", [doc])
    return [_node_from_mapping(item, fallback_name) for item in items if isinstance(item, Mapping) and item.get("kind") == "Node"]


def _nodes_from_show_labels(lines: list[str]) -> list[dict[str, Any]]:
    """Rows of ``kubectl get nodes --show-labels``: the name first, the labels last."""
    out = []
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or fields[0] in ("NAME", "$"):
            continue
        labels = dict(pair.partition("=")[::2] for pair in fields[-1].split(",") if pair)
        out.append(_node(fields[0], {"Labels": labels}, ""))
    return out


_QUANTITY = re.compile(r"^[0-9][0-9.]*[A-Za-z]*$")


def _headless_resource(line: str) -> tuple[str, str] | None:
    """A resource row a grep or a cut left without its ``Capacity:``/``Allocatable:`` heading
    (``  nvidia.com/gpu:     1``): a resource name (a core one, or one with a domain) and a
    quantity, else None."""
    pair = _PAIR_LINE.match(line.strip())
    if pair is None or pair.group(2) != ":" or not line[:1].isspace():
        return None
    key, value = pair.group(1), pair.group(3).split()[:1]
    core = key in ("cpu", "memory", "pods", "ephemeral-storage") or key.startswith("hugepages-")
    if not (core or "/" in key) or not value or _QUANTITY.match(value[0]) is None:
        return None
    return key, value[0]


def _nodes_from_describe(lines: list[str], fallback_name: str) -> list[dict[str, Any]]:
    """One ``kubectl describe node`` (or a fragment of it): the Name and ProviderID fields and
    the Labels, Annotations, Capacity and Allocatable blocks. An annotation whose value kubectl
    put on the lines below its key (indented deeper than the keys) gets those lines. A quantity
    or a label value is its first word (kubectl prints none with a space; a reporter's mark or
    comment after it is not part of it). Resource rows outside any block (a grep or a cut removed
    the heading) fill Capacity, then Allocatable when Capacity already has the resource, and
    ``key=value`` lines right under Name or Roles are labels whose heading a grep removed."""
    name, provider, section = fallback_name, "", "Labels"
    pieces: dict[str, dict[str, str]] = {key: {} for key in _DESCRIBE_MAPS}
    key_indent, last_key, headed = -1, "", False
    for line in lines:
        if section in ("Labels", "Annotations") and not headed or section not in _DESCRIBE_MAPS:
            resource = _headless_resource(line)
            if resource is not None:
                block = "Allocatable" if resource[0] in pieces["Capacity"] else "Capacity"
                pieces[block][resource[0]] = resource[1]
                continue
        head = _SECTION.match(line)
        if head is not None:
            section, value, headed = head.group(1), head.group(3).strip(), True
            name = value if section == "Name" else name
            provider = value if section == "ProviderID" else provider
            # a heading with nothing after it: the first key line below sets the keys' indent
            key_indent, last_key = (len(section) + 1 + len(head.group(2)) if value else -1), ""
            if section not in _DESCRIBE_MAPS or not value:
                continue
            line = " " * key_indent + value
        if section in ("Name", "Roles") and line[:1].isspace() and "=" in line:
            # label lines right under Name or Roles: a grep dropped the Labels heading between
            section, key_indent, last_key = "Labels", -1, ""
        if section not in _DESCRIBE_MAPS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        pair = _PAIR_LINE.match(line.strip())
        if key_indent < 0:
            if pair is None:
                continue
            key_indent = indent
        if indent <= key_indent and pair is not None and pair.group(2) == _DESCRIBE_MAPS[section]:
            last_key = pair.group(1)
            value = pair.group(3).strip()
            # a quantity or a label value is one word (kubectl prints none with a space)
            pieces[section][last_key] = value.split()[0] if section != "Annotations" and value else value
        elif indent > key_indent and last_key:
            pieces[section][last_key] += line.strip()
    return [_node(name, pieces, provider)]


def _label_map_lines(lines: list[str]) -> dict[str, str] | None:
    """The pairs of a JSON label map printed without its braces, or cut so that one of them is
    missing (``"key": "value",`` lines, as ``jq ... | grep`` leaves them; a document's ``...``
    elision and a lone brace are skipped), else None."""
    pairs = [line.strip().rstrip(",") for line in lines if line.strip() not in ("", "{", "}", "...")]
    if not pairs or not all(pair.startswith('"') and '": "' in pair and pair.endswith('"') for pair in pairs):
        return None
    loaded = json.loads("{" + ",".join(pairs) + "}")
    return {str(key): str(value) for key, value in loaded.items()}


def _json_piece(text: str) -> dict[str, Any] | None:
    """A JSON object pasted whole or cut: one that opens with ``{``, or its members without the
    brace (``"status": {...},``), cut anywhere after a member: a trailing comma is dropped and
    the braces and brackets left open are closed (a member cut right after its opening brace,
    ``"Status": {``, becomes an empty one)."""
    body = text.strip().rstrip(",")
    if body[:1] == '"':
        body = "{" + body
    if body[:1] != "{":
        return None
    closers = []
    for char in body:  # the pieces hold no brace or bracket inside a string
        if char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
    try:
        loaded = json.loads(body + "".join(reversed(closers)))
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _nodes_from_text(text: str, file: str) -> list[dict[str, Any]]:
    if file.endswith(".yaml"):
        return _nodes_from_yaml(text, Path(file).stem)
    lines = text.splitlines()
    if any(line.split()[:1] == ["NAME"] and "LABELS" in line for line in lines):
        return _nodes_from_show_labels(lines)
    labels = _label_map_lines(lines)
    if labels is not None:
        return [_node(Path(file).stem, {"Labels": labels}, "")]
    piece = _json_piece(text)
    if piece is not None:
        return [_node_from_mapping(piece, Path(file).stem)]
    # several describes in one piece: one Node from each, from its Name line on
    starts = [i for i, line in enumerate(lines) if line.startswith("Name:") and line.split()[1:]]
    if len(starts) > 1:
        bounds = [*starts[1:], len(lines)]
        return [node for start, end in zip(starts, bounds, strict=True) for node in _nodes_from_describe(lines[start:end], Path(file).stem)]
    return _nodes_from_describe(lines, Path(file).stem)


def _nodes_reading(text: str, file: str) -> list[dict[str, Any]]:
    facts = facts_from_objects(nodes=_nodes_from_text(text, file), source=file)
    products = node_products(facts, facts.nodes)
    counts = node_gpu_counts(facts, facts.nodes)
    return [
        {
            "name": name_of(node),
            "arch": products[name_of(node)].arch or None,
            "gpus": counts[name_of(node)].count,
            "platform": node_platform(node),
        }
        for node in sorted(facts.nodes, key=name_of)
    ]


# ------------------------------------------------------------------ the tests


def _param(entry: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=str(entry["pending"]))] if entry.get("pending") else []
    return pytest.param(entry, id=entry["file"], marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_real_artefact_reads_as_expected(entry: dict[str, Any]) -> None:
    text, expect = _text(entry), entry["expect"]
    if entry["kind"] == "nccl":
        _check_nccl(_nccl_reading(text), expect)
    elif entry["kind"] == "dcgm":
        _check_dcgm(text, expect)
    elif entry["kind"] == "training":
        _check_training(_training_reading(text), expect)
    else:
        assert _nodes_reading(text, entry["file"]) == sorted(expect["nodes"], key=lambda n: n["name"])


def test_manifest_lists_every_artefact_once_with_a_public_source() -> None:
    listed = [e["file"] for e in ENTRIES]
    on_disk = sorted(str(p.relative_to(REAL)) for kind in KINDS for p in (REAL / kind).iterdir())
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)
    for entry in ENTRIES:
        assert entry["kind"] in KINDS and entry["file"].startswith(entry["kind"] + "/"), entry["file"]
        assert str(entry["source"]).startswith("https://"), entry["file"]
        assert isinstance(entry["expect"], Mapping) and entry["expect"], entry["file"]
        assert "pending" not in entry or str(entry["pending"]).strip(), entry["file"]


def test_manifest_gives_no_key_twice_in_an_entry() -> None:
    # a YAML mapping that repeats a key keeps only the last value, so a second ``note`` would
    # silently replace the first: the manifest is loaded once more by a loader that refuses that
    from ruamel.yaml import YAML

    YAML(typ="safe", pure=True).load((REAL / "manifest.yaml").read_text(encoding="utf-8"))


def test_corpus_covers_every_kind() -> None:
    counts = {kind: sum(1 for e in ENTRIES if e["kind"] == kind) for kind in KINDS}
    assert sum(counts.values()) >= 40
    assert all(count >= 5 for count in counts.values()), counts
