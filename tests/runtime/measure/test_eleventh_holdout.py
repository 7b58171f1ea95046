"""The reader fixes the eleventh real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the behaviours the fixes added. The inputs are corpus files:

- under ``nccl/``, a three-node torchrun job over RoCE whose log ends on
  ``NCCL WARN socketFinalizeAccept: wrong type 3 != 4`` after the channel set-up, with no table
  and no error return after it (https://github.com/NVIDIA/nccl-tests/issues/373). Its final read
  recorded nothing wrong (the measurement ended as ``NoDataCollected`` without saying why); a
  finished log whose last line is an NCCL warning and that finished no table now fails the run
  as ``CollectiveRunFailed`` quoting it. A provisional read of a running pod leaves it out:
  NCCL may still print past its warning;
- under ``nccl/``, a reduce_scatter run on two A100 PCIe nodes over InfiniBand whose NCCL INFO
  lines include ``Ring 00 : 1 -> 0 -> 1``
  (https://github.com/thomaslie210/NCCL_Test_Results/blob/83dd17d1e2bfb3ef047b1845efcf5116e3b42636/NCCL_Benchmarks/MPI_Test_From_n015/MPI_From_n015_To_n013_n014_GDR_ON_Medium/result_medium_reduce_scatter_perf.txt).
  The corpus property test cut its table before the last row and the run
  failed as ``CollectiveRunFailed`` "NCCL failed" quoting the ring line: a ring's route ends in
  ``-> <number>`` like an NCCL error return (``transport/net.cc:883 -> 3``). An error return now
  needs a source place (``file.ext:line``) before its arrow, and the cut table is
  ``CollectiveTableIncomplete`` as every other cut table;
- under ``dcgm/``, a DCGM 3.3.9 ``dcgmi diag -r 2`` table on a V100 whose closing rule the
  document cut after its column mark (``+------+-------``), read as ``Incomplete``
  (https://github.com/sathvikabm/AI_Infra_Handbook/blob/17d908ff4ea5e35ca039ce9dc0417b7a6290f1e6/DCGM.md);
  a rule cut after its column mark now closes the table;
- under ``training/``, a torchtitan-derived trainer whose metrics line writes the step as
  ``step: 640/644 = 99.3789%``, of which the built-in ``torchtitan-training`` profile read no step
  (https://github.com/AICrossSim/NewComputeBench/blob/d7172548b0c063e74517356056bdbfcda26b0f86/docs/01-model-training/llm-pretrain-and-eval.md);
- from the hold-out's second batch, under ``training/``: Argonne's Megatron-DeepSpeed fork writes
  its iteration line as ``key=value`` fields (``iteration=       2/  635782 | ... |
  elapsed_time_per_iteration_ms=106.8 | ... | number_of_skipped_iterations=  1 | ... |
  [LM]TFLOPs=5620.92 |``), of which the built-in ``megatron-deepspeed-training`` profile read no
  iteration
  (https://github.com/saforem2/personal_site/blob/29971f6064709f9c8aad9839c770619438c36991/docs/posts/AuroraGPT/spike-skipper/index.md);
  and a 2021 BigScience Megatron-DeepSpeed run names its loss ``lm-loss:``, which it read as no
  loss
  (https://github.com/bigscience-workshop/bigscience/blob/9e64edec2ad1fb9263bf39ba616a84ff64b4d947/experiments/gpt2-meg-ds-3d/meg_ds_3d_gpt2_perf_n16-ds-on.out);
- from the third batch, under ``nccl/``: Open MPI 5 losing its remote daemon (``PRTE has lost
  communication with a remote daemon.``, https://github.com/NVIDIA/nccl-tests/issues/299) and
  Slurm failing to start a missing program (``slurmstepd: error: execve(): all_reduce_perf: No
  such file or directory`` then ``srun: error: host-01: task 1: Exited with exit code 2``,
  https://github.com/NVIDIA/deepops/issues/785), each with no nccl-tests line, read as nothing
  at all; both now fail the run. Under ``training/``, Megatron-LM's 2019 iteration line prints
  ``lm loss 5.023855E+00`` without a colon and read as no loss
  (https://github.com/BBuf/giantpandacv.com/blob/b310a38dbe3adf72e1b8f43da649f4366b76ce34/docs/project/PyTorch/DeepSpeed%E7%BB%93%E5%90%88Megatron-LM%E8%AE%AD%E7%BB%83GPT2%E6%A8%A1%E5%9E%8B%E7%AC%94%E8%AE%B0%E4%B8%8A.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import INCOMPLETE, RUN_FAILED
from nvcre.runtime.measure.training import parse_training
from tests.goldenharness import GOLDEN
from tests.runtime.measure.nccl_reading import HEADER, NCCL, PARAMS, ROW, TRAILER, final_failure, nccl_profile

REAL = GOLDEN / "measure" / "real"
ENDS_ON_WARN = NCCL / "torchrun-roce-ibext-v8-3-node-socketfinalizeaccept-wrong-type-3-4-warn-no-table.txt"
CUT_RULE = REAL / "dcgm" / "dcgm-3.3.9-r1-r2-v100-discovery-then-two-tables-last-rule-truncated.txt"
STEP_OF_TOTAL = (
    REAL / "training" / "torchtitan-2025-fork-step-n-of-m-percent-one-line-training-completed-then-sigabrt-childfailederror-indented.txt"
)

WARN = "host:1884:2346 [0] socket.c:446 NCCL WARN socketFinalizeAccept: wrong type 3 != 4"
INFO = "host:1884:2298 [0] NCCL INFO Channel 00/0 : 1[0] -> 2[0] [receive] via NET/IBext_v8/1"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ a log that ends on a warning


def test_a_finished_log_that_ends_on_an_nccl_warning_with_no_table_fails_quoting_it() -> None:
    failure = final_failure(_read(ENDS_ON_WARN))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert "socketFinalizeAccept: wrong type 3 != 4" in failure["message"]
    assert failure["message"].startswith("the log ended on an NCCL warning")


def test_a_running_pod_whose_log_so_far_ends_on_a_warning_is_not_failed_yet() -> None:
    parsed = parse_bandwidth(_read(ENDS_ON_WARN), nccl_profile())
    assert "failure" not in status_fields(parsed, final=False)


def test_error_returns_after_the_warning_still_end_the_log_on_it() -> None:
    text = f"{INFO}\n{WARN}\nhost:1884:2346 [0] NCCL INFO misc/socket.cc:628 -> 3\n\n"
    failure = final_failure(text)
    assert failure is not None and failure["reason"] == RUN_FAILED and "wrong type 3 != 4" in failure["message"]


def test_a_warning_the_run_went_on_from_is_no_failure() -> None:
    # a warning in the middle of set-up, then the whole table: a valid run
    text = "\n".join([WARN, INFO, PARAMS, HEADER, ROW, TRAILER])
    assert final_failure(text) is None
    # a warning followed by more set-up and nothing else: the log did not end on it
    assert final_failure(f"{WARN}\n{INFO}\n") is None


def test_a_warning_after_a_finished_table_is_no_failure() -> None:
    text = "\n".join([PARAMS, HEADER, ROW, TRAILER, WARN])
    assert final_failure(text) is None


RING = "n013:547965:547975 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1"


def test_a_rings_route_is_no_error_return() -> None:
    cut = "\n".join([PARAMS, RING, HEADER, ROW]) + "\n"
    failure = final_failure(cut)
    assert failure is not None and failure["reason"] == INCOMPLETE
    # with its table finished the ring line is nothing at all
    assert final_failure("\n".join([PARAMS, RING, HEADER, ROW, TRAILER])) is None


def test_an_error_return_after_a_source_place_still_fails_a_run_with_no_table() -> None:
    for line in ("host:5111:5176 [2] NCCL INFO transport/net.cc:883 -> 3", "host:1:2 [0] NCCL INFO init.cc:1234 -> 2"):
        failure = final_failure(f"{INFO}\n{line}\n")
        assert failure is not None and failure["reason"] == RUN_FAILED, line


# ------------------------------------------------------------------ a cut closing rule

HEAD = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
"""


