"""The reader fix that the sixth real-output hold-out led to, and the limits it keeps.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the one behaviour the fix added. The input is a corpus file
under ``golden/measure/real/nccl/`` (its public source is in the manifest): an nccl-tests run
started by a wrapper on eight H200s whose parameters line reads ``# nGpus(perProc) 8 minBytes
...`` (no ``nThread`` field), pasted up to its rank list
(https://github.com/scitix/sichek/issues/52).
"""

from __future__ import annotations

from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import INCOMPLETE
from tests.runtime.measure.nccl_reading import HEADER, NCCL, ROW, final_failure, nccl_profile

PER_PROC = "# nGpus(perProc) 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
INFO = "lh-g23-297:1147481:1147481 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"


def test_a_run_announced_by_its_per_process_gpu_count_and_cut_before_its_table_is_unfinished() -> None:
    text = (NCCL / "h200-sichek-wrapper-ngpus-perproc-header-cut.txt").read_text(encoding="utf-8")
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.row_count == 0
    failure = final_failure(text)
    assert failure is not None
    assert failure["reason"] == INCOMPLETE


def test_the_per_process_parameters_line_counts_behind_a_launcher_tag_and_without_its_hash() -> None:
    for line in (PER_PROC, "[1,0]<stdout>:" + PER_PROC, "0: " + PER_PROC, PER_PROC.lstrip("# ")):
        failure = final_failure(line + "\n" + INFO + "\n")
        assert failure is not None and failure["reason"] == INCOMPLETE, line


def test_a_per_process_run_whose_table_closes_with_its_average_is_a_measurement() -> None:
    text = f"{PER_PROC}\n#\n{HEADER}\n{ROW}\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.00123\n"
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.failure is None
    assert (parsed.row_count, parsed.avg_bus_bandwidth) == (1, 0.00123)


def test_lines_that_only_mention_the_per_process_count_do_not_begin_a_run() -> None:
    # the header's words inside prose, an INFO line or without the byte range stay ordinary lines
    for line in (
        "the nGpus(perProc) 8 minBytes header is printed once per process",
        "lh-g23-297:1147481:1147481 [0] NCCL INFO nGpus(perProc) 8 minBytes 8",
        "# nGpus(perProc) 8",
        "# nGpus 8 minBytes 8",
    ):
        assert final_failure(line + "\n" + INFO + "\n") is None, line
