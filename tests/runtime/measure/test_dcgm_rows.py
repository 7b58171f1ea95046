"""DCGM diagnostics: every test row counts, the worst row decides, a cut-short report never passes.

Inputs are real ``dcgmi diag`` outputs copied (trimmed) from the public pages named beside them;
where one was edited, the comment says which cell and why.
"""

from __future__ import annotations

from nvcre.runtime.measure.dcgm import INCOMPLETE, parse_dcgm

# https://github.com/NVIDIA/DCGM/issues/55 (DCGM 3.0.4, dcgmi diag -r 3), up to the Integration section
DCGM3_HEAD = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| NVML Library              | Pass                                           |
| CUDA Main Library         | Pass                                           |
| Permissions and OS Blocks | Pass                                           |
| Persistence Mode          | Pass                                           |
| Environment Variables     | Pass                                           |
| Page Retirement/Row Remap | Pass                                           |
| Graphics Processes        | Pass                                           |
| Inforom                   | Pass                                           |
"""
# The Hardware and Stress sections in DCGM 3's layout (dcgmi/Diag.cpp); the Diagnostic row's result
# is "Fail - GPU: 3" to model the level-3 GPU burn test failing on one GPU.
DCGM3_TAIL_DIAGNOSTIC_FAILS = """\
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - All                                     |
| Diagnostic                | Fail - GPU: 3                                  |
+-----  Stress  ------------+------------------------------------------------+
| Targeted Stress           | Pass - All                                     |
| Targeted Power            | Pass - All                                     |
| Memory Bandwidth          | Pass - All                                     |
+---------------------------+------------------------------------------------+
"""

# https://github.com/NVIDIA/go-dcgm/issues/52 (DCGM 3.3.1, dcgmi diag -r 2): a test that passed on
# GPU 1 and failed on GPU 0, the failure on a row of its own
DCGM3_SPLIT_RESULT = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.1                                          |
| Driver Version Detected   | 535.129.03                                     |
| GPU Device IDs Detected   | 1eb8                                           |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| NVML Library              | Pass                                           |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPU: 1                                  |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |
|                           | DCGM and system logs for errors. Reset GPU. R  |
|                           | estart DCGM. Rerun diagnostics. Unable to cre  |
|                           | ate CUDA context: 'CUDA-capable device(s) is/  |
|                           | are busy or unavailable'.                      |
+---------------------------+------------------------------------------------+
"""

# https://github.com/NVIDIA/DCGM/issues/282 (DCGM 4.4.1) header and metadata; the test rows follow
# DCGM 4's layout (one row per entity, "GPU<n>: <result>", and "Warning: GPU<n>" message rows, as
# dcgmi/Diag.cpp prints them), with GPU1 failing the diagnostic.
DCGM4 = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.4.1                                          |
| Driver Version Detected   | 580.95.05                                      |
|-----  Deployment  --------+------------------------------------------------|
| software                  | Pass                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
+-----  Hardware  ----------+------------------------------------------------+
| diagnostic                | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
| Warning: GPU1             | Failed to complete the GPU burn                |
+---------------------------+------------------------------------------------+
"""

# https://github.com/microsoft/VirtualClient/blob/main/src/VirtualClient/VirtualClient.Actions.UnitTests/Examples/DCGMI/DCGMIDiag_r3_results.json
# (dcgmi diag -r 3 -j), cut off inside the Integration section as a killed pod leaves it
JSON_CUT = """\
{
	"DCGM GPU Diagnostic" : 
	{
		"test_categories" : 
		[
			{
				"category" : "Deployment",
				"tests" : 
				[
					{
						"name" : "Denylist",
						"results" : 
						[
							{
								"status" : "Pass"
							}
						]
					}
				]
			},
			{
				"category" : "Integration",
				"tests" : 
				[
"""


def test_a_failing_diagnostic_row_fails_the_run() -> None:
    result = parse_dcgm(DCGM3_HEAD + DCGM3_TAIL_DIAGNOSTIC_FAILS)
    diagnostic = next(t for t in result.tests if t.name == "Diagnostic")
    assert (diagnostic.status, diagnostic.category, diagnostic.failed_gpus) == ("Fail", "Hardware", ("3",))
    assert result.overall == "Fail" and not result.passed


def test_the_header_row_is_not_a_test() -> None:
    result = parse_dcgm(DCGM3_HEAD + DCGM3_TAIL_DIAGNOSTIC_FAILS)
    assert [t.name for t in result.tests].count("Diagnostic") == 1
    assert "Result" not in {t.status for t in result.tests}


def test_an_entity_row_under_a_test_takes_part_in_its_status() -> None:
    result = parse_dcgm(DCGM3_SPLIT_RESULT)
    memory = next(t for t in result.tests if t.name == "GPU Memory")
    assert (memory.status, memory.failed_gpus) == ("Fail", ("0",))
    assert memory.messages[0].startswith("GPU 0 Error using CUDA API cuCtxCreate")
    assert result.overall == "Fail"
    assert [t.name for t in result.tests] == ["Denylist", "NVML Library", "GPU Memory"]  # metadata rows are not tests


def test_dcgm4_entity_rows_and_warnings() -> None:
    result = parse_dcgm(DCGM4)
    assert [(t.name, t.status, t.failed_gpus) for t in result.tests] == [("software", "Pass", ()), ("diagnostic", "Fail", ("1",))]
    assert result.tests[1].messages == ("Failed to complete the GPU burn",)
    assert result.overall == "Fail"


def test_a_table_cut_short_is_incomplete_not_a_pass() -> None:
    result = parse_dcgm(DCGM3_HEAD)
    assert all(t.status == "Pass" for t in result.tests) and len(result.tests) == 9
    assert result.overall == INCOMPLETE and not result.passed


def test_a_json_report_cut_short_is_incomplete() -> None:
    result = parse_dcgm(JSON_CUT)
    assert result.overall == INCOMPLETE and not result.passed


def test_a_failure_wins_over_a_cut_short_table() -> None:
    cut = DCGM3_HEAD + DCGM3_TAIL_DIAGNOSTIC_FAILS.rsplit("+---", 1)[0]
    assert parse_dcgm(cut).overall == "Fail"


def test_a_complete_passing_table_still_passes() -> None:
    passing = DCGM3_HEAD + DCGM3_TAIL_DIAGNOSTIC_FAILS.replace("Fail - GPU: 3", "Pass - All     ")
    result = parse_dcgm(passing)
    assert result.overall == "Pass" and result.passed


def test_kubelet_timestamps_and_launcher_tags_are_cut() -> None:
    stamped = "".join(f"2026-03-01T10:00:00.000000000Z 0: {line}\n" for line in DCGM3_SPLIT_RESULT.splitlines())
    assert parse_dcgm(stamped) == parse_dcgm(DCGM3_SPLIT_RESULT)


# https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/compute/accelerator/nvidia/debug.md
# (dcgmi diag -r 3; the page quotes only the start of the table)
ERROR_ROW = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Error                     | GPU 3 has uncorrectable memory errors and row  |
|                           |  remappings are pending                        |
"""


def test_an_error_row_fails_the_run() -> None:
    result = parse_dcgm(ERROR_ROW)
    assert [(t.name, t.status, t.category) for t in result.tests] == [("Error", "Fail", "Deployment")]
    assert result.tests[0].messages == ("GPU 3 has uncorrectable memory errors and row", "remappings are pending")
    assert result.overall == "Fail"
