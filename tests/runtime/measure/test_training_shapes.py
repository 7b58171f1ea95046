"""Training logs as Megatron-LM and NeMo 2 print them, through the built-in LogProfiles.

Every input is a real log excerpt copied (trimmed) from the public page named beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.profile import split_line, strip_launcher_prefix
from nvcre.runtime.measure.training import calculate_goodput, parse_training

PROFILES = {p["metadata"]["name"]: p for p in builtin_logprofiles()}
MEGATRON = ("megatron-training", "megatron-bridge")

# https://github.com/aws-samples/awsome-distributed-training/blob/main/3.test_cases/megatron/megatron-lm/slurm/gpt3/README.md
# (Megatron-LM GPT-3 on Slurm, fp16): no [timestamp], no throughput, every iteration skipped by the
# loss scaler, so no "lm loss" either
SKIPPED_NO_THROUGHPUT = """\
   iteration        1/  508626 | consumed samples:          288 | elapsed time per iteration (ms): 255940.5 | learning rate: 0.000E+00 | global batch size:   288 | loss scale: 4294967296.0 | number of skipped iterations:   1 | number of nan iterations:   0 |
   iteration        2/  508626 | consumed samples:          576 | elapsed time per iteration (ms): 243438.3 | learning rate: 0.000E+00 | global batch size:   288 | loss scale: 2147483648.0 | number of skipped iterations:   1 | number of nan iterations:   0 |
   iteration        3/  508626 | consumed samples:          864 | elapsed time per iteration (ms): 243344.4 | learning rate: 0.000E+00 | global batch size:   288 | loss scale: 1073741824.0 | number of skipped iterations:   1 | number of nan iterations:   0 |
"""

# https://github.com/epfLLM/Megatron-LLM/issues/11 (a Megatron-LM fork, same iteration line): no
# [timestamp] and no throughput, with a loss
NO_TIMESTAMP_WITH_LOSS = """\
 iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |
 iteration      123/  250000 | consumed samples:       125952 | elapsed time per iteration (ms): 87871.6 | learning rate: 9.225E-06 | global batch size:  1024 | lm loss: 2.493043E+00 | loss scale: 1.0 | grad norm: 0.236 | number of skipped iterations:   0 | number of nan iterations:   0 |
"""

# https://github.com/NVIDIA/Megatron-LM/issues/756 (Mixtral 8x7B, 16 x H100): [timestamp] without a
# fraction, throughput and loss
TIMESTAMP_THROUGHPUT = """\
 [2024-04-06 02:59:36] iteration       43/     100 | consumed samples:         5504 | elapsed time per iteration (ms): 5444.9 | throughput per GPU (TFLOP/s/GPU): 239.8 | learning rate: 8.600000E-06 | global batch size:   128 | lm loss: 1.825991E+00 | load_balancing_loss: 1.019746E+00 | loss scale: 1.0 | grad norm: 1.426 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |
 [2024-04-06 02:59:41] iteration       44/     100 | consumed samples:         5632 | elapsed time per iteration (ms): 5533.8 | throughput per GPU (TFLOP/s/GPU): 236.0 | learning rate: 8.800000E-06 | global batch size:   128 | lm loss: 1.875063E+00 | load_balancing_loss: 1.020033E+00 | loss scale: 1.0 | grad norm: 1.327 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |
