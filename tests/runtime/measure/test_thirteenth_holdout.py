"""The reader fixes the thirteenth real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the behaviours the fixes added. The inputs are corpus files
under ``golden/measure/real/nccl/``:

- two containers on one server whose only output is UCC's shared-memory team failing under
  Open MPI (``tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg, errno: Invalid
  argument``, https://github.com/NVIDIA/nccl/issues/1400). UCC and UCX log through the same
  format (``[time] [host:pid:thread] file.c:line COMPONENT LEVEL message``), but only UCX's own
  ``UCX  ERROR`` was recognised, so the log read as nothing at all. Any component's ``ERROR`` or
  ``FATAL`` in that format now fails a finished log that finished no table, as the UCX error did;
- an MPIJob launcher whose ``kubexec.sh`` could not find ``kubectl`` in its image, so no
  ``orted`` daemon started on any of the 111 workers (``/etc/mpi/kubexec.sh: 11:
  /opt/kube/kubectl: not found``, then ``command terminated with exit code 1``,
  https://github.com/kubeflow/mpi-operator/issues/501). It read as nothing at all; kubectl's
  report that the command it ran on a worker exited non-zero now fails an ended log that finished
  no table (a running one is left alone: a launcher may retry an exec while its workers start).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import RUN_FAILED
from tests.runtime.measure.nccl_reading import HEADER, NCCL, PARAMS, ROW, TRAILER, final_failure, nccl_profile

TL_SHM = NCCL / "containers-same-server-mpirun-ucc-tl-shm-error-attach-shmseg-no-nccl-tests-line.txt"
KUBEXEC = NCCL / "mpijob-111-procs-kubexec-kubectl-not-found-orted-not-started-shell-trace-no-nccl-tests-line.txt"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ UCC / UCX log errors


def test_a_finished_log_with_a_ucc_component_error_and_no_table_fails_quoting_it() -> None:
    failure = final_failure(_read(TL_SHM))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert failure["message"].startswith("MPI's transport failed and no result table finished: [1723337199.099229]")
    assert "tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg" in failure["message"]


def test_a_running_pods_ucc_error_is_not_a_failure_yet() -> None:
    parsed = parse_bandwidth(_read(TL_SHM), nccl_profile())
    assert "failure" not in status_fields(parsed, final=False)


@pytest.mark.parametrize(
    "line",
    [
        "[1700000000.1] [node-1:12:0]     ucc_team.c:452  UCC  ERROR failed to create tl context",
        "[1700000000.1] [node-1:12:0]   cl_basic_team.c:93   CL_BASIC ERROR no tl teams were created",
        "[1,0]<stderr>:[1700000000.1] [node-1:12:0] tl_ucp_team.c:71 TL_UCP FATAL out of memory",
        "[1700000000.1] [node-1:12:0]     ucp_worker.cc:1866 UCX  ERROR failed to create worker",
    ],
)
def test_any_component_error_in_the_ucx_log_format_counts(line: str) -> None:
    failure = final_failure(line + "\n")
    assert failure is not None and failure["reason"] == RUN_FAILED


@pytest.mark.parametrize(
    "line",
    [
        # UCX's warnings and diagnostics are not errors
        "[1700000000.1] [node-1:12:0]     ucp_context.c:1136 UCX  WARN  network device 'mlx5_0:1' is not available",
        "[1700000000.1] [node-1:12:0]   tl_shm_team.c:617  TL_SHM DIAG  segment reused",
        # ERROR in a line of another shape: no source position before a component name
        "ERROR: something else entirely",
        "the file ucc_team.c:452 mentions an ERROR in passing",
    ],
)
def test_other_lines_naming_an_error_do_not(line: str) -> None:
    assert final_failure(line + "\n") is None


def test_a_table_that_finished_after_a_ucc_error_stands() -> None:
    line = "[1723337199.099229] [ai-worker03:1382 :0]     tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg, errno: Invalid argument"
    assert final_failure("\n".join([line, PARAMS, HEADER, ROW, TRAILER])) is None


# ------------------------------------------------------------------ kubectl exec on a worker


def test_a_launcher_whose_worker_command_exited_non_zero_fails_the_run() -> None:
    failure = final_failure(_read(KUBEXEC))
    assert failure is not None and failure["reason"] == RUN_FAILED
    assert (
        failure["message"]
        == "a command the launcher ran on a worker failed and no result table finished: command terminated with exit code 1"
    )


def test_a_running_launchers_failed_exec_is_not_a_failure_yet() -> None:
    # a launcher may retry an exec while its workers come up; only the ended log decides
    parsed = parse_bandwidth(_read(KUBEXEC), nccl_profile())
    assert "failure" not in status_fields(parsed, final=False)


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("command terminated with exit code 137\n", True),
        ("[1,0]<stderr>:command terminated with exit code 2\n", True),
        ("command terminated with exit code 0\n", False),
        ("command terminated with exit code\n", False),
        ("\n".join([PARAMS, HEADER, ROW, TRAILER, "command terminated with exit code 1"]), False),
    ],
)
def test_only_a_non_zero_exit_of_the_worker_command_with_no_finished_table_fails(text: str, failed: bool) -> None:
    assert (final_failure(text) is not None) is failed


# ------------------------------------------------------------------ the fourth batch
#
# - under ``nccl/``, a SkyPilot run on Ray whose every line, ``#`` lines included, carries Ray's
#   tag of the worker that printed it (``(head, rank=0, pid=21170) # nThread 1 ...``,
#   https://github.com/skypilot-org/skypilot/pull/3217), cut in its rank list: the tag hid the
#   run's header, so the cut read as nothing rather than as unfinished. Ray's tag is now cut like
#   the MPI launchers' tags;
# - under ``training/``, AMD Primus's Megatron trainer, which from its third iteration prints the
#   step time and TFLOP/s as ``current/average`` (``elapsed time per iteration (ms): 729.5/729.5 |``,
#   https://github.com/AMD-AGI/Primus): the built-in ``megatron-training`` profile read only the
#   first two iterations. The current figure is now read and the average after the slash skipped.

RAY_CUT = NCCL / "skypilot-ray-prefixed-gcp-a100-2node-g8-header-cut-in-rank-list.txt"


def test_rays_worker_tag_is_cut_so_a_run_cut_in_its_header_reads_unfinished() -> None:
    failure = final_failure(_read(RAY_CUT))
    assert failure is not None and failure["reason"] == "CollectiveTableIncomplete"


@pytest.mark.parametrize(
    ("line", "body"),
    [
        ("(head, rank=0, pid=21170) # nThread 1 nGpus 8", "# nThread 1 nGpus 8"),
        ("(worker1, rank=1, pid=20075, ip=10.164.15.193) Warning: x", "Warning: x"),
        ("(RayTrainWorker pid=812, ip=10.0.0.5) step: 1  loss: 2.0", "step: 1  loss: 2.0"),
        ("  (pid=12) text", "text"),
        # no pid field, a pid that is no number, a parenthesis inside: no tag
        ("(not a tag) text", "(not a tag) text"),
        ("(pid=abc) text", "(pid=abc) text"),
        ("(a (pid=1) b) c", "(a (pid=1) b) c"),
        ("(pid=1)text", "(pid=1)text"),
    ],
)
def test_only_rays_tag_shape_is_cut(line: str, body: str) -> None:
    from nvcre.runtime.measure.profile import strip_launcher_prefix

    assert strip_launcher_prefix(line) == body


MEGATRON_SLASH = (
    " [2026-05-07 13:08:18.021756] iteration        3/      10 | consumed samples:           48 | "
    "elapsed time per iteration (ms): 729.5/{avg} | throughput per GPU (TFLOP/s/GPU): 12.6/{tavg}  | "
    "learning rate: 7.938927E-06 | global batch size:    16 | lm loss: 1.182674E+01 | loss scale: 1.0 |"
)


def _megatron() -> dict[str, object]:
    from nvcre.compiler.logprofiles import builtin_logprofiles

    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")


def test_a_current_and_average_figure_gives_the_current_one() -> None:
    from nvcre.runtime.measure.training import parse_training

    first = " [2026-05-07 13:08:17.292300] iteration        2/      10 | consumed samples:           32 | elapsed time per iteration (ms): 731.0 | lm loss: 1.19E+01 |"
    parsed = parse_training(first + "\n" + MEGATRON_SLASH.format(avg="712.3", tavg="13.1") + "\n", _megatron())
    assert parsed.iteration_lines == 2
    step = parsed.steps[-1]
    assert (step.iteration, step.elapsed_time, step.tflops) == (3, pytest.approx(0.7295), pytest.approx(12.6))


@pytest.mark.parametrize("cut", ["729.5/", "729.5/71", "729.5/712.3"])
def test_a_line_cut_inside_the_average_gives_no_step_time(cut: str) -> None:
    from nvcre.runtime.measure.training import parse_training

    line = MEGATRON_SLASH.format(avg="712.3", tavg="13.1")
    parsed = parse_training(line[: line.index("729.5/") + len(cut)] + "\n", _megatron())
    assert all(step.iteration != 3 for step in parsed.steps)
