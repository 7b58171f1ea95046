"""What the third hold-out of real outputs taught the readers, each shape checked on its own.

The inputs are the corpus files under ``golden/measure/real/`` (their public sources are in the
manifest): nccl-tests rows under a launcher that tags every write with the rank
(https://github.com/NVIDIA/nccl/issues/1453), a run that dies in its socket code with no table
(https://github.com/NVIDIA/nccl-tests/issues/217), runs cut after their header
(https://github.com/ROCm/rocm-systems/pull/3415, https://github.com/ROCm/rccl-tests/issues/163),
a pasted piece of a DCGM JSON result that no longer parses (https://github.com/NVIDIA/DCGM/issues/122),
torchtitan metrics lines (https://github.com/pytorch/torchtitan/pull/3393), NeMo Automodel step
lines (https://github.com/NVIDIA-NeMo/Automodel/pull/3473), a NeMo 2 AutoModel bar
(https://github.com/NVIDIA-NeMo/Speech/issues/13930) and NeMo 2 lines with no step time
(https://github.com/NVIDIA-NeMo/Speech/pull/10128).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import INCOMPLETE, RUN_FAILED
from nvcre.runtime.measure.profile import parse_layout_time, strip_launcher_prefix
from nvcre.runtime.measure.training import parse_training
from tests.goldenharness import GOLDEN

REAL = GOLDEN / "measure" / "real"


def _profile(name: str) -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == name)


def _real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _nccl(text: str) -> Any:
    return parse_bandwidth(text, _profile("nccl-bandwidth"))


# ------------------------------------------------------------------ launcher tags


def test_a_rank_tag_before_every_write_is_cut_wherever_it_stands() -> None:
    parsed = _nccl(_real("nccl/rank-tag-per-write-rows-cut.txt"))
    assert parsed.row_count == 10
    assert [(r.size_bytes, r.bus_bw) for r in parsed.results][-1] == (536870912, 5.31)


def test_the_rank_tag_keeps_the_cells_apart() -> None:
    line = "[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0"
    assert strip_launcher_prefix(line).split() == ["1048576", "262144", "float", "sum", "-1", "1626.5", "0.64", "1.24", "0"]


@pytest.mark.parametrize(
    "line",
    [
        "[0]:step 3",  # no space after the tag: not this launcher's tag
        "[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4",
        "[2024-04-06 03:02:12] iteration       71/     100 |",
        "host:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    ],
)
def test_lines_without_a_leading_rank_tag_are_left_alone(line: str) -> None:
    assert strip_launcher_prefix(line) == line


# ------------------------------------------------------------------ nccl-tests health


def test_an_nccl_error_return_with_no_table_fails_the_run() -> None:
    parsed = _nccl(_real("nccl/a6000-socket-warn-connection-closed-no-table.txt"))
    assert parsed.results == ()
    assert parsed.failure is not None and parsed.failure.reason == RUN_FAILED
    assert "socketProgress: Connection closed by remote peer" in parsed.failure.message


def test_an_error_return_after_a_finished_table_is_not_a_failure() -> None:
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27       0\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 0.25\n"
        "host:1:2 [0] NCCL INFO misc/socket.cc:752 -> 6\n"
    )
    assert _nccl(text).failure is None


def test_an_info_line_ending_in_a_zero_return_is_not_an_error() -> None:
    text = "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 -> 0\n"
    assert _nccl(text).failure is None


@pytest.mark.parametrize(
    "name",
    ["nccl/gfx1151-rccl-tests-version-lines-cut-before-table.txt", "nccl/mi50-rccl-mscclpp-warn-header-cut.txt"],
)
def test_output_cut_after_the_run_header_is_an_unfinished_table(name: str) -> None:
    parsed = _nccl(_real(name))
    assert parsed.results == ()
    assert parsed.failure is not None and parsed.failure.reason == INCOMPLETE
    assert "before its first row" in parsed.failure.message
    # while the Job runs, a header with nothing after it yet is not a failure
    assert "failure" not in status_fields(parsed, final=False)
    assert status_fields(parsed)["failure"]["reason"] == INCOMPLETE


# ------------------------------------------------------------------ DCGM


def test_a_fail_in_a_dcgm_result_piece_that_does_not_parse_fails_the_run() -> None:
    result = parse_dcgm(_real("dcgm/dcgm-3.x-json-lone-fail-result-fragment.txt"))
    assert result.overall == "Fail"


def test_a_pass_in_such_a_piece_is_never_a_pass() -> None:
    text = '{\n "gpu_id" : "0",\n "status" : "Pass",\n "warnings" : [ { "error_id" : 0, "warning" : "cut\n here" } ]'
    assert parse_dcgm(text).overall == "Incomplete"


# ------------------------------------------------------------------ training


def test_untimed_iteration_lines_still_show_the_progress_they_reached() -> None:
    parsed = parse_training(_real("training/nemo2-2024-no-step-timing.txt"), _profile("nemo2-training"))
    assert parsed.steps == ()
    assert parsed.iteration_lines == parsed.untimed_lines > 0
    assert parsed.first_line_iteration is not None and parsed.last_line_iteration is not None
    assert parsed.first_line_iteration < parsed.last_line_iteration
    assert parsed.last_line_loss is not None


def test_a_step_pattern_without_an_elapsed_time_group_is_accepted() -> None:
    profile = {"patterns": {"trainingStep": {"regex": r"step (?P<iteration>\d+) loss (?P<loss>[\d.]+)"}}}
    parsed = parse_training("step 1 loss 2.5\nstep 2 loss 2.4\n", profile)
    assert (parsed.iteration_lines, parsed.untimed_lines, parsed.last_line_loss) == (2, 2, 2.4)


def test_a_python_logging_timestamp_keeps_its_milliseconds() -> None:
    assert parse_layout_time("2026-02-24 19:46:17,508") == datetime(2026, 2, 24, 19, 46, 17, 508000, tzinfo=UTC)


def test_torchtitan_steps_are_timed_from_their_own_timestamps() -> None:
    parsed = parse_training(_real("training/torchtitan-2026-rank0-prefix-steps.txt"), _profile("torchtitan-training"))
    assert [s.iteration for s in parsed.steps] == list(range(15, 22))
    assert all(1.1 < s.elapsed_time < 1.15 for s in parsed.steps)
    assert parsed.steps[-1].tflops == 0.52 and parsed.steps[-1].loss == 3.00867
    assert parsed.first_line_iteration == 14


def test_nemo_automodel_step_lines_have_a_built_in_profile() -> None:
    parsed = parse_training(_real("training/nemo-automodel-2026-step-lines.txt"), _profile("nemo-automodel-training"))
    assert (parsed.first_line_iteration, parsed.last_line_iteration, parsed.last_line_loss) == (9, 15, 0.7918)
    assert [s.elapsed_time for s in parsed.steps][:2] == [3.0, 2.0]
    assert all(s.tflops is None for s in parsed.steps)


def test_a_nemo2_automodel_bar_reads_its_global_step_before_its_loss() -> None:
    parsed = parse_training(_real("training/nemo2-hf-automodel-bar-global-step-tps.txt"), _profile("nemo-hf-automodel-training"))
    assert [(s.iteration, s.loss) for s in parsed.steps] == [(4, 12.30), (4, 12.30), (4, 11.60), (4, 11.60)]
    assert parsed.steps[0].elapsed_time == pytest.approx(1 / 1.99)
    assert parsed.steps[0].tokens_per_sec == 9484.0
