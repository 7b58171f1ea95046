"""A mutation fuzzer over every golden input: whatever the mutation, validate and render either
succeed or raise ``CompileError`` (exit 2 on the CLI), never anything else.

Each example takes one golden input (a Certification, a WorkloadRun or a facts file) and applies
one to four mutations at random places: delete a key or item, change a value's type, duplicate
a list item, put in a huge or non-finite number, a YAML-only value (date, bytes, set), a long
string, or nest the value hundreds of levels deep. The normal suite runs a few dozen examples;
``benchmarks/fuzz_bench.py`` runs ten thousand and reports time and memory.
"""

from __future__ import annotations

import copy
import datetime
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden"


@dataclass(frozen=True)
class Case:
    """One golden input: ``target`` says which of ``document`` and ``facts`` the fuzzer mutates."""

    name: str
    document: dict[str, Any]
    flags: dict[str, Any] = field(default_factory=dict)
    facts: list[Any] | None = None
    target: str = "document"


def corpus() -> list[Case]:
    """Every Certification and WorkloadRun input under golden/ and examples/, and every facts file."""
    from nvcre.compiler.yamlio import load_documents, load_file

    cases: list[Case] = []
    folders = sorted(p for suite in ("render", "workloadrun", "validate") for p in (GOLDEN / suite).glob("*") if p.is_dir())
    for folder in folders:
        for name in ("certification.yaml", "workloadrun.yaml"):
            path = folder / name
            if not path.exists():
                continue
            (doc,) = load_file(path)
            flags_file = folder / "flags.yaml"
            flags = load_file(flags_file)[0] if flags_file.exists() else {}
            facts_file = folder / "facts.yaml"
            facts = load_documents(facts_file.read_text(encoding="utf-8"), str(facts_file), version=None) if facts_file.exists() else None
            label = f"{folder.parent.name}/{folder.name}"
            cases.append(Case(label, doc, flags, facts))
            if facts is not None:
                cases.append(Case(label + ":facts", doc, flags, facts, target="facts"))
    for path in sorted((REPO / "examples").glob("*.yaml")):
        (doc,) = load_file(path)
        cases.append(Case(f"examples/{path.name}", doc, {"platform": "onprem", "gpuArch": "h100"}))
    return cases


# --------------------------------------------------------------------------- mutations

Path_ = tuple[Any, ...]


def paths(value: Any, prefix: Path_ = (), limit: int = 4000) -> list[Path_]:
    """Every place in ``value`` (the root included), breadth first, at most ``limit``."""
    out: list[Path_] = [prefix]
    queue = [(value, prefix)]
    while queue and len(out) < limit:
        node, where = queue.pop(0)
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
        for key, child in children:
            out.append(where + (key,))
            queue.append((child, where + (key,)))
    return out


def _get(root: Any, where: Path_) -> Any:
    for key in where:
        root = root[key]
    return root


def _set(root: Any, where: Path_, value: Any) -> Any:
    if not where:
        return value
    _get(root, where[:-1])[where[-1]] = value
    return root


HUGE_NUMBERS = [2**63, -(2**63) - 1, 2**64 + 1, 10**30, 10**400, 1e308, float("inf"), float("-inf"), float("nan"), -1, 0]
STRANGE_STRINGS = ["1e999999999", "9" * 5000, "", "\n", "a\nb", "-oProxyCommand=x", "https://", "ssh://", "x" * 70_000, "0x10", "yes"]
YAML_ONLY = [datetime.date(2026, 1, 1), datetime.datetime(2026, 1, 1, 12, 0), b"bytes", {"a", "b"}, ("pair", 1)]

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(HUGE_NUMBERS + STRANGE_STRINGS),
)
values = st.recursive(
    json_leaves | st.sampled_from(YAML_ONLY),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _nest(value: Any, depth: int, as_map: bool) -> Any:
    for _ in range(depth):
        value = {"n": value} if as_map else [value]
    return value


@st.composite
def mutated(draw: Callable[..., Any], cases: list[Case]) -> tuple[Case, Any]:
    case = draw(st.sampled_from(cases))
    subject: Any = copy.deepcopy(case.facts if case.target == "facts" else case.document)
    deep: list[tuple[Path_, int, bool]] = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3, 4]))):
        where = draw(st.sampled_from(paths(subject)))
        op = draw(
            st.sampled_from(
                ["delete", "retype", "duplicate", "huge", "yaml", "string", "deep", "unknown", "small", "small", "small", "small"]
            )
        )
        here = _get(subject, where)
        if op == "delete" and where:
            parent = _get(subject, where[:-1])
            del parent[where[-1]]
        elif op == "duplicate" and isinstance(here, list) and here:
            here.append(copy.deepcopy(here[draw(st.integers(min_value=0, max_value=len(here) - 1))]))
        elif op == "duplicate" and isinstance(here, list):
            here.append(here)  # a list that holds itself: an alias cycle
        elif op == "huge":
            subject = _set(subject, where, draw(st.sampled_from(HUGE_NUMBERS)))
        elif op == "yaml":
            subject = _set(subject, where, draw(st.sampled_from(YAML_ONLY)))
        elif op == "string":
            subject = _set(subject, where, draw(st.sampled_from(STRANGE_STRINGS)))
        elif op == "unknown" and isinstance(here, dict):
            here[draw(st.text(min_size=1, max_size=12))] = draw(values)
        elif op == "small" and isinstance(here, bool):
            subject = _set(subject, where, not here)
        elif op == "small" and isinstance(here, int):
            subject = _set(subject, where, draw(st.integers(min_value=-1, max_value=70)))
        elif op == "small" and isinstance(here, list):
            here.reverse()
        elif op == "small" and isinstance(here, str):
            subject = _set(subject, where, draw(st.sampled_from([here.upper(), here[:1], here + "-x", "h100", "gb300", "8", "1h"])))
        elif op == "deep":
            deep.append((where, draw(st.sampled_from([10, 63, 65, 200, 900, 1500, 5000])), draw(st.booleans())))
        else:
            subject = _set(subject, where, draw(values))
    for where, depth, as_map in deep:  # last: nothing copies the deep value afterwards
        try:
            subject = _set(subject, where, _nest(_get(subject, where), depth, as_map))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed the place
    return case, subject


