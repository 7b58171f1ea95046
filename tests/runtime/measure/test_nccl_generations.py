"""nccl-tests tables of every generation, launcher prefixes and whole NCCL network names.

Every input is a real output copied (trimmed) from the public page named beside it.
"""

from __future__ import annotations

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure import nccl

PROFILES = {p["metadata"]["name"]: p for p in builtin_logprofiles()}


def _parse(text: str, profile: str = "nccl-bandwidth") -> nccl.BandwidthParse:
    return nccl.parse_bandwidth(text, PROFILES[profile])


# https://github.com/NVIDIA/nccl/issues/340 (NCCL 2.6.4): all_reduce without redop or root columns
NO_REDOP = """\
       65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    2.37  0e+00
      131072         16384   float    23.07    2.84    2.84  0e+00    18.39    3.56    3.56  0e+00
   134217728      16777216   float   3298.6   20.34   20.34  0e+00   3070.3   21.86   21.86  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 6.6972 
"""

# https://github.com/NVIDIA/nccl-tests/issues/176: redop but no root; "error" is a deviation, not a count
REDOP_NO_ROOT = """\
#                                                       out-of-place                       in-place          
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
        4096          1024     float     sum    93.73    0.04    0.09  1e-06    93.15    0.04    0.09  1e-06
      131072         32768     float     sum    120.9    1.08    2.15  1e-06    117.4    1.12    2.22  1e-06
"""

# https://github.com/NVIDIA/dgx-spark-playbooks/pull/103 (nccl-tests 2.20.0, NCCL 2.31)
VERSION_2_20 = """\
# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102
# Collective test starting: all_reduce_perf
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27       0
       16384          4096     float     sum      -1    31.67    0.52    0.52       0    30.75    0.53    0.53       0
"""

# https://github.com/NVIDIA/nccl-tests/issues/287 (RTX 5090): in-place validation off, "N/A" in #wrong
IN_PLACE_NA = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
    33554432       8388608     float    none      -1    19.56  1715.44    0.00      0     0.78  43046.10    0.00    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0 
"""

# https://github.com/NVIDIA/nccl-tests/issues/252 (A100, a table of large sizes whose times print as integers)
LARGE_SIZES = """\
   536870912     134217728     float     sum      -1    10052   53.41   93.46      0   9676.9   55.48   97.09      0
  8589934592    2147483648     float     sum      -1   158070   54.34   95.10      0   158561   54.17   94.80      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 95.3009
