"""NeMo 1 progress bars whose step time is a padded ``s/it`` or a rate in ``it/s``.

tqdm pads its rate field to a fixed width (``,  9.85s/it``) and switches to a rate once an
iteration takes under a second (``,  1.73it/s``). The built-in ``nemo1-training`` profile reads
both: the rate's inverse is the step time, so a fast model's bars are measured without help from
the kubelet timestamps.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.training import parse_training

# https://github.com/aws-samples/awsome-distributed-training/blob/7217859f67bc693c52ff175ccc6082c41dbd7a1b/3.test_cases/megatron/bionemo/README.md
# (BioNeMo ESM-1nv pretraining on NeMo 1: the bar prints a rate, padded to two spaces)
BIONEMO_RATE_BARS = """\
Epoch 0:   3%|▎         | 34103/1100000 [5:28:58<171:22:21,  1.73it/s, loss=2.52, v_num=, reduced_train_loss=2.510, global_step=3.1e+4, consumed_samples=2.54e+8, val_loss=2.510]
Epoch 0:   3%|▎         | 34106/1100000 [5:29:00<171:22:19,  1.73it/s, loss=2.52, v_num=, reduced_train_loss=2.520, global_step=3.1e+4, consumed_samples=2.54e+8, val_loss=2.510]
"""

# written for this test in the bar's layout: a padded seconds-per-iteration field
PADDED_SECONDS_BAR = (
    "Epoch 0:   0%|          | 12/900 [01:58<2:25:41,  9.85s/it, loss=9.8, v_num=, "
    "reduced_train_loss=9.790, global_step=11.0, consumed_samples=384.0]"
)
# the launcher's own example line: one space, five characters
UNPADDED_SECONDS_BAR = (
    "Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, "
    "reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]"
)


def _nemo1() -> dict[str, Any]:
    profile: dict[str, Any] = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nemo1-training")
    return profile


def test_a_rate_in_iterations_per_second_gives_its_inverse_as_step_time() -> None:
    parsed = parse_training(BIONEMO_RATE_BARS, _nemo1())
    assert [step.iteration for step in parsed.steps] == [31000, 31000]
    assert [step.loss for step in parsed.steps] == [2.51, 2.52]
    for step in parsed.steps:
        assert step.elapsed_time == pytest.approx(1 / 1.73)
    assert parsed.untimed_lines == 0


def test_a_padded_seconds_per_iteration_field_is_read() -> None:
    parsed = parse_training(PADDED_SECONDS_BAR, _nemo1())
    assert [(step.iteration, step.elapsed_time) for step in parsed.steps] == [(11, 9.85)]


def test_the_unpadded_field_still_reads_as_before() -> None:
    parsed = parse_training(UNPADDED_SECONDS_BAR, _nemo1())
    assert [(step.iteration, step.elapsed_time, step.loss) for step in parsed.steps] == [(794, 41.36, 3.09)]


def test_a_zero_rate_gives_no_step_time_and_the_line_is_still_seen() -> None:
    bar = BIONEMO_RATE_BARS.splitlines()[0].replace("1.73it/s", "0.00it/s")
    parsed = parse_training(bar, _nemo1())
    assert parsed.steps == ()
    assert parsed.iteration_lines == 1 and parsed.untimed_lines == 1
