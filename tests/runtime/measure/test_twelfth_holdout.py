"""The reader fixes the twelfth real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the behaviours the fixes added. The inputs are corpus files:

- under ``nccl/``, two output files of a 512-rank all_gather job on ALCF Polaris whose launcher,
  Cray PALS ``aprun``, never started the program: ``launch failed on x3006c0s1b1n0: Couldn't
  allocate a port for PMI to use`` and ``start failed on x3006c0s1b1n0: CXI alloc failed on
  cxi0: request exceeds ACs limits``
  (https://github.com/argonne-lcf/alcf-nccl-tests/blob/d8ff6d3bdc403d967c0fc80bd9018893d0ae3ae9/results_polaris/nccl_2_18/n128.g4.2024-04-29-18-31-53/all_gather_output.dat.1
  and ``.dat.3``). Both read as nothing at all (``NoDataCollected``, no reason given); a PALS
  refusal now fails the run as not started, as Open MPI's and Slurm's do;
- under ``nccl/``, two pods with SR-IOV NICs whose only output is UCX failing to connect Open
  MPI's processes (``ib_device.c:1380 UCX  ERROR   ibv_create_ah(...) for RC DEVX QP connect on
  mlx5_15 failed: No such device``, https://github.com/NVIDIA/nccl-tests/issues/327), read as
  nothing at all too; a finished log with a UCX error and no finished table now fails the run
  quoting it. A running pod's log is left alone (UCX may fall back to another transport), and a
  table that finished after a UCX error stands;
- under ``training/``, a Megatron core README that quotes its iteration lines cut after the
  TFLOP/s figure (``... | throughput per GPU (TFLOP/s/GPU): 68.6`` with no closing ``|``,
  https://github.com/haok1402/megatron-deepseek-v2-lite/blob/c2480bbcbf6e8a65dc2dc64bff79c93536606037/README.md):
  the built-in ``megatron-training`` profile reads the steps but not the figure, and is left so
  (the corpus entry is ``pending``): a line ending on its figure cannot be told from one a read
  cut inside it, and only the closing bar proves the figure whole.

From the second batch, under ``training/``: a torchtitan Llama 3 70B run under pipeline
parallelism whose rank 0 holds no loss prints ``loss: -1.0000`` on every step
(https://github.com/pytorch/torchtitan/issues/1232); the built-in ``torchtitan-training`` profile
took only a loss of zero or more, so it read no step at all. The placeholder is now matched and
left out: the step, its time and its TFLOP/s figure are read, its loss is not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import RUN_FAILED
from nvcre.runtime.measure.training import parse_training
from tests.runtime.measure.nccl_reading import HEADER, NCCL, PARAMS, ROW, TRAILER, final_failure, nccl_profile

PMI_PORT = NCCL / "polaris-a100-aprun-pals-512rank-launch-failed-pmi-port-no-nccl-tests-line.txt"
CXI_ALLOC = NCCL / "polaris-a100-aprun-aws-ofi-512rank-start-failed-cxi-alloc-exceeds-acs-limits-no-nccl-tests-line.txt"
UCX = NCCL / "k8s-sriov-pods-ucx-ibv-create-ah-no-such-device-before-nccl-starts-no-nccl-tests-line.txt"
PP_PLACEHOLDER = NCCL.parent / "training" / "torchtitan-2025-pp-llama3-70b-rank0-loss-minus-one-placeholder-shell-trace-steps-1-to-4.txt"
CUT_AFTER_TFLOPS = NCCL.parent / "training" / "megatron-core-2025-deepseek-v2-lite-h100-lines-cut-after-tflops-no-loss.txt"
INFO = "host:1884:2298 [0] NCCL INFO Channel 00/0 : 1[0] -> 2[0] [receive] via NET/IBext_v8/1"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ Cray PALS refusals


@pytest.mark.parametrize(
    ("path", "quoted"),
    [
        (PMI_PORT, "launch failed on x3006c0s1b1n0: Couldn't allocate a port for PMI to use"),
        (CXI_ALLOC, "start failed on x3006c0s1b1n0: CXI alloc failed on cxi0"),
    ],
)
def test_a_pals_refusal_to_start_the_job_fails_the_run_as_not_started(path: Path, quoted: str) -> None:
    failure = final_failure(_read(path))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert failure["message"].startswith(f"the launcher did not start the run: {quoted}")


def test_a_pals_refusal_only_counts_where_a_line_begins_with_it_and_no_table_finished() -> None:
    # a mention inside another line is not PALS speaking
    assert final_failure(f"{INFO}\nnote: a launch failed on purpose earlier\n") is None
    # a table that finished before the line stands
    assert final_failure("\n".join([PARAMS, HEADER, ROW, TRAILER, "launch failed on x1: Couldn't allocate a port for PMI to use"])) is None


# ------------------------------------------------------------------ a UCX error


def test_a_finished_log_with_a_ucx_error_and_no_table_fails_quoting_it() -> None:
    failure = final_failure(_read(UCX))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert failure["message"].startswith("MPI's transport failed and no result table finished: ib_device.c:1380 UCX  ERROR")


def test_a_running_pods_ucx_error_is_not_a_failure_yet() -> None:
    parsed = parse_bandwidth(_read(UCX), nccl_profile())
    assert "failure" not in status_fields(parsed, final=False)


def test_a_table_that_finished_after_a_ucx_error_stands() -> None:
    line = "[1700000000.1] [host:12:0] ib_iface.c:1032 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory"
    assert final_failure("\n".join([line, PARAMS, HEADER, ROW, TRAILER])) is None


# ------------------------------------------------------------------ a line cut after its TFLOP/s


def test_an_iteration_line_that_ends_on_its_tflops_figure_gives_the_step_but_not_the_figure() -> None:
    megatron = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")
    parsed = parse_training(_read(CUT_AFTER_TFLOPS), megatron)
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (3, 220, 230)
    assert [s.elapsed_time for s in parsed.steps] == [pytest.approx(61.2728), pytest.approx(61.1954), pytest.approx(61.112)]
    # the same line cut inside its figure: nothing tells the two apart, so neither is taken
    assert all(s.tflops is None for s in parsed.steps)
    cut = parse_training(_read(CUT_AFTER_TFLOPS).splitlines()[0][:-2], megatron)
    assert [s.tflops for s in cut.steps] == [None]


# ------------------------------------------------------------------ torchtitan's loss placeholder


def _torchtitan() -> dict[str, object]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "torchtitan-training")


def test_a_pipeline_ranks_loss_placeholder_gives_the_step_without_a_loss() -> None:
    parsed = parse_training(_read(PP_PLACEHOLDER), _torchtitan())
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (4, 1, 4)
    # the first line only sets the clock; each later one is timed from the line before
    assert [s.iteration for s in parsed.steps] == [2, 3, 4]
    assert all(s.loss is None for s in parsed.steps)
    assert [s.tflops for s in parsed.steps] == [pytest.approx(1.81)] * 3


LINE = "[rank0]:[titan] 2025-06-16 22:30:{second},322 - root - INFO - step: {step}  loss: {loss}  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"


@pytest.mark.parametrize(("loss", "read"), [("-1", None), ("-1.0", None), ("6.1384", 6.1384), ("-1.5", "no step"), ("-10.0000", "no step")])
def test_only_minus_one_is_the_placeholder(loss: str, read: object) -> None:
    text = LINE.format(second="50", step=199, loss="6.2") + "\n" + LINE.format(second="51", step=200, loss=loss)
    parsed = parse_training(text, _torchtitan())
    if read == "no step":
        assert parsed.iteration_lines == 1
    else:
        assert parsed.iteration_lines == 2 and [s.iteration for s in parsed.steps] == [200]
        assert parsed.steps[0].loss == (pytest.approx(read) if read is not None else None)
