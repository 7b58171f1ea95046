"""Step counters printed as floats (Lightning's progress bar) are read as counts.

NeMo 1 (PyTorch Lightning) writes its progress-bar metrics as floats: ``global_step=794.0``,
``global_step=9e+3``. A LogProfile that captures such a counter as the iteration gets the whole
number; a counter that is not a whole number (``794.5``) or not a number at all still drops the
line, as a malformed step always did.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.training import parse_training

# A user LogProfile for NeMo 1 progress-bar lines that show the seconds per iteration.
BAR_REGEX = (
    r"Epoch (?P<epoch>\d+):.*?\|\s*\d+/\d+ \[[^\]]*?, (?P<elapsedTime>\d+(?:\.\d+)?)s/it,"
    r".*? reduced_train_loss=(?P<loss>\d+(?:\.\d+)?),"
    r" global_step=(?P<iteration>[0-9][0-9.eE+]*),"
)
# the line a NeMo Megatron launcher user quoted (https://github.com/NVIDIA/NeMo-Framework-Launcher/issues/55)
LINE = (
    "Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, "
    "reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]"
)


def _bar_profile() -> dict[str, Any]:
    base = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nemo2-training")
    profile = copy.deepcopy(base)
    profile["metadata"]["name"] = "nemo1-progress-bar"
    profile["spec"]["patterns"] = {"trainingStep": {"regex": BAR_REGEX}}
    return profile


def test_a_progress_bar_line_gives_its_global_step_loss_and_seconds_per_iteration() -> None:
    steps = parse_training(LINE + "\n", _bar_profile()).steps
    assert [(s.iteration, s.epoch, s.loss, s.elapsed_time) for s in steps] == [(794, 0, 3.09, 41.36)]


@pytest.mark.parametrize(("printed", "count"), [("794.0", 794), ("9e+3", 9000), ("9.0E+3", 9000), ("12", 12)])
def test_integral_float_counters_are_whole_numbers(printed: str, count: int) -> None:
    steps = parse_training(LINE.replace("global_step=794.0", f"global_step={printed}") + "\n", _bar_profile()).steps
    assert [s.iteration for s in steps] == [count]


@pytest.mark.parametrize("printed", ["794.5", "1e+30", "9e+", "7.e.3"])
def test_a_counter_that_is_not_a_whole_number_drops_the_line(printed: str) -> None:
    assert parse_training(LINE.replace("global_step=794.0", f"global_step={printed}") + "\n", _bar_profile()).steps == ()