def test_a_table_whose_closing_rule_was_cut_after_its_column_mark_is_complete() -> None:
    result = parse_dcgm(_read(CUT_RULE))
    assert result.overall == "Pass"
    assert len(result.tests) == 20
    assert parse_dcgm(HEAD + "+---------------------------+----------------\n").overall == "Pass"


def test_a_table_cut_before_its_rule_or_inside_its_first_column_stays_incomplete() -> None:
    assert parse_dcgm(HEAD).overall == "Incomplete"
    # no column mark after the first: the cut may have fallen anywhere in the line
    assert parse_dcgm(HEAD + "+--------------------\n").overall == "Incomplete"


def test_a_cut_rule_does_not_close_a_table_whose_rows_go_on() -> None:
    text = (
        HEAD
        + "+---------------------------+----------------\n"
        + "| NVML Library              | Fail                                           |\n"
    )
    assert parse_dcgm(text).overall == "Fail"
    text = (
        HEAD
        + "+---------------------------+----------------\n"
        + "| NVML Library              | Pass                                           |\n"
    )
    assert parse_dcgm(text).overall == "Incomplete"


# ------------------------------------------------------------------ torchtitan's step N/TOTAL


def _torchtitan() -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "torchtitan-training")


def test_a_step_written_as_n_of_total_with_a_percentage_is_read() -> None:
    parsed = parse_training(_read(STEP_OF_TOTAL), _torchtitan())
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (1, 640, 640)
    assert parsed.last_line_loss == 6.2116
    line = "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 7/10  loss:  6.1384  memory: 49.66GiB(52.28%)  tflops: 339.16\n"
    parsed = parse_training(line, _torchtitan())
    assert parsed.last_line_iteration == 7 and parsed.tflops_lines == 1


