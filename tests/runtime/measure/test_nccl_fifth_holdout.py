"""The nccl reader fixes that the fifth real-output hold-out led to, each on its own.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading of every artefact;
these tests pin the single behaviour each fix added and the limits it keeps. The inputs are
corpus files under ``golden/measure/real/nccl/`` (their public sources are in the manifest): a
two-node Socket run pasted from the column header's units line on, with NCCL INFO lines and no
row after it (https://github.com/NVIDIA/nccl-tests/issues/284), and an EKS MPIJob table whose
author elided rows (https://github.com/aws-ia/terraform-aws-eks-blueprints, the EFA example).
"""

from __future__ import annotations

from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import INCOMPLETE
from tests.runtime.measure.nccl_reading import NCCL, final_failure, nccl_profile

UNITS = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
ROW = "     1048576        262144     float     sum      -1    583.4    1.80    1.80      0    579.6    1.81    1.81      0"


# ------------------------------------------------------------------ the units line begins a table


def test_a_piece_from_the_units_line_on_with_no_row_is_an_unfinished_table() -> None:
    text = (NCCL / "socket-two-node-info-inside-table-header-cut.txt").read_text(encoding="utf-8")
    parsed = parse_bandwidth(text, nccl_profile())
    assert (parsed.row_count, parsed.transport) == (0, ("Socket",))
    failure = final_failure(text)
    assert failure is not None
    assert failure["reason"] == INCOMPLETE
    assert "stopped after a header" in failure["message"]


def test_the_units_line_counts_behind_a_launcher_tag_and_without_its_hash() -> None:
    for line in (UNITS, "[1,0]<stdout>:" + UNITS, "0: " + UNITS, UNITS.lstrip("#"), "  " + UNITS.lstrip("#")):
        failure = final_failure(line + "\nhost:1:2 [0] NCCL INFO Connected all rings\n")
        assert failure is not None and failure["reason"] == INCOMPLETE, line


def test_a_units_line_followed_by_rows_and_the_average_is_a_finished_table() -> None:
    text = f"{UNITS}\n{ROW}\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.15327\n"
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.failure is None
    assert (parsed.row_count, parsed.avg_bus_bandwidth) == (1, 1.15327)


def test_the_elided_eks_table_with_its_average_is_a_measurement() -> None:
    # the units line opens the table, the average closes it: '...' lines in between change nothing
    text = (NCCL / "t4-eks-efa-tag-output-elided-rows-avg.txt").read_text(encoding="utf-8")
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.failure is None
    assert (parsed.row_count, parsed.results[-1].size_bytes, parsed.avg_bus_bandwidth) == (5, 4194304, 1.15327)


def test_lines_that_only_look_like_units_do_not_begin_a_table() -> None:
    # a sentence or a different tool's units must not turn an INFO-only log into a failed run
    for line in (
        "(B) is the size in bytes of the message",
        "#  (B)(elements) (us)",
        "size(B)    count(elems)     type    time(us)    algbw(GB/s)    busbw(GB/s)",
        "host:1:2 [0] NCCL INFO (B) (elements)",
    ):
        assert final_failure(line + "\nhost:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/IB/0\n") is None, line


# ------------------------------------------------------------------ the test's own bandwidth floor

# nccl-tests and rccl-tests append OK or FAILED to the average when NCCL_TESTS_MIN_BW is set, and
# exit non-zero on FAILED (common.cu: '# Avg bus bandwidth    : %g %s').


def _eks_with_average(suffix: str) -> str:
    text = (NCCL / "t4-eks-efa-tag-output-elided-rows-avg.txt").read_text(encoding="utf-8")
    assert text.endswith(": 1.15327\n")
    return text[: -len("\n")] + suffix + "\n"


def test_an_average_marked_failed_is_a_failed_run_with_its_rows_kept() -> None:
    parsed = parse_bandwidth(_eks_with_average(" FAILED"), nccl_profile())
    assert parsed.failure is not None
    assert parsed.failure.reason == "CollectiveRunFailed"
    assert "NCCL_TESTS_MIN_BW" in parsed.failure.message and "1.15327 FAILED" in parsed.failure.message
    assert (parsed.row_count, parsed.avg_bus_bandwidth) == (5, 1.15327)
    fields = status_fields(parsed, final=True)
    assert fields["failure"]["reason"] == "CollectiveRunFailed" and len(fields["results"]) == 5


def test_an_average_marked_failed_without_its_hash_is_a_failed_run() -> None:
    text = f"{UNITS}\n{ROW}\n Out of bounds values : 0 OK\n Avg bus bandwidth    : 0.90485 FAILED\n"
    failure = final_failure(text)
    assert failure is not None and failure["reason"] == "CollectiveRunFailed"


def test_an_average_marked_ok_or_unmarked_is_a_measurement() -> None:
    for suffix in ("", " OK", " "):
        parsed = parse_bandwidth(_eks_with_average(suffix), nccl_profile())
        assert parsed.failure is None, suffix
        assert parsed.avg_bus_bandwidth == 1.15327


def test_corrupted_data_still_outranks_a_failed_average() -> None:
    text = f"{UNITS}\n{ROW}\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.90485 FAILED\n"
    failure = final_failure(text)
    assert failure is not None and failure["reason"] == "CollectiveDataCorrupted"
