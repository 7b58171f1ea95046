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
