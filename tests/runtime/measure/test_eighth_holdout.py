"""The reader fix that the eighth real-output hold-out led to, and the limits it keeps.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the one behaviour the fix added. The input is a corpus file
under ``golden/measure/real/nccl/``: an ``all_reduce_perf`` job under Open MPI 5 whose processes
died in an MPI collective before nccl-tests printed a line
(https://github.com/NVIDIA/nccl-tests/issues/295). The launcher's closing report, ``prterun
noticed that process rank 1 ... exited on signal 6 (Aborted).``, was read as nothing at all, so
the measurement would have waited for its timeout; a log whose table never finished and that
holds such a report is now a failed run.
"""

from __future__ import annotations

from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import INCOMPLETE, RUN_FAILED
from tests.runtime.measure.nccl_reading import HEADER, PARAMS, ROW, TRAILER, assert_failed_before_any_row, final_failure, nccl_profile

PRTERUN = "prterun noticed that process rank 1 with PID 820212 on node neutron-nvidia exited on"
KILLED = "mpirun noticed that process rank 3 with PID 0 on node gpu-07 exited on signal 9 (Killed)."
ABORTED = "mpirun noticed that the job aborted, but has no info as to the process that caused that situation."
NONZERO = "mpirun detected that one or more processes exited with non-zero status, thus causing"
RULE = "--------------------------------------------------------------------------"


def test_open_mpi_5_reporting_a_rank_killed_by_a_signal_fails_the_run() -> None:
    assert_failed_before_any_row("openmpi5-prterun-signal-6-ofi-mtl-abort-before-header.txt", "noticed that process rank 1")


def test_the_death_report_counts_in_each_wording_and_behind_a_launcher_prefix() -> None:
    for line in (PRTERUN, KILLED, ABORTED, NONZERO, "0: " + KILLED, "[1,0]<stderr>:" + PRTERUN):
        failure = final_failure(f"{RULE}\n{line}\n{RULE}\n")
        assert failure is not None and failure["reason"] == RUN_FAILED, line


def test_a_death_during_a_cut_table_is_a_failed_run_not_an_unfinished_one() -> None:
    text = f"{PARAMS}\n#\n{HEADER}\n{ROW}\n{RULE}\n{KILLED}\n"
    failure = final_failure(text)
    assert failure is not None
    assert failure["reason"] == RUN_FAILED != INCOMPLETE
    assert "died" in failure["message"]


def test_only_a_death_before_any_finished_table_fails_the_run() -> None:
    # a rank that dies while the job tears down after a whole table leaves the table its measurement
    finished = f"{PARAMS}\n#\n{HEADER}\n{ROW}\n{TRAILER}{RULE}\n{KILLED}\n"
    parsed = parse_bandwidth(finished, nccl_profile())
    assert parsed.failure is None
    assert (parsed.row_count, parsed.avg_bus_bandwidth) == (1, 0.00123)
    # the same report before the run printed its table is a failed run
    failure = final_failure(f"{PARAMS}\n#\n{RULE}\n{KILLED}\n")
    assert failure is not None and failure["reason"] == RUN_FAILED
