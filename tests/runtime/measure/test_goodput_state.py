"""Goodput read in pieces equals goodput read whole, however the log is cut.

The logs are the recorded training cases of ``golden/measure`` (one is NVCRE's own test data),
the real training outputs of ``golden/measure/real/training``, simulated Megatron runs with checkpoints, and a run whose asynchronous saves stay open across
many steps and many pieces; chatter lines no pattern can match are mixed in. Each log is cut at
random line boundaries into pieces, and parsed in batches of random size, and the running sums
must give exactly what one parse of the whole log gives to :func:`calculate_goodput`.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure import goodput_state, training
from nvcre.runtime.measure.cursor import LogCursor
from nvcre.runtime.measure.goodput_state import GoodputTail, RunningGoodput, fold
from nvcre.runtime.measure.profile import PatternError
from nvcre.testing import simlogs

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "golden" / "measure"
NOW = datetime(2026, 3, 1, 13, 0, tzinfo=UTC)


def _builtin(name: str) -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == name)


def _golden(case: str) -> tuple[str, dict[str, Any]]:
    folder = GOLDEN / case
    meta = YAML(typ="safe").load((folder / "case.yaml").read_text())
    ref = str(meta["profile"])
    profile = _builtin(ref.split(":", 1)[1]) if ref.startswith("builtin:") else YAML(typ="safe").load((folder / ref).read_text())
    return (folder / "input.log").read_text(), profile


def _stamped(start: datetime, lines: list[simlogs.LogLine]) -> str:
    return "".join(simlogs.cri_line(start + timedelta(seconds=line.offset), line).replace(" stdout F ", " ", 1) for line in lines)


def _simulated(checkpoint_every: int, resume_from: int = 0) -> str:
    run = simlogs.TrainingRun(world_size=16, iterations=400, seconds=40.0, checkpoint_every=checkpoint_every, resume_from=resume_from)
    return _stamped(datetime(2026, 3, 1, 12, tzinfo=UTC), simlogs.training_log(run, datetime(2026, 3, 1, 12, tzinfo=UTC)))


def _async_saves() -> str:
    """Megatron steps with asynchronous saves that finish several steps after they start, NCCL
    chatter between every two steps, a line without a kubelet timestamp and one with a carriage return."""
    start = datetime(2026, 3, 1, 12, tzinfo=UTC)
    out = [
        f"{start:%Y-%m-%dT%H:%M:%S}.000000000Z using world size: 16, data-parallel size: 4, context-parallel size: 1, x, tensor-model-parallel size: 4, pipeline-model-parallel size: 1\n"
    ]
    rng = random.Random(7)
    for n in range(1, 61):
        when = start + timedelta(seconds=20 + n * 1.37)
        stamp = f"{when:%Y-%m-%dT%H:%M:%S.%f}000Z"
        megatron = f"[{when:%Y-%m-%d %H:%M:%S.%f}]"
        for k in range(rng.randint(0, 6)):
            out.append(f"{stamp} node-0:1:1 [{k}] NCCL INFO Channel 0{k}/32 : 0[0] -> 1[1] via P2P/IPC/read\n")
        step_ms = 1370.0 + rng.choice((0.5, 0.25, 0.125, 3.3))
        out.append(
            f"{stamp} {megatron} iteration {n * 10:8d}/     600 | consumed samples: {n * 320} | elapsed time per iteration (ms): {step_ms} | "
            f"throughput per GPU (TFLOP/s/GPU): {500 + rng.random() * 40:.1f} | lm loss: 7.312500E+00\n"
        )
        if n % 12 == 3:
            out.append(f"{stamp} {megatron} saving checkpoint at iteration {n * 10:7d} to /ckpt in torch_dist format\n")
        if n % 12 == 8:
            out.append(f"{stamp} {megatron} scheduled an async checkpoint save at iteration {(n - 5) * 10:7d} to /ckpt\n")
        if n == 30:
            out.append("a continuation line with no timestamp of its own\n")
            out.append(f"{stamp} progress\rbar iteration text\n")
    return "".join(out)


def _real() -> dict[str, tuple[str, dict[str, Any]]]:
    """The recorded training outputs of ``golden/measure/real/training`` (their sources are in
    that folder's manifest), each with the built-in profile that finds the most steps in it."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    readers = [p for p in builtin_logprofiles() if "trainingStep" in (p["spec"].get("patterns") or {})]
    for path in sorted((GOLDEN / "real" / "training").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        best = max(readers, key=lambda p: len(training.parse_training(text, p).steps))
        if training.parse_training(text, best).steps:
            found[f"real-{path.stem}"] = (text, best)
    return found


LOGS: dict[str, tuple[str, dict[str, Any]]] = {
    **_real(),
    "nvcre-n6-full-sequence": _golden("goodput-n6-full-sequence"),
    "megatron-training-warmup": _golden("megatron-training-warmup"),
    "megatron-bridge-no-tflops": _golden("megatron-bridge-no-tflops"),
    "simulated-checkpoints": (_simulated(100), _builtin("megatron-training")),
    "simulated-resumed": (_simulated(50, resume_from=150), _builtin("megatron-training")),
    "async-saves": (_async_saves(), _builtin("megatron-training")),
}


def _whole(text: str, profile: dict[str, Any]) -> tuple[training.Goodput, training.TrainingParse]:
    parse = training.parse_training(text, profile)
    return training.calculate_goodput(parse, NOW), parse


def _pieces(text: str, cuts: list[int]) -> list[str]:
    lines = text.splitlines(keepends=True)
    bounds = sorted({c % (len(lines) + 1) for c in cuts} | {0, len(lines)})
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _assert_same(state: RunningGoodput, text: str, profile: dict[str, Any]) -> None:
    goodput, parse = _whole(text, profile)
    assert state.goodput(NOW) == replace(goodput, non_warmup_steps=())
    assert state.non_warmup_steps == len(goodput.non_warmup_steps)
    assert state.steps == len(parse.steps)
    assert state.application_start == parse.application_start
    if parse.steps:
        assert (state.last_iteration, state.last_step_time) == (parse.steps[-1].iteration, parse.steps[-1].timestamp)
        assert state.first_step_time == parse.steps[0].timestamp
    last = parse.last_checkpoint
    assert (state.last_checkpoint_step, state.last_checkpoint_time) == ((last.step, last.timestamp) if last else (0, None))
    assert state.checkpoints == len(parse.checkpoints)
    assert state.skipped_iterations == getattr(parse, "skipped_iterations", 0)


@pytest.mark.parametrize("name", sorted(LOGS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    batch=st.integers(min_value=1, max_value=9),
    json_between=st.booleans(),
)
def test_pieces_in_any_cut_give_the_goodput_of_the_whole_log(
    name: str, cuts: list[int], batch: int, json_between: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, profile = LOGS[name]
    monkeypatch.setattr(goodput_state, "BATCH_LINES", batch)
    state = RunningGoodput()
    for piece in _pieces(text, cuts):
        state = fold(state, piece, profile)
        if json_between:  # the controller may restart between two samples: the state goes through its annotation
            restored = GoodputTail.from_json(GoodputTail("pod/0", LogCursor(), state).to_json())
            assert restored is not None
            state = restored.state
    _assert_same(state, text, profile)


def test_the_checked_logs_hold_what_the_property_needs() -> None:
    """Saves open across pieces, chatter to skip, resumed runs: the cases exercise each rule."""
    for name in ("async-saves", "simulated-checkpoints", "nvcre-n6-full-sequence"):
        parse = training.parse_training(LOGS[name][0], LOGS[name][1])
        assert parse.steps and parse.checkpoints and any(c.save_duration > 0 for c in parse.checkpoints), name
    text, profile = LOGS["async-saves"]
    literals = goodput_state._profile_literals(profile)
    assert literals is not None
    assert len(goodput_state.candidate_lines(text, literals)) < len(text.splitlines()) / 2


def test_a_profile_without_a_step_pattern_is_refused_even_for_an_empty_log() -> None:
    with pytest.raises(PatternError):
        fold(RunningGoodput(), "", {"patterns": {}})


def test_a_carried_save_line_is_cut_to_what_a_pattern_sees() -> None:
    profile = _builtin("megatron-training")
    save = "2026-03-01T12:00:00.5Z [2026-03-01 12:00:00.500000] saving checkpoint at iteration 10 to /ckpt " + "x" * 100_000 + "\n"
    state = fold(RunningGoodput(), save, profile)
    assert 0 < len(state.pending_line) < 20_000
    done = "2026-03-01T12:00:03Z [2026-03-01 12:00:03.000000] scheduled an async checkpoint save at iteration 10 to /ckpt\n"
    state = fold(state, done, profile)
    assert state.checkpoints == 1 and state.checkpoint_save_time == 2.5 and state.pending_line == ""


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "[]",
        '{"identity": "p/0", "cursor": null, "state": {}}',
        '{"identity": "p/0", "cursor": ["2026-01-01T00:00:00", "x", 1], "state": {}}',
        GoodputTail("p/0").to_json().replace('"steps":0', '"steps":1.5'),
        GoodputTail("p/0").to_json().replace('"warmup_time":0.0', '"warmup_time":"NaN"'),
        GoodputTail("p/0").to_json().replace('"application_start":null', '"application_start":"yesterday"'),
        "[" * 5000,
    ],
)
def test_an_unreadable_annotation_means_starting_over(text: str | None) -> None:
    assert GoodputTail.from_json(text) is None


def test_a_tail_survives_its_annotation() -> None:
    text, profile = LOGS["async-saves"]
    state = fold(RunningGoodput(), text[: len(text) // 2].rsplit("\n", 1)[0] + "\n", profile)
    tail = GoodputTail("uid/1", LogCursor(("2026-03-01T12:00:41", 370_000_000), 2), state)
    again = GoodputTail.from_json(tail.to_json())
    assert again == tail
