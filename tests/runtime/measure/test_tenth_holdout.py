"""The reader fixes the tenth real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the behaviours the fixes added. The inputs are corpus files
under ``golden/measure/real/dcgm/``:

- a DCGM 3.1.8 level-1 table on 8 x H200 whose ``Persistence Mode | Fail`` row is followed by an
  ``Error`` row wrapped over 22 lines
  (https://github.com/yosoyjay/update-nvidia-driver/blob/4b5249fee94950934713f6eb349a1e363104ae4d/README.md).
  The Error row was read as a failing test of its own named ``Error``; under a test of the same
  section it is now that test's error;
- a DCGM 1.x level-2 table from a POWER8 host, every line indented by the markdown list it sits in
  (https://github.com/nicolas-tallet/OpenPOWER-HPC-System-Administration-Guide/blob/bb04720e772e85d1c454027dccf5e63663aa2698/system-administration-tools/datacenter-gpu-manager.md),
  and a DCGM 3.3.9 table pasted into a Python comment, every line behind ``    # ``
  (https://github.com/GoogleCloudPlatform/ramble/blob/c5fe55aabcd6d4be5b80df821165345f49c5ef40/var/ramble/repos/builtin/applications/nvidia-dcgm/application.py).
  Both read as no result (``Unknown``); a table line may now carry an indent, or an indent and
  a comment or quote marker, before its first ``|`` or ``+``;
- a SageMaker health-check tool's JSON report that carries ``dcgmi diag -r 3``'s table as a
  string and reports ``"success": true`` although the table fails Targeted Power on GPU 1
  (https://github.com/brunopistone/sagemaker-training-jobs-cluster-health-check/blob/daabee2e88d6950adff019b86b18322b5bcb44ef/README.md).
  It read as ``Unknown``; a table inside a JSON string is now read, and it decides, never the
  wrapper's summary;
- under ``training/``, a NeMo Automodel PEFT run whose log ends with a validation line
  (``INFO:root:[val] step 20 | epoch 0 | loss 0.2469``), which the built-in
  ``nemo-automodel-training`` profile took for a sixth training step; ``step`` must now open the
  line or follow the logger's ``| `` or ``:``, or ``epoch=E ``;
- under ``nccl/``, a patched NCCL 2.26.6 ``hypercube_perf`` run with ``-c 0`` whose rows leave the
  redop cell blank
  (https://github.com/ssbandjl/nccl-tests/blob/522f38313fa2e805da373924c87879021c9d5344/log/13p/a6000_dma_buf_gdr_pix_13p_13p_8qp_8qp/nccl_tests_hypercube_perf_13p_u24_k61x_2025_07_10_16_31_18_log):
  the row splits into one token fewer than its header, so the in-place time stood in the
  header's ``#wrong`` column and a valid run was failed as ``CollectiveDataCorrupted``.
  A row shorter than its header now reads its ``#wrong`` cells counted from the row's end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import CORRUPTED
from nvcre.runtime.measure.training import parse_training
from tests.goldenharness import GOLDEN
from tests.runtime.measure.nccl_reading import HEADER, NCCL, PARAMS, ROW, TRAILER, final_failure, nccl_profile

DCGM = GOLDEN / "measure" / "real" / "dcgm"
WRAPPED_ERROR = DCGM / "dcgm-3.1.8-r1-h200-persistence-mode-fail-long-wrapped-error.txt"
LIST_INDENT = DCGM / "dcgm-1.x-r2-p100-power8-performance-category-list-indent-skips.txt"
COMMENTED = DCGM / "dcgm-3.3.9-r3-h200-pass-eud-skip-python-comment-prefix.txt"
WRAPPER_JSON = DCGM / "dcgm-3.3.9-r3-a10g-targeted-power-fail-escaped-in-wrapper-json-reporting-success.json"

HEAD = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
"""
RULE = "+---------------------------+------------------------------------------------+\n"


def _row(name: str, value: str) -> str:
    return f"| {name:<25} | {value:<46} |\n"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ Error rows