"""


def test_a_table_without_redop_or_root_is_read() -> None:
    parsed = _parse(NO_REDOP)
    assert [(r.size_bytes, r.alg_bw, r.bus_bw) for r in parsed.results] == [
        (65536, 1.98, 1.98),
        (131072, 2.84, 2.84),
        (134217728, 20.34, 20.34),
    ]
    assert parsed.failure is None and parsed.avg_bus_bandwidth == 6.6972


def test_a_table_with_redop_but_no_root_is_read_and_its_error_column_is_not_a_count() -> None:
    parsed = _parse(REDOP_NO_ROOT + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n")
    assert [(r.size_bytes, r.bus_bw) for r in parsed.results] == [(4096, 0.09), (131072, 2.15)]
    assert parsed.failure is None and parsed.wrong_elements == 0


def test_newer_tables_and_in_place_na_are_read_without_a_failure() -> None:
    newer = _parse(VERSION_2_20 + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.4\n")
    assert [r.size_bytes for r in newer.results] == [8192, 16384] and newer.failure is None
    na = _parse(IN_PLACE_NA)
    assert [(r.size_bytes, r.alg_bw) for r in na.results] == [(33554432, 1715.44)] and na.failure is None


def test_integer_times_of_large_sizes_do_not_shift_the_columns() -> None:
    parsed = _parse(LARGE_SIZES)
    assert [(r.size_bytes, r.alg_bw, r.bus_bw) for r in parsed.results] == [(536870912, 53.41, 93.46), (8589934592, 54.34, 95.1)]


@pytest.mark.parametrize("profile", ["nccl-bandwidth", "nccl-loopback"])
def test_both_builtin_profiles_read_every_generation(profile: str) -> None:
    for text in (NO_REDOP, REDOP_NO_ROOT, VERSION_2_20, IN_PLACE_NA, LARGE_SIZES):
        assert _parse(text, profile).results


# https://github.com/aws-samples/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/README.md
# (MPIJob launcher log: Open MPI --tag-output prefix on every line)
MPIJOB = """\
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:           0             0     float     sum      -1    15.51    0.00    0.00      0    15.52    0.00    0.00      0
[1,0]<stdout>:  2147483648     536870912     float     sum      -1   9197.5  233.49  437.79      0   9195.2  233.54  437.89      0
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 52.9753
"""


def test_mpirun_tag_output_prefixes_are_cut_before_the_pattern_runs() -> None:
    parsed = _parse(MPIJOB)
    assert [(r.size_bytes, r.bus_bw) for r in parsed.results] == [(0, 0.0), (2147483648, 437.79)]
    assert parsed.avg_bus_bandwidth == 52.9753 and parsed.failure is None


def test_kubelet_timestamps_come_before_the_launcher_tag() -> None:
    stamped = "".join(f"2026-03-01T10:00:0{i}.000000000Z {line}\n" for i, line in enumerate(MPIJOB.splitlines()))
    assert _parse(stamped).results == _parse(MPIJOB).results and len(_parse(stamped).results) == 2


@pytest.mark.parametrize(
    ("line", "network"),
    [
        # https://github.com/NVIDIA/nccl/issues/1120
        ("NCCL INFO Channel 01/0 : 6[4f000] -> 3[9d000] [receive] via NET/IBext_v6/1", "IBext_v6"),
        # https://github.com/aws/aws-ofi-nccl/issues/161 (NCCL 2.10.3, aws-ofi-nccl 1.3.0)
        ("algo-1:462:462 [0] NCCL INFO Using network AWS Libfabric", "AWS Libfabric"),
        # https://github.com/NVIDIA/nccl/issues/1597
        ("8h200-2:14630:14695 [1] NCCL INFO Channel 05/0 : 0[0] -> 1[1] [receive] via NET/AWS Libfabric/1/GDRDMA", "AWS Libfabric"),
        # https://github.com/NVIDIA/nccl/issues/1357
        ("qh100-gpu19:49355:49414 [1] NCCL INFO Using network IBext", "IBext"),
        # https://github.com/NVIDIA/nccl/issues/1052
        ("node2:14159:14168 [0] NCCL INFO Using network IB", "IB"),
    ],
)
def test_the_network_name_is_read_whole(line: str, network: str) -> None:
    assert _parse(line + "\n").transport == (network,)


# https://github.com/aws/aws-k8s-tester/pull/585 (go test -v relays the launcher log indented)
INDENTED_TAGS = """\
        [1,0]<stdout>:           8             2     float     sum      -1    136.3    0.00    0.00      0    70.85    0.00    0.00      0
        [1,0]<stdout>:          16             4     float     sum      -1    69.29    0.00    0.00      0    68.67    0.00    0.00      0
"""

# https://github.com/aws/aws-ofi-nccl/issues/64 (NCCL 2.7.8, aws-ofi-nccl 1.1.2): the run stops
# after the table header, before its first row
HEADER_THEN_NOTHING = """\
#                                                     out-of-place                       in-place          
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
ip-172-31-13-103:9738:9738 [0] NCCL INFO Launch mode Parallel
"""


def test_an_indented_launcher_tag_is_cut_too() -> None:
    assert [r.size_bytes for r in _parse(INDENTED_TAGS).results] == [8, 16]


def test_a_table_stopped_after_its_header_is_incomplete() -> None:
    parsed = _parse(HEADER_THEN_NOTHING)
    assert parsed.results == ()
    assert parsed.failure is not None and parsed.failure.reason == "CollectiveTableIncomplete"
    assert "before its first row" in parsed.failure.message


# The per-iteration layout of newer nccl-tests (the header of NVIDIA/nccl-tests src/util.cu,
# https://github.com/NVIDIA/nccl-tests/blob/master/src/util.cu): each half gains i_min, i_max,
# i_p99 and i_cv% after its #wrong cell. The time, algbw and busbw cells are the 1 GiB row of the
# MPIJob README above; the per-iteration cells and the in-place #wrong of 3 are set for this test.
PER_ITERATION = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%
  1073741824     268435456     float     sum      -1   6426.3  167.09  313.29       0   6401.0   6450.2   6449.8     0.21   6426.1  167.09  313.29       3   6400.9   6451.0   6450.7     0.22
"""


def test_per_iteration_columns_keep_the_wrong_cells_apart() -> None:
    parsed = _parse(PER_ITERATION + "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 313.29\n")
    assert [(r.size_bytes, r.bus_bw) for r in parsed.results] == [(1073741824, 313.29)]
    assert parsed.wrong_elements == 3  # the in-place #wrong cell, not i_cv% or the timings
    assert parsed.failure is not None and parsed.failure.reason == "CollectiveDataCorrupted"
    clean = _parse(PER_ITERATION.replace("313.29       3", "313.29       0") + "# Avg bus bandwidth    : 313.29\n")
    assert clean.failure is None and clean.wrong_elements == 0
