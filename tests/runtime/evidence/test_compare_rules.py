"""``evidence compare`` cannot hide a regression: the tolerance is built from the OLD side only, per subject.

The bundles here are written directly (one Job per node and iteration on ``nccl-loopback``), so
every history the rules must handle can be stated in a line: a node collapsing in some
iterations, an unrelated flaky node, an OLD side with two populations. The property tests
generate histories and check the two promises: an injected drop is always reported, and a
history compared with itself never is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.runtime.evidence.compare import NOISE_CAP, compare, side_of
from tests.evidencekit import history_identity as identity
from tests.evidencekit import history_predicate as predicate
from tests.evidencekit import write_history

NVCRECTL = Path(sys.executable).with_name("nvcrectl")
BASE = 0.05
History = Mapping[str, Sequence[float]]


def regressed(old: Sequence[History], new: Sequence[History], tolerance: float = BASE) -> tuple[str, ...]:
    """The nodes ``compare`` names, for sides held in memory (one history per bundle)."""

    def side(histories: Sequence[History]) -> Any:
        names = tuple(f"b{i}" for i in range(len(histories)))
        nodes = sorted({n for h in histories for n in h})
        return side_of(names, tuple(predicate(n, h) for n, h in zip(names, histories)), tuple(identity(nodes) for _ in histories))

    return compare(side(old), side(new), tolerance=tolerance).regressed_nodes


FLAT = {f"n{i}": [100.0] for i in range(8)}


# ------------------------------------------------------------------ the reported cases, through the command


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(FLAT, {**FLAT, "n3": [50.0]}, ["n3"], id="control: n3 100 -> 50"),
        pytest.param(FLAT, {**FLAT, "n3": [100.0, 10.0]}, ["n3"], id="n3 collapses in its second iteration"),
        pytest.param(FLAT, {**FLAT, "n3": [100.0, 1.0, 1.0]}, ["n3"], id="n3 at 1 GB/s in 2 of 3 iterations"),
        pytest.param(FLAT, {**FLAT, "n7": [100.0, 20.0], "n3": [60.0]}, ["n3", "n7"], id="a flaky n7 does not hide n3"),
        pytest.param(
            {n: [50.0 if i % 2 else 100.0] for i, n in enumerate(FLAT)},
            {**{n: [50.0 if i % 2 else 100.0] for i, n in enumerate(FLAT)}, "n3": [0.6]},
            ["n3"],
            id="two OLD populations: n3 50 -> 0.6",
        ),
    ],
)
def test_the_command_reports_each_hidden_regression(tmp_path: Path, old: History, new: History, expected: list[str]) -> None:
    before, after = str(write_history(tmp_path, "old", old)), str(write_history(tmp_path, "new", new))
    done = subprocess.run([str(NVCRECTL), "evidence", "compare", before, after, "-o", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["regressedNodes"] == expected
    rows = {r["subject"]: r for r in result["nodes"]}
    assert all(rows[n]["tolerance"] == pytest.approx(BASE) for n in expected), "a regression never widens its own bar"
    assert done.stderr == f"error: {len(expected)} node(s) regressed: {', '.join(expected)}\n"


def test_the_command_passes_the_same_history(tmp_path: Path) -> None:
    history = {**FLAT, "n7": [100.0, 20.0]}
    side = str(write_history(tmp_path, "same", history))
    done = subprocess.run([str(NVCRECTL), "evidence", "compare", side, side], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert "No node regressed." in done.stdout


# ------------------------------------------------------------------ the rules, in memory


def test_new_spread_never_widens_a_tolerance() -> None:
    calm = compare(
        side_of(("o",), (predicate("o", FLAT),), (identity(sorted(FLAT)),)),
        side_of(("n",), (predicate("n", {**FLAT, "n7": [100.0, 1.0]}),), (identity(sorted(FLAT)),)),
    )
    assert {r.tolerance for r in calm.nodes} == {BASE}


def test_a_bimodal_old_node_widens_its_bar_by_at_most_the_cap() -> None:
    old = {**FLAT, "n3": [50.0, 100.0, 50.0, 100.0]}
    assert regressed([old], [{**FLAT, "n3": [75.0 * (1 - BASE - 2 * NOISE_CAP) * 0.99] * 4}]) == ("n3",)
    assert regressed([old], [{**FLAT, "n3": [75.0, 75.0]}]) == ()
    assert regressed([old], [old]) == ()


def test_repeat_bundles_of_the_old_side_are_one_history() -> None:
    a, b = {**FLAT, "n1": [100.0]}, {**FLAT, "n1": [90.0]}
    assert regressed([a, b], [{**FLAT, "n1": [86.0]}]) == ()  # above 90 x 0.95
    assert regressed([a, b], [{**FLAT, "n1": [85.0]}]) == ("n1",)


# ------------------------------------------------------------------ properties over generated histories

#: a node's repeat noise in a generated history (each value within +-NOISE of its level)
NOISE = 0.02
#: the injected drop that must always be reported: beyond the base tolerance and both sides' noise
INJECTED = 1 - (1 - BASE) * (1 - NOISE) / (1 + NOISE) + 0.005


@st.composite
def histories(draw: st.DrawFn) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """An OLD history and a NEW one drawn from the same levels: steady nodes (within +-NOISE of their
    level, levels from two populations) and flaky ones (anything from 1 % to 100 % of their level)."""
    count = draw(st.integers(1, 6))
    old: dict[str, list[float]] = {}
    new: dict[str, list[float]] = {}
    for index in range(count):
        level = draw(st.sampled_from([50.0, 100.0, 400.0])) * draw(st.floats(0.5, 2.0))
        flaky = draw(st.booleans()) and index > 0
        low, high = (0.01, 1.0) if flaky else (1 - NOISE, 1 + NOISE)
        for side in (old, new):
            iterations = draw(st.integers(1, 3))
            side[f"n{index}"] = [level * draw(st.floats(low, high)) for _ in range(iterations)]
    return old, new


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_an_injected_drop_on_any_node_in_any_iteration_is_always_reported(
    pair: tuple[dict[str, list[float]], dict[str, list[float]]], data: st.DataObject
) -> None:
    old, new = pair
    target = "n0"  # always a steady node; every other node may be flaky
    iteration = data.draw(st.integers(0, len(new[target]) - 1))
    drop = data.draw(st.floats(INJECTED, 0.999))
    new = {node: list(values) for node, values in new.items()}
    new[target][iteration] *= 1 - drop
    assert target in regressed([old], [new])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_a_whole_side_drop_beyond_the_capped_bar_is_reported_whatever_the_old_side(
    pair: tuple[dict[str, list[float]], dict[str, list[float]]], data: st.DataObject
) -> None:
    old, _ = pair
    target = data.draw(st.sampled_from(sorted(old)))
    drop = data.draw(st.floats(BASE + 2 * NOISE_CAP + 0.001, 0.999))
    new = {node: list(values) for node, values in old.items()}
    new[target] = [v * (1 - drop) for v in old[target]]
    assert target in regressed([old], [new])


@settings(max_examples=80, deadline=None)
@given(histories())
def test_a_history_compared_with_itself_is_never_reported(pair: tuple[dict[str, list[float]], dict[str, list[float]]]) -> None:
    old, new = pair
    assert regressed([old], [old]) == ()
    assert regressed([old, new], [old, new]) == ()


@settings(max_examples=80, deadline=None)
@given(histories())
def test_a_steady_rerun_within_the_base_tolerance_is_never_reported(pair: tuple[dict[str, list[float]], dict[str, list[float]]]) -> None:
    old, new = pair
    steady = [n for n in old if max(old[n] + new[n]) / min(old[n] + new[n]) < 1 / (1 - BASE)]
    assert not set(regressed([old], [new])) & set(steady)