def test_an_error_row_under_a_failing_test_is_that_tests_error_not_a_test_of_its_own() -> None:
    result = parse_dcgm(_read(WRAPPED_ERROR))
    names = [t.name for t in result.tests]
    assert "Error" not in names and len(names) == 9
    persistence = next(t for t in result.tests if t.name == "Persistence Mode")
    assert persistence.status == "Fail"
    assert persistence.messages[0].startswith("Persistence mode for GPU 0 is currently disab")
    # the rows after the error still count
    assert [t.name for t in result.tests][-4:] == ["Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom"]
    assert result.overall == "Fail"


def test_an_error_row_fails_the_test_above_it_even_when_that_test_printed_pass() -> None:
    text = HEAD + _row("Persistence Mode", "Pass") + _row("Error", "Persistence mode for GPU 0 is disabled") + RULE
    result = parse_dcgm(text)
    assert [(t.name, t.status) for t in result.tests] == [("Persistence Mode", "Fail")]
    assert result.overall == "Fail"


def test_an_error_row_with_no_test_above_it_in_its_section_stays_a_failure_of_its_own() -> None:
    # first row of its section (the pending-row-remap case), and first row after a section rule
    alone = HEAD + _row("Error", "GPU 3 has uncorrectable memory errors") + RULE
    assert [(t.name, t.status) for t in parse_dcgm(alone).tests] == [("Error", "Fail")]
    after_section = (
        HEAD
        + _row("Inforom", "Pass")
        + "+-----  Hardware  ----------+------------------------------------------------+\n"
        + _row("Error", "GPU 3 has uncorrectable memory errors")
        + RULE
    )
    assert [(t.name, t.status) for t in parse_dcgm(after_section).tests] == [("Inforom", "Pass"), ("Error", "Fail")]


# ------------------------------------------------------------------ quoted tables


def test_a_table_indented_by_a_list_item_reads_as_the_same_table_unindented() -> None:
    text = _read(LIST_INDENT)
    indented = parse_dcgm(text)
    plain = parse_dcgm("\n".join(line[2:] for line in text.splitlines()))
    assert indented == plain
    assert indented.overall == "Pass" and len(indented.tests) == 15
    assert ("Diagnostic", "Skip") in [(t.name, t.status) for t in indented.tests]
    assert {t.category for t in indented.tests} == {"Deployment", "Hardware", "Integration", "Performance"}


def test_a_table_behind_comment_markers_reads_as_the_table_itself() -> None:
    text = _read(COMMENTED)
    commented = parse_dcgm(text)
    assert commented == parse_dcgm("\n".join(line.split("# ", 1)[1] if "# " in line else line for line in text.splitlines()))
    assert commented.overall == "Pass"
    assert ("EUD Test", "Skip") in [(t.name, t.status) for t in commented.tests]
    # a failing row behind the marker fails the run, and so does one behind a mail quote
    failing = "".join(f"    # {line}\n" for line in (HEAD + _row("Persistence Mode", "Fail") + RULE).splitlines())
    quoted = "".join(f"> {line}\n" for line in (HEAD + _row("Persistence Mode", "Fail") + RULE).splitlines())
    assert parse_dcgm(failing).overall == "Fail" and parse_dcgm(quoted).overall == "Fail"


def test_a_marker_before_something_other_than_a_table_line_is_left_alone() -> None:
    # a shell comment that merely mentions a result is no row
    text = HEAD + "# Persistence Mode | Fail |\n" + _row("Persistence Mode", "Pass") + RULE
    assert [(t.name, t.status) for t in parse_dcgm(text).tests] == [("Persistence Mode", "Pass")]


# ------------------------------------------------------------------ tables inside a tool's JSON


def test_a_table_carried_in_a_json_string_decides_whatever_the_wrapper_reports() -> None:
    result = parse_dcgm(_read(WRAPPER_JSON))
    assert result.overall == "Fail"
    power = next(t for t in result.tests if t.name == "Targeted Power")
    assert power.status == "Fail" and power.failed_gpus == ("1",)


def test_a_json_report_that_carries_no_table_gives_no_result() -> None:
    report = json.dumps({"success": True, "raw_output": "Successfully ran diagnostic for group.\nno table here"})
    assert parse_dcgm(report).overall == "Unknown"


def test_a_table_cut_inside_its_json_string_is_incomplete_never_a_pass() -> None:
    cut = HEAD + _row("Persistence Mode", "Pass")  # no closing rule
    assert parse_dcgm(json.dumps({"success": True, "raw_output": cut})).overall == "Incomplete"


# ------------------------------------------------------------------ Automodel validation lines

