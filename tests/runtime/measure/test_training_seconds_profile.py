"""Megatron-DeepSpeed iteration lines that give the step time in seconds.

The BigScience fork of Megatron-DeepSpeed prints ``elapsed time per iteration (s): 106.46`` where
the other forks print ``elapsed time per iteration (ms): 4247.9``. The built-in
``megatron-deepspeed-training`` profile captures the unit the line shows (its ``elapsedTimeUnit``
group), so both forms give the step time in seconds; a unit capture that is not ``s``, ``ms`` or
``us`` makes the line unreadable rather than guessed.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.training import TrainingParse, parse_training

REAL = Path(__file__).resolve().parents[3] / "golden" / "measure" / "real" / "training"
BLOOM = REAL / "megatron-deepspeed-2022-bloom-default7-prefix-seconds-tflops.txt"

#: the profile's step pattern as it was before it read the seconds form: the ms form must read
#: through the current pattern exactly as it read through this one (the loss as "lm-loss" and
#: "lm_loss" too, spellings the profile learnt later from other forks)
MS_ONLY_REGEX = (
    r"(?:\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\]\s+)?iteration\s+(?P<iteration>\d+)/\s*\d+\s*\|"
    r".*?elapsed time per iteration \(ms\):\s*(?P<elapsedTime>[\d.]+)\s*\|"
    r"(?:.*?lm[ _-]loss:\s*(?P<loss>[+\-]?(?:[nN][aA][nN]|[iI][nN][fF])\b|[\d.eE+\-]+))?"
    r"(?:.*?number of skipped iterations:\s*(?P<skipped>\d+))?"
    r"(?:.*?number of nan iterations:\s*(?P<nanIterations>\d+))?"
    r"(?:.*?\| TFLOPs:\s*(?P<tflops>[\d.]+))?"
)

_MS_TIME = re.compile(r"elapsed time per iteration \(ms\):\s*([\d.]+)")
_S_TIME = re.compile(r"elapsed time per iteration \(s\):\s*([\d.]+)")

# a BigScience line (the corpus file's first one) and its twin with the number left out
SECONDS_LINE = (
    "[default7]: iteration    31214/  115311 | consumed samples:     47768496 | consumed tokens:  97829879808 | "
    "elapsed time per iteration (s): 106.46 | learning rate: 5.279E-05 | global batch size:  2048 | "
    "lm loss: 2.198845E+00 | grad norm: 0.242 | num zeros: 0.0 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 | samples per second: 19.238 | TFLOPs: 147.29 |"
)


def _profile(name: str = "megatron-deepspeed-training") -> dict[str, Any]:
    profile: dict[str, Any] = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == name)
    return profile


def _ms_only_profile() -> dict[str, Any]:
    profile = copy.deepcopy(_profile())
    step = profile["spec"]["patterns"]["trainingStep"]
    step["regex"] = MS_ONLY_REGEX
    step["units"] = {"elapsedTime": "ms"}
    return profile


def _in_seconds(text: str) -> str:
    """``text`` with every ms step time written as the BigScience fork writes it, in seconds."""
    return _MS_TIME.sub(lambda m: f"elapsed time per iteration (s): {float(m.group(1)) / 1000.0!r}", text)


def _ms_logs() -> list[Path]:
    return sorted(path for path in REAL.glob("*.txt") if _MS_TIME.search(path.read_text(encoding="utf-8")))


def test_the_bloom_log_reads_every_iteration_with_its_step_time_in_seconds() -> None:
    text = BLOOM.read_text(encoding="utf-8")
    parsed = parse_training(text, _profile())

    assert parsed.iteration_lines == 11
    assert len(parsed.steps) == 11
    assert parsed.first_line_iteration == 31214
    assert parsed.last_line_iteration == 31251
    assert parsed.last_line_loss == pytest.approx(2.235667, rel=1e-9)
    assert parsed.skipped_iterations == 0
    assert parsed.tflops_lines == 11
    printed = [float(value) for value in _S_TIME.findall(text)]
    assert len(printed) == 11
    # the step times are the printed seconds, not thousandths of them
    assert [step.elapsed_time for step in parsed.steps] == pytest.approx(printed, rel=1e-12)
    assert parsed.steps[0].elapsed_time == pytest.approx(106.46)
    assert parsed.steps[-1].elapsed_time == pytest.approx(106.13)
    assert parsed.steps[-1].tflops == pytest.approx(147.75)


@pytest.mark.parametrize("path", _ms_logs(), ids=lambda path: path.stem)
def test_the_ms_form_reads_as_before_and_its_seconds_twin_reads_the_same(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    before = parse_training(text, _ms_only_profile())
    now = parse_training(text, _profile())
    assert now == before
    assert now.to_dict() == before.to_dict()

    twin = parse_training(_in_seconds(text), _profile())
    assert twin.iteration_lines == now.iteration_lines
    assert [s.iteration for s in twin.steps] == [s.iteration for s in now.steps]
    assert [s.elapsed_time for s in twin.steps] == pytest.approx([s.elapsed_time for s in now.steps], rel=1e-12)
    assert [s.loss for s in twin.steps] == [s.loss for s in now.steps]


def test_the_profile_example_reads_the_same_in_ms_and_in_seconds() -> None:
    example = _profile()["spec"]["patterns"]["trainingStep"]["example"]
    assert "(ms): 4247.9 |" in example
    ms_steps = parse_training(example, _profile()).steps
    assert ms_steps == parse_training(example, _ms_only_profile()).steps
    assert [s.elapsed_time for s in ms_steps] == pytest.approx([4.2479])
    seconds_steps = parse_training(_in_seconds(example), _profile()).steps
    assert [s.elapsed_time for s in seconds_steps] == pytest.approx([4.2479])


@pytest.mark.parametrize(
    "broken",
    [
        SECONDS_LINE.replace("(s): 106.46 |", "(s): |"),
        SECONDS_LINE.replace("(s): 106.46 |", "(s):  | 106.46"),
        SECONDS_LINE.replace("(s): 106.46 |", "(s): . |"),
        SECONDS_LINE.replace("(s): 106.46 |", "(min): 1.77 |"),
    ],
    ids=["empty", "number-after-the-bar", "dot-only", "unit-not-read"],
)
def test_a_seconds_line_without_its_number_is_no_step(broken: str) -> None:
    parsed = parse_training(SECONDS_LINE + "\n" + broken + "\n", _profile())
    assert parsed.iteration_lines == 1
    assert [(s.iteration, s.elapsed_time) for s in parsed.steps] == [(31214, pytest.approx(106.46))]


def _unit_profile(units: dict[str, str] | None) -> dict[str, Any]:
    pattern: dict[str, Any] = {"regex": r"step (?P<iteration>\d+) took (?P<elapsedTime>[\d.]+) ?(?P<elapsedTimeUnit>[a-z]+)\b"}
    if units is not None:
        pattern["units"] = units
    return {"timestamp": {"layout": "2006-01-02 15:04:05"}, "patterns": {"trainingStep": pattern}}


def _times(parsed: TrainingParse) -> list[tuple[int, float]]:
    return [(step.iteration, step.elapsed_time) for step in parsed.steps]


@pytest.mark.parametrize("units", [None, {"elapsedTime": "ms"}, {"elapsedTime": "s"}])
def test_the_unit_a_line_shows_wins_over_the_pattern_units(units: dict[str, str] | None) -> None:
    text = "step 1 took 1500 us\nstep 2 took 250 ms\nstep 3 took 2.5 s\n"
    assert _times(parse_training(text, _unit_profile(units))) == [
        (1, pytest.approx(0.0015)),
        (2, pytest.approx(0.25)),
        (3, pytest.approx(2.5)),
    ]


def test_a_line_showing_a_unit_the_reader_does_not_know_is_not_read() -> None:
    parsed = parse_training("step 1 took 3 s\nstep 2 took 2 min\nstep 3 took 4 s\n", _unit_profile({"elapsedTime": "ms"}))
    assert parsed.iteration_lines == 2
    assert _times(parsed) == [(1, pytest.approx(3.0)), (3, pytest.approx(4.0))]