"""

# https://github.com/aws-samples/awsome-distributed-training/blob/main/3.test_cases/megatron/nemo/kubernetes/README.md
# (NeMo 2 pretraining through NeMo Run/SkyPilot, which puts "(pretraining, pid=4112)" before each line)
NEMO2 = """\
(pretraining, pid=4112) [NeMo I 2025-05-22 20:08:53 model_checkpoint:497] Scheduled async checkpoint save for /mnt/nemo/experiments/aws-nemo2-pretrain-20250522-194450/checkpoints/model_name=0--val_loss=0.00-step=18-consumed_samples=9728.0-last.ckpt
(pretraining, pid=4112) Training epoch 1, iteration 0/999 | lr: 2.999e-06 | global_batch_size: 512 | global_step: 19 | reduced_train_loss: 11.03 | train_step_timing in s: 46.86 | consumed_samples: 10240
(pretraining, pid=4112) [NeMo I 2025-05-22 20:09:41 model_checkpoint:522] Async checkpoint save for step 19 finalized successfully.
(pretraining, pid=4112) Training epoch 1, iteration 10/999 | lr: 4.498e-06 | global_batch_size: 512 | global_step: 29 | reduced_train_loss: 11.03 | train_step_timing in s: 46.84 | consumed_samples: 15360
"""


def _steps(text: str, profile: str) -> list[tuple[Any, ...]]:
    parsed = parse_training(text, PROFILES[profile])
    return [(s.iteration, round(s.elapsed_time, 4), s.loss, s.tflops, s.skipped) for s in parsed.steps]


@pytest.mark.parametrize("profile", MEGATRON)
def test_skipped_iterations_without_throughput_or_timestamp_are_counted_not_dropped(profile: str) -> None:
    assert _steps(SKIPPED_NO_THROUGHPUT, profile) == [
        (1, 255.9405, None, None, 1),
        (2, 243.4383, None, None, 1),
        (3, 243.3444, None, None, 1),
    ]
    parsed = parse_training(SKIPPED_NO_THROUGHPUT, PROFILES[profile])
    assert parsed.skipped_iterations == 3 and parsed.to_dict()["skippedIterations"] == 3


@pytest.mark.parametrize("profile", MEGATRON)
def test_iteration_lines_without_timestamp_or_throughput_are_read(profile: str) -> None:
    assert _steps(NO_TIMESTAMP_WITH_LOSS, profile) == [(122, 86.5452, 2.50422, None, 0), (123, 87.8716, 2.493043, None, 0)]


@pytest.mark.parametrize("profile", MEGATRON)
def test_timestamped_lines_with_throughput_still_read_everything(profile: str) -> None:
    parsed = parse_training(TIMESTAMP_THROUGHPUT, PROFILES[profile])
    assert [(s.iteration, s.tflops, s.loss) for s in parsed.steps] == [(43, 239.8, 1.825991), (44, 236.0, 1.875063)]
    assert parsed.steps[0].timestamp == datetime(2024, 4, 6, 2, 59, 36, tzinfo=UTC)


def test_kubelet_timestamps_date_steps_without_their_own() -> None:
    stamped = "".join(f"2026-03-01T10:0{i}:00Z {line}\n" for i, line in enumerate(NO_TIMESTAMP_WITH_LOSS.splitlines()))
    parsed = parse_training(stamped, PROFILES["megatron-training"])
    assert [s.timestamp for s in parsed.steps] == [datetime(2026, 3, 1, 10, 0, tzinfo=UTC), datetime(2026, 3, 1, 10, 1, tzinfo=UTC)]


def test_nemo2_steps_use_the_global_step_and_seconds() -> None:
    parsed = parse_training(NEMO2, PROFILES["nemo2-training"])
    assert [(s.iteration, s.epoch, s.elapsed_time, s.loss) for s in parsed.steps] == [(19, 1, 46.86, 11.03), (29, 1, 46.84, 11.03)]
    assert [c.step for c in parsed.checkpoints] == [19]
    assert parsed.checkpoints[0].timestamp == datetime(2025, 5, 22, 20, 9, 41, tzinfo=UTC)


def test_nemo2_throughput_fields_are_optional_and_read_when_present() -> None:
    # The step line of the NeMo 2 recipe above with the fields its FLOPs and throughput callbacks
    # append (names as the NeMo 2 callbacks log them; values chosen for the test).
    line = NEMO2.splitlines()[1].replace(
        "train_step_timing in s: 46.86 |", "train_step_timing in s: 46.86 | TFLOPS_per_GPU: 1.249e+03 | tokens_per_sec: 2.25e+04 |"
    )
    step = parse_training(line + "\n", PROFILES["nemo2-training"]).steps[0]
    assert (step.iteration, step.elapsed_time, step.tflops, step.tokens_per_sec) == (19, 46.86, 1249.0, 22500.0)


def test_nemo2_steps_give_goodput_figures() -> None:
    stamped = "".join(f"2025-05-22T20:{9 + i}:00Z {line}\n" for i, line in enumerate(NEMO2.splitlines()))
    parsed = parse_training(stamped, PROFILES["nemo2-training"])
    goodput = calculate_goodput(parsed, datetime(2025, 5, 22, 20, 20, tzinfo=UTC))
    assert goodput.highest_step == 29 and goodput.ratio > 0


def test_no_megatron_profile_reads_a_nemo2_log_and_the_reverse() -> None:
    for profile in MEGATRON:
        assert parse_training(NEMO2, PROFILES[profile]).steps == ()
    assert parse_training(TIMESTAMP_THROUGHPUT, PROFILES["nemo2-training"]).steps == ()


def test_a_user_profile_still_decides_what_a_step_is() -> None:
    user = {
        "kind": "LogProfile",
        "spec": {
            "timestamp": {"layout": "2006-01-02 15:04:05"},
            "patterns": {
                "trainingStep": {
                    "regex": r"iteration\s+(?P<iteration>\d+)/.*elapsed time per iteration \(ms\):\s*(?P<elapsedTime>[\d.]+).*lm loss:\s*(?P<loss>\S+)",
                    "units": {"elapsedTime": "ms"},
                }
            },
        },
    }
    # this user's pattern requires a loss: the skipped iterations are not steps for it
    assert parse_training(SKIPPED_NO_THROUGHPUT, user).steps == ()
    assert [s.iteration for s in parse_training(NO_TIMESTAMP_WITH_LOSS, user).steps] == [122, 123]


# https://github.com/NVIDIA-NeMo/Speech/issues/14850 (a NeMo run under srun --label)
SLURM_LABELLED = "0: [NeMo I 2025-10-02 13:23:36 utils:662] Setting up optimizer with config OptimizerConfig(optimizer='adam', lr=0.0003)"


def test_launcher_tags_are_cut_and_plain_lines_are_left_alone() -> None:
    assert strip_launcher_prefix(SLURM_LABELLED).startswith("[NeMo I 2025-10-02 13:23:36 utils:662]")
    assert strip_launcher_prefix("[1,0]<stdout>:# Avg bus bandwidth    : 52.9753") == "# Avg bus bandwidth    : 52.9753"
    assert strip_launcher_prefix("[1,12]<stderr>:x") == "x"
    assert strip_launcher_prefix(" 3: x") == "x" and strip_launcher_prefix("    0:      8388608") == "     8388608"
    for plain in (
        NO_TIMESTAMP_WITH_LOSS.splitlines()[0],
        TIMESTAMP_THROUGHPUT.splitlines()[0],
        "           8             2     float     sum      -1    12.90    0.00    0.00      0",
        "node-0:530:530 [0] NCCL INFO Using network Socket",
        "10:530:530 [0] NCCL INFO Bootstrap",
        "[2024-04-06 02:59:36] iteration 1/ 1 |",
        "[1,0] not a tag",
        "| Diagnostic                | Result                                         |",
        "",
    ):
        assert strip_launcher_prefix(plain) == plain
    assert split_line("2026-03-01T10:00:00Z [1,0]<stdout>:  8  2") == ("2026-03-01T10:00:00Z", "  8  2")


def test_a_slurm_labelled_megatron_log_reads_like_the_plain_one() -> None:
    labelled = "".join(f"{rank}: {line}\n" for rank, line in enumerate(SKIPPED_NO_THROUGHPUT.splitlines()))
    for profile in MEGATRON:
        assert _steps(labelled, profile) == _steps(SKIPPED_NO_THROUGHPUT, profile)
        assert len(_steps(labelled, profile)) == 3
