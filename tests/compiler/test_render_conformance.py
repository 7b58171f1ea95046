"""Render conformance against NVCRE's own envtest goldens.

Each case under ``tests/fixtures/nvcre_render/<case>/`` holds ``case.yaml`` (the render inputs:
the Certification, platform, GPU architecture and the node facts the render reads, plus the NVCRE
file and commit the case was taken from) and ``expected_leaves.json`` (NVCRE's expected Workflow
as a flat map of leaf path -> value). The test renders each case offline, flattens our Workflow
the same way and counts how many of NVCRE's leaves it reproduces.

Flattening (see docs/fidelity.md): list items that carry a ``name`` are keyed by it
(``containers[name=node]``), Workflow dependencies by ``kind/name``, and an argument list's
``-x NAME=VALUE`` pairs become one leaf per name (``args{-x NAME}``), so the forwarded
environment compares as a set; the remaining arguments keep their order.

A leaf that differs is excluded from the count only when a row of the "Allowed differences"
table in docs/fidelity.md covers it (case pattern + leaf-path pattern); every row must still
cover at least one leaf, so a fixed difference cannot linger in the table.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.yamlio import load_file

REPO = Path(__file__).resolve().parents[2]
CASES_DIR = REPO / "tests" / "fixtures" / "nvcre_render"
FIDELITY = REPO / "docs" / "fidelity.md"

# Coverage floors: matched / (NVCRE leaves - allowed differences).
TOTAL_FLOOR = 0.95
CASE_FLOOR = 0.90
MIN_CASES = 20

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return f".{key}" if _PLAIN_KEY.match(key) else f'["{key}"]'


def _is_object_list(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and "kind" in i and isinstance(i.get("metadata"), dict) for i in items)


def _is_named_list(items: list[Any]) -> bool:
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return bool(items) and len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Leaf path -> value, with the keying rules of the module docstring."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value:
            out[path] = {}
        for k, v in value.items():
            out.update(flatten(v, path + _key(str(k))))
    elif isinstance(value, list):
        if not value:
            out[path] = []
        elif _is_object_list(value):
            for item in value:
                out.update(flatten(item, f"{path}[{item['kind']}/{item['metadata'].get('name')}]"))
        elif _is_named_list(value):
            for item in value:
                out.update(flatten(item, f"{path}[name={item['name']}]"))
        elif all(isinstance(i, str) for i in value) and "-x" in value:
            rest: list[str] = []
            i = 0
            while i < len(value):
                if value[i] == "-x" and i + 1 < len(value):
                    name, sep, val = value[i + 1].partition("=")
                    out[f"{path}{{-x {name}}}"] = val if sep else None
                    i += 2
                else:
                    rest.append(value[i])
                    i += 1
            for n, item in enumerate(rest):
                out[f"{path}[{n}]"] = item
        else:
            for n, item in enumerate(value):
                out.update(flatten(item, f"{path}[{n}]"))
    else:
        out[path] = value
    return out


def workflow_leaves(workflow: dict[str, Any]) -> dict[str, Any]:
    """The compared part of a Workflow: its name, its labels and its spec."""
    meta = workflow.get("metadata") or {}
    part = {"metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {}}, "spec": workflow.get("spec") or {}}
    return flatten(part)


def case_leaves(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    """Every Workflow of a render, each under ``<domain>/<variant>``."""
    out: dict[str, Any] = {}
    for wf in rendered:
        labels = (wf.get("metadata") or {}).get("labels") or {}
        category = f"{labels.get('nvcre.nvidia.com/category-domain')}/{labels.get('nvcre.nvidia.com/category-variant')}"
        for path, value in workflow_leaves(wf).items():
            out[f"{category}:{path.lstrip('.')}"] = value
    return out


def _glob(pattern: str) -> re.Pattern[str]:
    """``*`` matches any text; every other character stands for itself (paths hold ``[`` and ``]``)."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")) + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class Allowed:
    ident: str
    cases: tuple[str, ...]
    paths: tuple[str, ...]

    def covers(self, case: str, leaf: str) -> bool:
        return any(_glob(c).match(case) for c in self.cases) and any(_glob(p).match(leaf) for p in self.paths)


_CODE = re.compile(r"`([^`]+)`")


def allowed_differences() -> list[Allowed]:
    """Rows of the table between the ``allowed-differences`` markers in docs/fidelity.md.

    Columns: id, cases (backticked globs), leaf paths (backticked globs), then prose.
    """
    text = FIDELITY.read_text(encoding="utf-8")
    block = text.split("<!-- allowed-differences:start -->", 1)[1].split("<!-- allowed-differences:end -->", 1)[0]
    rows = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) < 4 or not re.fullmatch(r"D\d+", cells[0]):
            continue
        cases, paths = tuple(_CODE.findall(cells[1])), tuple(_CODE.findall(cells[2]))
        assert cases and paths, f"docs/fidelity.md row {cells[0]} needs backticked case and path patterns"
        rows.append(Allowed(cells[0], cases, paths))
    return rows


def case_dirs() -> list[Path]:
    return sorted(p for p in CASES_DIR.iterdir() if (p / "case.yaml").exists())


