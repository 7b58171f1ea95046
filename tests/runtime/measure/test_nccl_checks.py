"""A corrupted, failed or unfinished nccl-tests run is never read as a valid measurement.

Each input is a real nccl-tests output copied (trimmed) from the public report named beside it.
Where a public report only showed the failing cells in a screenshot, the input says exactly
which cell was edited and why.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler.api.measurements import BandwidthMeasurementStatus
from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure import nccl
from nvcre.runtime.measure.nccl_checks import CORRUPTED, INCOMPLETE, REASONS, RUN_FAILED

PROFILE = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")

# https://github.com/NVIDIA/nccl-tests/issues/37 (V100 x8, NCCL 2.4/2.5, nccl-tests before 2.13:
# no redop/root columns, a floating "error" column, trailer lines without "#").
ALLGATHER_OOB_FAILED = """\
all_gather_perf -g 8 -b 4294967296 -e 4294967296 -n 100
                                             out-of-place                       in-place
       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00
 Out of bounds values : 2 FAILED
 Avg bus bandwidth    : 128.942
"""

# https://github.com/aws-samples/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/README.md
# (p5.48xlarge x2, NCCL 2.18.5, MPIJob launcher log with Open MPI's --tag-output prefix). The
# #wrong cells of the 1 GiB row were edited from 0 to 237858 to model a corrupting fabric: the
# public reports of such runs (for example https://github.com/NVIDIA/nccl/issues/1199) show the
# table only as a screenshot.
MPIJOB_HEADER = """\
[1,0]<stdout>:#                                                              out-of-place                       in-place          
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
"""
MPIJOB_ROWS = """\
[1,0]<stdout>:   536870912     134217728     float     sum      -1   3608.0  148.80  279.00      0   3599.7  149.14  279.64      0
[1,0]<stdout>:  1073741824     268435456     float     sum      -1   6426.3  167.09  313.29      0   6426.1  167.09  313.29      0
[1,0]<stdout>:  2147483648     536870912     float     sum      -1   9197.5  233.49  437.79      0   9195.2  233.54  437.89      0
"""
MPIJOB_TRAILER = """\
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 52.9753
"""
CORRUPTED_ROW = MPIJOB_ROWS.replace("313.29      0   6426.1", "313.29 237858   6426.1").replace("313.29      0\n", "313.29 237858\n")

# https://github.com/NVIDIA/nccl-tests/issues/322 (rows, then every rank's failure line; no trailer)
ROWS_THEN_CUDA_ERROR = """\
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1    19355   55.48  110.84      0    19189   55.96  111.80      0
  2147483648     536870912     float     sum      -1    20218  106.22  212.23      0    19883  108.01  215.80      0
HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '
 .. HCA-128 pid 757466: Test failure common.cu:915
"""

# https://github.com/NVIDIA/nccl-tests/issues/219 (the run dies before its first row)
NCCL_FAILURE_NO_TABLE = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 3740409 on fengyun416 device  0 [0x01] NVIDIA RTX A6000
fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '
 .. fengyun pid 3164639: Test failure common.cu:844
"""

# https://github.com/NVIDIA/nccl-tests/issues/66
CUDA_FAILURE_NO_TABLE = "Test CUDA failure common.cu:730 'unknown error'\n"

# https://github.com/aws/aws-ofi-nccl/issues/1020 (p5.48xlarge, NCCL 2.27.7, aws-ofi-nccl 1.14.0)
NCCL_WARN_NO_TABLE = (
    "[2025-10-16 22:16:08] ip-172-31-3-90:1929:1937 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call failed:"
    " No data available\n"
)


def _parse(text: str) -> nccl.BandwidthParse:
    return nccl.parse_bandwidth(text, PROFILE)


def test_out_of_bounds_failed_is_corruption_whatever_the_bandwidth() -> None:
    parsed = _parse(ALLGATHER_OOB_FAILED)
    assert parsed.failure is not None and parsed.failure.reason == CORRUPTED
    assert "Out of bounds values : 2 FAILED" in parsed.failure.message
    # the row stays visible: 129 GB/s busbw, read from a table without redop/root columns
    assert [(r.size_bytes, r.bus_bw) for r in parsed.results] == [(4294967296, 129.05)]
    fields = nccl.status_fields(parsed)
    assert fields["failure"]["reason"] == CORRUPTED and fields["results"][0]["busBW"] == "129.05"


