"""The reader fix that the seventh real-output hold-out led to, and the limits it keeps.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the one behaviour the fix added. The input is a corpus file
under ``golden/measure/real/nccl/``: Open MPI's refusal to start an ``all_reduce_perf`` job that
asked for more slots than the hosts offered, quoted as test data by a cluster health-check suite
(https://github.com/facebookresearch/gcm, ``gcm/tests/health_checks_tests/test_check_nccl.py``).
No nccl-tests line follows it, so the run never started: it is failed at once, not left to wait
for its measurement timeout.
"""

from __future__ import annotations

from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import CORRUPTED, RUN_FAILED
from tests.runtime.measure.nccl_reading import HEADER, NCCL, PARAMS, ROW, TRAILER, assert_failed_before_any_row, final_failure, nccl_profile

SLOTS = "There are not enough slots available in the system to satisfy the 16"
UNABLE = "mpirun was unable to launch the specified application as it could not access"


def test_open_mpi_refusing_to_start_the_job_fails_the_run() -> None:
    assert_failed_before_any_row("openmpi-not-enough-slots-no-nccl-output.txt", "not enough slots")


def test_the_refusal_counts_behind_a_launcher_tag_and_in_its_other_wording() -> None:
    for line in (SLOTS, "[1,0]<stderr>:" + SLOTS, "0: " + SLOTS, UNABLE):
        failure = final_failure("--------------------------------------------------------------------------\n" + line + "\n")
        assert failure is not None and failure["reason"] == RUN_FAILED, line


def test_a_refusal_before_a_run_that_then_finished_leaves_the_finished_table_its_measurement() -> None:
    # a retried launch whose second attempt printed a whole table: the table is the measurement
    text = f"{SLOTS}\n{PARAMS}\n#\n{HEADER}\n{ROW}\n{TRAILER}"
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.failure is None
    assert (parsed.row_count, parsed.avg_bus_bandwidth) == (1, 0.00123)


def test_a_refusal_with_a_cut_table_after_it_is_still_a_failed_run() -> None:
    failure = final_failure(f"{SLOTS}\n{PARAMS}\n#\n{HEADER}\n{ROW}\n")
    assert failure is not None and failure["reason"] == RUN_FAILED


def test_prose_about_slots_without_the_launchers_sentence_is_an_ordinary_line() -> None:
    for line in (
        "Either request fewer slots for your application, or make more slots",
        'A "slot" is the Open MPI term for an allocatable unit where we can',
        "the hostfile lists 8 slots per node",
    ):
        assert final_failure(line + "\n") is None, line


# The second fix: a table pasted by documentation that stripped every '#' (GCP A4 run by dstack,
# https://github.com/dstackai/dstack, mkdocs/docs/examples/clusters/gcp.md) heads its check
# columns 'wrong', not '#wrong'. The corpus property test (a wrong cell set in each row of each
# real table) found that such a column was not read, so a corrupted row would pass.

A4 = "gcp-a4-b200-dstack-hash-stripped-indented-elided-small-sizes.txt"
BARE_HEADER = "      size         count      type   redop    root     time   algbw   busbw  wrong     time   algbw   busbw  wrong"
BARE_ROW = "   8388608       2097152     float     sum      -1    156.9   53.47  100.25      {oop}    167.6   50.06   93.86      {ip}"
BARE_TRAILER = "Out of bounds values : 0 OK\nAvg bus bandwidth    : 100.0\n"


def test_a_wrong_cell_under_a_header_without_its_hash_fails_as_corrupted() -> None:
    for oop, ip in (("3", "0"), ("0", "3")):
        text = f"{PARAMS.lstrip('# ')}\n{BARE_HEADER}\n{BARE_ROW.format(oop=oop, ip=ip)}\n{BARE_TRAILER}"
        failure = final_failure(text)
        assert failure is not None and failure["reason"] == CORRUPTED, (oop, ip)


def test_the_real_hash_stripped_table_with_one_wrong_cell_fails_as_corrupted() -> None:
    text = (NCCL / A4).read_text(encoding="utf-8")
    assert final_failure(text) is None
    lines = text.splitlines()
    index = next(i for i, line in enumerate(lines) if line.split()[:1] == ["134217728"])
    cells = lines[index].split()
    assert cells[8] == "0"
    lines[index] = lines[index].replace("  394.17      0", "  394.17      5", 1)
    failure = final_failure("\n".join(lines) + "\n")
    assert failure is not None and failure["reason"] == CORRUPTED


def test_a_bare_wrong_word_outside_a_size_count_header_begins_no_table() -> None:
    # only a column header (its first two words 'size count') names the check columns
    text = f"{PARAMS}\n#\n{HEADER}\n{ROW}\nsomething went wrong in the launcher\n{TRAILER}"
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.failure is None and parsed.row_count == 1
