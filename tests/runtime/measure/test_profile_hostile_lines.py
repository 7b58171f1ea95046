"""A line a workload logs can never stall the parsers: patterns run on a linear-time engine.

Under a backtracking engine the built-in megatron ``trainingStep`` pattern took 44 s on one
22 KB line that repeats the pattern's prefix without ``lm loss``, and the DCGM table-row
pattern 36 s on a 4 KB line of spaces. The match held the interpreter lock, so probes and the
leader Lease stopped with it. Each case runs in a child process with a deadline far above what
a linear engine needs, so a regression fails here instead of hanging the suite.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.profile import MAX_MATCHED_LINE, compile_pattern, matched_part
from nvcre.runtime.measure.training import parse_training

PROFILES = Path(__file__).resolve().parents[3] / "catalog" / "logprofiles"
STAMP = "2026-12-03T17:00:00.000000000Z "
SEGMENT = "[2026-12-03 17:00:00] iteration 1/ 1 | elapsed time per iteration (ms): 1 | throughput per GPU (TFLOP/s/GPU): 1 |"
DEADLINE = 60.0


def _profile(name: str) -> dict[str, Any]:
    return YAML(typ="safe").load((PROFILES / f"{name}.yaml").read_text(encoding="utf-8"))


def _run(target: Any, *args: Any) -> None:
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=target, args=args)
    child.start()
    child.join(DEADLINE)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"parsing one hostile line took over {DEADLINE:.0f} s")
    assert child.exitcode == 0


def _training(name: str, text: str) -> None:
    parse_training(text, _profile(name))


def _dcgm(text: str) -> None:
    parse_dcgm(text)


def _bandwidth(text: str) -> None:
    parse_bandwidth(text, _profile("nccl-bandwidth"))


@pytest.mark.parametrize("name", ["megatron-training", "megatron-bridge", "megatron-deepspeed-training"])
def test_a_line_repeating_the_step_prefix_is_read_in_linear_time(name: str) -> None:
    _run(_training, name, STAMP + SEGMENT * 300 + "\n")


def test_a_bar_repeating_its_opening_is_read_in_linear_time() -> None:
    _run(_training, "nemo1-training", STAMP + "Epoch 0:   1%|  | 795/77225 [9:07:58<878:01:48, " * 2000 + "\n")


def test_a_long_table_row_without_its_closing_bar_is_read_in_linear_time() -> None:
    _run(_dcgm, "|" + " " * 40_000 + "x\n")


def test_a_huge_line_in_a_bandwidth_log_is_read_in_linear_time() -> None:
    _run(_bandwidth, STAMP + "   8  2  float  sum  -1 " * 50_000 + "\n")


def test_profile_patterns_run_on_re2() -> None:
    compiled = compile_pattern(_profile("megatron-training")["spec"]["patterns"]["trainingStep"]["regex"])
    assert type(compiled).__module__.startswith("re2")


def test_patterns_see_a_bounded_part_of_a_line() -> None:
    assert matched_part("a" * (MAX_MATCHED_LINE + 10)) == "a" * MAX_MATCHED_LINE
    assert matched_part("short") == "short"


def test_a_real_step_line_still_parses_after_a_hostile_one() -> None:
    good = (
        STAMP + " [2026-12-03 17:00:01] iteration        2/     100 | consumed samples: 64 | elapsed time per iteration (ms): 2850.5 |"
        " throughput per GPU (TFLOP/s/GPU): 539.8 | learning rate: 1.0E-04 | global batch size: 32 | lm loss: 9.1E+00 |"
    )
    parsed = parse_training(STAMP + SEGMENT * 300 + "\n" + good + "\n", _profile("megatron-training"))
    # The hostile line opens with a well-formed step (the loss is optional: a skipped iteration
    # logs none), so it reads as iteration 1; what matters is that it ends and the next line is read.
    assert [step.iteration for step in parsed.steps] == [1, 2]
    assert (parsed.steps[-1].elapsed_time, parsed.steps[-1].loss) == (2.8505, 9.1)