# --------------------------------------------------------------------------- running one example


@dataclass
class Result:
    outcome: str  # "ok", "invalid" (CompileError) or "crash"
    seconds: float
    detail: str = ""


def run_example(case: Case, subject: Any) -> Result:
    """Validate and render one mutated input the way the CLI does; classify what happened."""
    from nvcre.compiler.api.validate import validate
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.emit import dump_json, dump_yaml_stream
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.compiler.render import render_certification
    from nvcre.compiler.workloadrun import render_workloadrun

    start = time.perf_counter()
    document = subject if case.target == "document" else case.document
    try:
        facts = None
        if case.target == "facts" or case.facts is not None:
            facts_docs = subject if case.target == "facts" else case.facts
            facts = facts_from_documents(facts_docs if isinstance(facts_docs, list) else [facts_docs], source="facts.yaml")
        if case.target == "facts":
            from nvcre.runtime.ops.cluster_info import cluster_info, render_text

            summary, _ = cluster_info(facts)
            if summary is not None:
                render_text(summary)
                dump_json(summary)
        else:
            validate(document)
        renderer = render_workloadrun if isinstance(document, dict) and document.get("kind") == "WorkloadRun" else render_certification
        rendered = renderer(document, facts=facts, platform=case.flags.get("platform"), gpu_arch=case.flags.get("gpuArch"))
        dump_yaml_stream(rendered.workflows)
        dump_json(rendered.workflows)
        outcome, detail = "ok", ""
    except CompileError as exc:
        for diag in exc.diagnostics:
            line = diag.render()
            if "\n" in line:
                return Result("crash", time.perf_counter() - start, f"diagnostic spans lines: {line[:200]!r}")
        outcome, detail = "invalid", ""
    except Exception as exc:  # noqa: BLE001 - the point: anything but CompileError is a crash (exit 1)
        outcome, detail = "crash", f"{type(exc).__name__}: {str(exc)[:300]}"
    return Result(outcome, time.perf_counter() - start, detail)


# --------------------------------------------------------------------------- the suite's share

CASES = corpus()


def test_the_corpus_covers_every_golden_input() -> None:
    kinds = {case.document.get("kind") for case in CASES}
    assert kinds == {"Certification", "WorkloadRun"}
    assert any(case.target == "facts" for case in CASES)
    assert len(CASES) > 100


def test_an_unmutated_golden_input_runs_clean() -> None:
    example = next(case for case in CASES if case.name == "examples/certification.yaml")
    assert run_example(example, copy.deepcopy(example.document)).outcome == "ok"


def test_a_crash_is_reported_as_a_crash() -> None:
    example = next(case for case in CASES if case.name == "examples/certification.yaml")
    broken = Case(example.name, example.document, {"platform": object()})  # not a string: the renderer fails
    assert run_example(broken, copy.deepcopy(example.document)).outcome == "crash"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(mutated(CASES))
def test_mutated_golden_inputs_never_crash(example: tuple[Case, Any]) -> None:
    case, subject = example
    result = run_example(case, subject)
    assert result.outcome != "crash", f"{case.name}: {result.detail}"