AUTOMODEL_LOG = GOLDEN / "measure" / "real" / "training" / "nemo-automodel-2025-cli-info-root-step-lines-checkpoint-and-val-lines.txt"


def _automodel() -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nemo-automodel-training")


def test_an_automodel_validation_line_is_no_training_step() -> None:
    # https://github.com/NVIDIA-NeMo/Automodel/blob/a6cb59e43820eeed9724ab85a93bb49366ded539/docs/guides/llm/peft.md:
    # five step lines, one every four steps, then 'INFO:root:[val] step 20 | epoch 0 | loss
    # 0.2469', which was read as a sixth
    parsed = parse_training(AUTOMODEL_LOG.read_text(encoding="utf-8"), _automodel())
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (5, 4, 20)
    assert parsed.last_line_loss == 0.2557  # step 20's training loss, not the validation loss


@pytest.mark.parametrize(
    ("line", "iteration"),
    [
        ("INFO:root:step 4 | epoch 0 | loss 1.5514 | grad_norm 102.0000 | mem: 11.66 GiB | tps 6924.50", 4),
        ("2026-08-10 15:55:20 | INFO | root | step 9 | epoch 0 | loss 0.6974 | grad_norm 1.5436 | tps 11278.56(1409.82/gpu)", 9),
        ("2026-08-10 15:55:20 | INFO | recipe | epoch=0 step=12 loss=0.41 acc=0.8", 12),
        ("step 3 | epoch 0 | loss 2.5", 3),
        ("INFO:root:[val] step 20 | epoch 0 | loss 0.2469", None),
        ("2026-08-10 15:55:20 | INFO | root | [val] step 9 | epoch 0 | loss 0.6", None),
        ("2026-08-10 15:55:20 | INFO | recipe | epoch=0 global_step=12 loss=0.41", None),
    ],
)
def test_the_automodel_step_pattern_takes_training_lines_only(line: str, iteration: int | None) -> None:
    parsed = parse_training(line + "\n", _automodel())
    assert parsed.last_line_iteration == iteration


# ------------------------------------------------------------------ rows with a blank cell

HYPERCUBE = NCCL / "a6000-roce-xtrdma-2.26.6-patched-hypercube-c0-two-node-debug-prints-around-rows.txt"
#: a hypercube row as nccl-tests prints it: the redop cell is blank, so the row has 12 tokens
#: under a 13-cell header, and its #wrong cells sit one token further left
BLANK_REDOP_ROW = "           8             2     float              -1    68.14    0.00    0.00    {oop}    67.68    0.00    0.00    {ip}"


def test_a_hypercube_table_with_a_blank_redop_cell_is_no_corruption() -> None:
    # a patched NCCL 2.26.6 hypercube run with -c 0 (every #wrong N/A): the in-place time sat in
    # the header's out-of-place #wrong column and was counted as 580,071 wrong elements
    text = HYPERCUBE.read_text(encoding="utf-8")
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.row_count == 29 and parsed.avg_bus_bandwidth == 0.721462
    assert final_failure(text) is None


@pytest.mark.parametrize(("oop", "ip", "wrong"), [("0", "0", None), ("5", "0", 5), ("0", "7", 7), ("N/A", "N/A", None)])
def test_the_wrong_cells_of_a_row_with_a_blank_redop_are_read_from_their_own_columns(oop: str, ip: str, wrong: int | None) -> None:
    text = PARAMS + "\n" + HEADER + "\n" + BLANK_REDOP_ROW.format(oop=oop, ip=ip) + "\n" + TRAILER
    failure = final_failure(text)
    if wrong is None:
        assert failure is None
    else:
        assert failure is not None and failure["reason"] == CORRUPTED
        assert f"data: {wrong} wrong elements in 1 rows" in failure["message"]


def test_a_row_with_every_cell_keeps_its_columns() -> None:
    # the 13-token row of the same header: its #wrong cells are where the header says
    corrupted = ROW.replace("      0    19.87", "      3    19.87")
    failure = final_failure(PARAMS + "\n" + HEADER + "\n" + corrupted + "\n" + TRAILER)
    assert failure is not None and "data: 3 wrong elements in 1 rows" in failure["message"]
    assert final_failure(PARAMS + "\n" + HEADER + "\n" + ROW + "\n" + TRAILER) is None