def test_a_nonzero_wrong_cell_is_corruption_and_is_counted() -> None:
    parsed = _parse(MPIJOB_HEADER + CORRUPTED_ROW + MPIJOB_TRAILER)
    assert parsed.failure is not None and parsed.failure.reason == CORRUPTED
    assert parsed.wrong_elements == 2 * 237858
    assert "475716 wrong elements in 1 rows (first at message size 1073741824 B)" in parsed.failure.message
    assert len(parsed.results) == 3  # every row still read


def test_wrong_cells_are_found_without_the_header_too() -> None:
    parsed = _parse(CORRUPTED_ROW + MPIJOB_TRAILER)
    assert parsed.failure is not None and parsed.failure.reason == CORRUPTED


def test_a_clean_table_has_no_failure() -> None:
    parsed = _parse(MPIJOB_HEADER + MPIJOB_ROWS + MPIJOB_TRAILER)
    assert parsed.failure is None and parsed.wrong_elements == 0
    assert parsed.avg_bus_bandwidth == 52.9753
    assert "failure" not in nccl.status_fields(parsed)


def test_a_failure_line_after_rows_fails_the_run() -> None:
    parsed = _parse(ROWS_THEN_CUDA_ERROR)
    assert parsed.failure is not None and parsed.failure.reason == RUN_FAILED
    assert "Test NCCL failure common.cu:1204 'unhandled cuda error" in parsed.failure.message
    assert [r.size_bytes for r in parsed.results] == [1073741824, 2147483648]


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        (NCCL_FAILURE_NO_TABLE, "Test NCCL failure common.cu:959 'internal error"),
        (CUDA_FAILURE_NO_TABLE, "Test CUDA failure common.cu:730 'unknown error'"),
        (NCCL_WARN_NO_TABLE, "NCCL WARN NET/OFI OFI fi_getinfo() call failed"),
    ],
    ids=["nccl-failure", "cuda-failure", "nccl-warn-failed"],
)
def test_a_failure_with_no_table_is_a_failed_measurement(text: str, quoted: str) -> None:
    parsed = _parse(text)
    assert parsed.results == ()
    assert parsed.failure is not None and parsed.failure.reason == RUN_FAILED and quoted in parsed.failure.message
    # the measurement records the failure even with no row at all (not "no data")
    assert nccl.status_fields(parsed) == {"failure": parsed.failure.to_status()}


def test_a_warn_failed_line_before_a_finished_table_is_not_a_failure() -> None:
    parsed = _parse(NCCL_WARN_NO_TABLE + MPIJOB_HEADER + MPIJOB_ROWS + MPIJOB_TRAILER)
    assert parsed.failure is None


def test_a_table_that_never_finished_is_incomplete_on_the_final_read_only() -> None:
    parsed = _parse(MPIJOB_HEADER + MPIJOB_ROWS)
    assert parsed.failure is not None and parsed.failure.reason == INCOMPLETE
    assert "stopped after 3 rows (last message size 2147483648 B)" in parsed.failure.message
    assert nccl.status_fields(parsed)["failure"]["reason"] == INCOMPLETE
    assert "failure" not in nccl.status_fields(parsed, final=False)  # a running Job's table is not finished yet
    assert len(nccl.status_fields(parsed, final=False)["results"]) == 3


def test_the_failure_holds_across_log_windows() -> None:
    text = MPIJOB_HEADER + CORRUPTED_ROW + MPIJOB_TRAILER
    lines = text.splitlines(keepends=True)
    pieces = ["".join(lines[:2]), "".join(lines[2:5]), "".join(lines[5:])]
    assert _parse(pieces).failure == _parse(text).failure  # type: ignore[arg-type]


def test_status_fields_validate_against_the_api_model() -> None:
    for text in (ALLGATHER_OOB_FAILED, ROWS_THEN_CUDA_ERROR, NCCL_WARN_NO_TABLE, MPIJOB_HEADER + MPIJOB_ROWS):
        fields: dict[str, Any] = nccl.status_fields(_parse(text))
        status = BandwidthMeasurementStatus.model_validate(fields)
        assert status.failure is not None and status.failure.reason in REASONS


def test_the_api_knows_every_reason_the_parser_gives() -> None:
    reasons = BandwidthMeasurementStatus.model_json_schema()["$defs"]["BandwidthFailure"]["properties"]["reason"]["enum"]
    assert sorted(reasons) == sorted(REASONS)


def test_a_hostile_failure_line_is_quoted_bounded() -> None:
    parsed = _parse("Test NCCL failure " + "\x1b[2J" + "x" * 5000 + "\n")
    assert parsed.failure is not None
    assert len(parsed.failure.message) <= 512 and "\x1b" not in parsed.failure.message