def test_a_checkpoint_line_that_names_a_step_is_no_iteration() -> None:
    line = "[rank0]:2025-04-01 00:25:54,090 - root - INFO - Saving a full checkpoint at last step, step 644.\n"
    assert parse_training(line, _torchtitan()).iteration_lines == 0


# ------------------------------------------------------------------ Megatron-DeepSpeed forks

KEY_VALUE = REAL / "training" / "megatron-deepspeed-2024-alcf-key-equals-value-range-skipped-iterations-2-3-no-loss-token-dump-lines.txt"
HYPHEN_LOSS = (
    REAL
    / "training"
    / "megatron-deepspeed-2021-bigscience-pipe-3d-lm-hyphen-loss-loss-scale-minus-one-rank-memory-lines-49-iterations-cut.txt"
)


def _megatron_deepspeed() -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-deepspeed-training")


def test_an_iteration_line_of_key_value_fields_is_read() -> None:
    parsed = parse_training(_read(KEY_VALUE), _megatron_deepspeed())
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (2, 2, 3)
    assert parsed.skipped_iterations == 2 and parsed.last_line_loss is None
    assert parsed.steps[0].elapsed_time == pytest.approx(0.1068)
    line = (
        "[2024-09-16 23:09:09.050766][INFO][training_log:661] -  iteration=      12/  635782 | "
        "elapsed_time_per_iteration_ms=4000.5 | lm loss=2.5E+00 | number_of_skipped_iterations=  0 | "
        "number_of_nan_iterations=  0 | [LM]TFLOPs=150.25 | [DS]TFLOPs=160.00 |\n"
    )
    step = parse_training(line, _megatron_deepspeed()).steps[0]
    assert (step.iteration, step.elapsed_time, step.loss, step.tflops) == (12, pytest.approx(4.0005), 2.5, 150.25)


def test_a_token_dump_line_that_names_an_iteration_is_none() -> None:
    line = "[2024-09-16 23:09:09.059118][INFO][training:1083] - iteration=2 [0/8]: (torch.Size([4, 4097]))\n"
    assert parse_training(line, _megatron_deepspeed()).iteration_lines == 0


def test_a_loss_named_lm_hyphen_loss_is_the_training_loss() -> None:
    parsed = parse_training(_read(HYPHEN_LOSS), _megatron_deepspeed())
    assert parsed.last_line_iteration == 49 and parsed.last_line_loss == pytest.approx(7.747273)


# ------------------------------------------------------------------ launchers that start nothing

LOST_DAEMON = NCCL / "h100-k8s-2node-openmpi5-prte-lost-remote-daemon-ssh-refused-no-nccl-tests-line.txt"
NO_PROGRAM = NCCL / "deepops-2020-pyxis-srun-execve-all-reduce-perf-not-found-task-exit-2-ucx-error-no-nccl-tests-line.txt"


def test_a_launcher_that_lost_its_remote_daemon_fails_the_run() -> None:
    failure = final_failure(_read(LOST_DAEMON))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert "PRTE has lost communication with a remote daemon" in failure["message"]


def test_slurm_starting_no_program_fails_the_run_as_not_started() -> None:
    failure = final_failure(_read(NO_PROGRAM))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert failure["message"].startswith("the launcher did not start the run: slurmstepd: error: execve(): all_reduce_perf")


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: host-01: task 1: Exited with exit code 2",
        "ORTE was unable to reliably start one or more daemons.",
        "An ORTE daemon has unexpectedly failed after launch and before",
    ],
)
def test_other_launcher_reports_fail_a_run_that_finished_no_table(line: str) -> None:
    failure = final_failure(f"{INFO}\n{line}\n")
    assert failure is not None and failure["reason"] == RUN_FAILED and line[:30] in failure["message"]
    # a table that finished before the report stands
    assert final_failure("\n".join([PARAMS, HEADER, ROW, TRAILER, line])) is None


# ------------------------------------------------------------------ Megatron-LM 2019

COLONLESS = REAL / "training" / "megatron-lm-deepspeedexamples-2019-format-mp2-colonless-fields-stray-s-glued-first-iteration-overfit.txt"


def test_a_loss_printed_without_its_colon_is_read() -> None:
    megatron = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")
    parsed = parse_training(_read(COLONLESS), megatron)
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (6, 100, 600)
    assert [s.loss for s in parsed.steps][:2] == [pytest.approx(5.023855), pytest.approx(0.1112287)]
    # the validation line after training is no iteration, and its loss is not the training loss
    assert parsed.last_line_loss == pytest.approx(6.003926e-04)
