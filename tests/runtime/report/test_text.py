"""The text report's layout rules: 66-cell boxes whatever the content, sanitised logs, formats."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.runtime.judge.model import (
    BandwidthPoint,
    CategoryVerdict,
    CertificationVerdict,
    DiagnoseTest,
    DiagnosisVerdict,
    FailedNode,
    FailureLog,
    GroupVerdict,
    InfrastructureFaultVerdict,
    IterationVerdict,
    RestartVerdict,
    TrainingMetrics,
)
from nvcre.runtime.report import format as fmt
from nvcre.runtime.report.cells import sanitize, width, wrap, wrap_words
from nvcre.runtime.report.text import render

awkward = st.text(
    alphabet=st.sampled_from(list("abcXYZ 019-_/.:") + ["\t", "\x1b", "\x7f", "\x85", "\u202e", "\u0301", "界", "😀", "\u200b", "é"]),
    max_size=60,
)
points = st.builds(
    BandwidthPoint,
    size_bytes=st.integers(0, 2**40),
    alg_bw=st.floats(0, 5000, allow_nan=False),
    bus_bw=st.floats(0, 5000, allow_nan=False),
    samples=st.integers(0, 10**6),
    provisional=st.booleans(),
    provisional_reason=st.sampled_from(["", "JobRunning", "FinalReadPending"]),
)
seconds = st.one_of(st.none(), st.floats(0, 10**7, allow_nan=False))
restart_verdicts = st.builds(
    RestartVerdict,
    count=st.integers(1, 10**4),
    maximum=st.integers(0, 10**4),
    interruptions=st.integers(0, 10**4),
    lost_work_seconds=seconds,
    reschedule_seconds=seconds,
    resume_seconds=seconds,
)
logs = st.builds(
    FailureLog,
    pod_name=awkward,
    node_name=awkward,
    exit_code=st.one_of(st.none(), st.integers(-1, 255)),
    reason=awkward,
    tail=st.text(max_size=300),
)
groups = st.builds(
    GroupVerdict,
    name=awkward,
    nodes=st.lists(awkward, max_size=6).map(tuple),
    phase=st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    failed=st.booleans(),
    reason=awkward,
    failure_log=st.one_of(st.none(), logs),
    domains=st.lists(awkward, max_size=2).map(tuple),
    bandwidth=st.one_of(st.none(), points),
    transport=st.lists(st.sampled_from(["IB", "Socket", "Libfabric"]), max_size=3, unique=True).map(tuple),
    below_min=st.booleans(),
    restarts=st.one_of(st.none(), restart_verdicts),
)
diagnoses = st.builds(
    DiagnosisVerdict,
    stage=st.sampled_from(["complete", "intra-screening", "confirmation", "cross-boundary"]),
    rounds=st.integers(0, 99),
    jobs=st.integers(0, 10**5),
    confirmed=st.lists(
        st.builds(FailedNode, name=awkward, reason=st.sampled_from(["", "ThresholdViolation", "WorkloadFailed"]), message=awkward),
        max_size=3,
    ).map(tuple),
    infrastructure_faults=st.lists(
        st.builds(InfrastructureFaultVerdict, st.lists(awkward, max_size=3).map(tuple), st.lists(awkward, max_size=3).map(tuple), awkward),
        max_size=2,
    ).map(tuple),
    unresolved=st.lists(awkward, max_size=4).map(tuple),
    healthy_nodes=st.integers(0, 10**5),
    planner=st.sampled_from(["", "adaptive", "baseline"]),
)
categories = st.builds(
    CategoryVerdict,
    domain=awkward,
    variant=awkward,
    status=st.sampled_from(["Pending", "InProgress", "Succeeded", "Failed"]),
    failure_reason=awkward,
    blocked=awkward,
    runtime_seconds=st.one_of(st.none(), st.floats(0, 10**6)),
    iteration_count=st.integers(1, 5),
    iterations=st.lists(
        st.builds(
            IterationVerdict,
            number=st.integers(1, 9),
            status=st.sampled_from(["Running", "Failed", "Succeeded"]),
            duration_seconds=st.one_of(st.none(), st.floats(0, 10**5)),
        ),
        max_size=4,
    ).map(tuple),
    test_scale=st.sampled_from(["", "full-scale", "diagnose", "intra-node"]),
    placement=st.sampled_from(["", "Unpinned"]),
    nodes_per_job=st.integers(0, 10**4),
    jobs=st.integers(0, 10**4),
    target_nodes=st.integers(0, 10**4),
    exercised_nodes=st.integers(0, 10**4),
    mnnvl=st.sampled_from(["", "Enabled", "Disabled"]),
    env_names=st.lists(awkward, max_size=12).map(tuple),
    groups=st.lists(groups, max_size=4).map(tuple),
    bandwidth=st.lists(points, max_size=2).map(tuple),
    transport=st.lists(st.sampled_from(["IB", "Socket"]), max_size=2, unique=True).map(tuple),
    measures_bandwidth=st.booleans(),
    training=st.one_of(
        st.none(),
        st.builds(
            TrainingMetrics,
            st.one_of(st.none(), st.floats(0, 1)),
            st.one_of(st.none(), st.floats(0, 5000)),
            st.one_of(st.none(), st.floats(0, 100)),
        ),
    ),
    next_step=st.sampled_from(["", "rerun this category with testScale: diagnose; it bisects the group"]),
    diagnosis=st.one_of(st.none(), diagnoses),
)
verdicts = st.builds(
    CertificationVerdict,
    kind=st.sampled_from(["Certification", "WorkloadRun"]),
    name=awkward,
    namespace=st.just("ns"),
    status=st.sampled_from(["", "InProgress", "Succeeded", "Failed"]),
    result=st.sampled_from(["PASSED", "FAILED", "RUNNING", "INCOMPLETE"]),
    platform=st.sampled_from(["", "aws"]),
    categories=st.lists(categories, max_size=3).map(tuple),
    failed_nodes=st.lists(
        st.builds(FailedNode, name=awkward, reason=st.sampled_from(["", "WorkloadFailed"]), message=awkward), max_size=4
    ).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(verdicts)
def test_every_box_line_is_exactly_66_cells(verdict: CertificationVerdict) -> None:
    rendered = render(verdict)
    for line in rendered.splitlines():
        if line and line[0] in "╔║╚┌│├└":
            assert width(line) == 66, repr(line)
    for bad in ("\x1b", "\x7f", "\x85", "\u202e", "\t"):
        assert bad not in rendered


def test_sanitize_escapes_controls_and_bidi() -> None:
    assert sanitize("a\tb\x1b[2J\u202ex\x85") == "a    b\\x1b[2J\\u202ex\\x85"
    assert width("界😀e\u0301") == 5


def test_wrapping() -> None:
    assert wrap("abcdef", 4) == ["abcd", "ef"]
    assert wrap_words("one two three", 7) == ["one two", "three"]
    assert wrap_words("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_formats() -> None:
    assert [fmt.size(n) for n in (8, 1024, 33554432, 17179869184, 3 * 2**29)] == ["8 B", "1 KB", "32 MB", "16 GB", "1.5 GB"]
    assert fmt.human_duration(45) == "45s" and fmt.human_duration(725) == "12m 5s" and fmt.human_duration(7385) == "2h 3m"
    assert fmt.goodput(0.9) == "0.90 (90%)" and fmt.step_time(2.854) == "2.85s" and fmt.tflops(539.84) == "539.8"


def _card_lines(category: CategoryVerdict) -> list[str]:
    rendered = render(CertificationVerdict("Certification", "c", "ns", "Failed", "FAILED", categories=(category,)))
    return [line.strip("│ ").rstrip() for line in rendered.splitlines()]


def test_the_card_names_the_env_variables_the_run_set() -> None:
    names = tuple(f"NCCL_SETTING_NUMBER_{i:02d}" for i in range(6))
    category = CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", test_scale="full-scale", nodes_per_job=2, env_names=names)
    lines = _card_lines(category)
    start = next(i for i, line in enumerate(lines) if line.startswith("Env:"))
    assert lines[start - 1] == "Nodes/Job: 2"
    shown = " ".join(line.removeprefix("Env:").strip() for line in lines[start : start + 3])
    assert shown == ", ".join(names)  # word-wrapped under the label, every name whole
    assert not any(line.startswith("Env:") for line in _card_lines(CategoryVerdict("communication", "nccl-all-reduce", "Succeeded")))


def test_the_diagnosis_section_is_nvcres_then_ours() -> None:
    tests = (
        DiagnoseTest("screening", "j-local-0", ("gpu-1",), True, "local-0", 11.2, "local-0"),
        DiagnoseTest("screening", "j-local-6", ("gpu-7",), False, "local-6", 1.1, "local-6"),
        DiagnoseTest("confirmation", "j-confirm-7", ("gpu-7",), False, "", 1.0, "confirm-7"),
        DiagnoseTest("bisection", "j-link-0", (), True, "", None, "link-0"),
    )
    diagnosis = DiagnosisVerdict(
        stage="complete",
        rounds=5,
        jobs=9,
        confirmed=(FailedNode("gpu-7", "ThresholdViolation", "Diagnosis complete: 1 faulty nodes confirmed"),),
        infrastructure_faults=(InfrastructureFaultVerdict(("gpu-1",), ("gpu-2",), "link-confirm", "path"),),
        unresolved=("gpu-4",),
        healthy_nodes=5,
        suspect_count=2,
        tests=tests,
        screening=(("local-0", ("gpu-1",)), ("local-6", ("gpu-7",))),
    )
    category = CategoryVerdict(
        "communication",
        "nccl-all-reduce",
        "Failed",
        test_scale="diagnose",
        diagnosis=diagnosis,
        groups=(GroupVerdict("confirm-7", ("gpu-7",), "Failed", True, reason="low"),),
    )
    rendered = render(CertificationVerdict("Certification", "c", "ns", "Failed", "FAILED", categories=(category,)))
    lines = [line.strip("│ ").rstrip() for line in rendered.splitlines()]
    assert lines.index("Failed Groups:") < lines.index("Diagnosis:"), "NVCRE prints Failed Groups first"
    start = lines.index("Diagnosis:")
    assert lines[start + 1 : start + 16] == [
        "Stage:     complete",
        "Rounds:    5",
        "Healthy:   5 nodes",
        "Suspect:   2 nodes",
        "Faulty:    1 nodes",
        "local-6:",
        "- gpu-7",
        "Infra:     1 faults",
        "path: 1 + 1 nodes",
        "Max BW:    11.2 GB/s",
        "local-0 (1 nodes)",
        "Min BW:    1.0 GB/s",
        "- gpu-7",
        "",
        "Test Results:",
    ]
    results = lines[start + 15 :]
    assert results[: results.index("Findings (adaptive planner, 9 jobs):")] == [
        "Test Results:",
        "",
        "intra-rack screening:",
        "✓  local-0",
        "(1 nodes)",
        "11.20 GB/s",
        "✗  local-6",
        "(1 nodes)",
        "1.10 GB/s",
        "",
        "bisection:",
        "✓  link-0",
        "",
        "confirmation:",
        "✗  1 nodes:",
        "- gpu-7",
        "1.00 GB/s",
        "",
    ]
    findings = results[results.index("Findings (adaptive planner, 9 jobs):") + 1 :]
    assert findings[:4] == ["✗  gpu-7: ThresholdViolation", "✗  link   gpu-1 <-> gpu-2", "no node blamed", "Unresolved:   gpu-4"]
    running = CategoryVerdict(
        "communication",
        "nccl-all-reduce",
        "InProgress",
        test_scale="diagnose",
        diagnosis=DiagnosisVerdict(stage="confirmation", rounds=2, jobs=5),
    )
    rendered = render(CertificationVerdict("Certification", "c", "ns", "InProgress", "RUNNING", categories=(running,)))
    assert "│    Stage:     confirmation" in rendered
    assert "│    Rounds:    2" in rendered and "Findings" not in rendered