def render_case(case_dir: Path) -> dict[str, Any]:
    from nvcre.compiler.render import render_certification

    spec = load_file(case_dir / "case.yaml")[0]
    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": spec["certification"]["name"], "namespace": "default"},
        "spec": spec["certification"]["spec"],
    }
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n["name"], "labels": n.get("labels") or {}},
            "spec": {"providerID": n["providerID"]} if n.get("providerID") else {},
            **({"status": {"allocatable": n["allocatable"]}} if n.get("allocatable") else {}),
        }
        for n in spec.get("nodes") or []
    ]
    facts = facts_from_documents(nodes, source=str(case_dir / "case.yaml")) if nodes else None
    rendered = render_certification(cert, facts=facts, platform=spec.get("platform"), gpu_arch=spec.get("gpuArch"))
    return case_leaves(list(rendered.workflows))


@dataclass
class Outcome:
    case: str
    total: int
    matched: int
    excluded: dict[str, str]
    unmatched: dict[str, tuple[Any, Any]]

    @property
    def counted(self) -> int:
        return self.total - len(self.excluded)

    @property
    def coverage(self) -> float:
        return self.matched / self.counted if self.counted else 1.0


_MISSING = "<absent>"


_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")


def _scalar_lists(leaves: dict[str, Any]) -> dict[str, list[Any]]:
    """Lists of scalars (leaf paths ending in ``[n]``), by list path, in order."""
    found: dict[str, dict[int, Any]] = {}
    for leaf, value in leaves.items():
        m = _INDEXED.match(leaf)
        if m:
            found.setdefault(m.group(1), {})[int(m.group(2))] = value
    return {path: [items[i] for i in sorted(items)] for path, items in found.items()}


def _aligned(expected: dict[str, Any], ours: dict[str, Any]) -> set[str]:
    """Expected list items that line up with ours (so an item ours inserts does not shift the rest)."""
    hits: set[str] = set()
    theirs_lists, our_lists = _scalar_lists(expected), _scalar_lists(ours)
    for path, items in theirs_lists.items():
        matcher = SequenceMatcher(None, [json.dumps(i) for i in items], [json.dumps(i) for i in our_lists.get(path, [])], autojunk=False)
        for block in matcher.get_matching_blocks():
            hits.update(f"{path}[{i}]" for i in range(block.a, block.a + block.size))
    return hits


def compare(case: str, expected: dict[str, Any], ours: dict[str, Any], table: list[Allowed]) -> Outcome:
    matched, excluded, unmatched = 0, {}, {}
    aligned = _aligned(expected, ours)
    for leaf, value in expected.items():
        got = ours.get(leaf, _MISSING)
        if leaf in aligned or (got == value and got is not _MISSING and not _INDEXED.match(leaf)):
            matched += 1
            continue
        rule = next((row for row in table if row.covers(case, leaf)), None)
        if rule is not None:
            excluded[leaf] = rule.ident
        else:
            unmatched[leaf] = (got, value)
    return Outcome(case, len(expected), matched, excluded, unmatched)


def _outcomes() -> list[Outcome]:
    table = allowed_differences()
    results = []
    for case_dir in case_dirs():
        expected = json.loads((case_dir / "expected_leaves.json").read_text(encoding="utf-8"))
        results.append(compare(case_dir.name, expected, render_case(case_dir), table))
    return results


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return _outcomes()


def _report(results: list[Outcome]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r.case}: {r.matched}/{r.counted} ({r.coverage:.1%}), {len(r.excluded)} allowed differences")
        for leaf, (got, want) in sorted(r.unmatched.items()):
            lines.append(f"  {leaf}\n    ours:  {got!r}\n    NVCRE: {want!r}")
    return "\n".join(lines)


def test_enough_cases() -> None:
    assert len(case_dirs()) >= MIN_CASES


def test_every_case_names_its_source() -> None:
    for case_dir in case_dirs():
        source = load_file(case_dir / "case.yaml")[0]["nvcre"]
        assert source["repository"] == "NVIDIA/cluster-readiness-engine", case_dir.name
        assert source["file"].startswith("cmd/integration/testdata/reconcile/certification-"), case_dir.name
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), case_dir.name


def test_total_coverage(outcomes: list[Outcome]) -> None:
    matched = sum(r.matched for r in outcomes)
    counted = sum(r.counted for r in outcomes)
    coverage = matched / counted
    assert coverage >= TOTAL_FLOOR, f"coverage {matched}/{counted} = {coverage:.2%} < {TOTAL_FLOOR:.0%}\n" + _report(outcomes)


def test_per_case_floor(outcomes: list[Outcome]) -> None:
    low = [r for r in outcomes if r.coverage < CASE_FLOOR]
    assert not low, f"cases under {CASE_FLOOR:.0%}:\n" + _report(low)


def test_every_allowed_difference_is_used(outcomes: list[Outcome]) -> None:
    used = {ident for r in outcomes for ident in r.excluded.values()}
    stale = [row.ident for row in allowed_differences() if row.ident not in used]
    assert not stale, f"allowed differences that no longer cover any leaf (remove them from docs/fidelity.md): {stale}"


def test_flatten_keys_mpirun_env_as_a_set() -> None:
    a = flatten({"args": ["-N", "8", "-x", "A=1", "-x", "B", "bin", "-n", "5"]})
    b = flatten({"args": ["-N", "8", "-x", "B", "-x", "A=1", "bin", "-n", "5"]})
    assert a == b
    assert a[".args{-x A}"] == "1" and a[".args{-x B}"] is None and a[".args[2]"] == "bin"


if __name__ == "__main__":  # print the coverage table: python tests/compiler/test_render_conformance.py
    results = _outcomes()
    print(_report(results))
    m, c = sum(r.matched for r in results), sum(r.counted for r in results)
    print(f"total: {m}/{c} = {m / c:.2%} over {len(results)} cases")
