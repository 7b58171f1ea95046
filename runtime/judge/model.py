"""The verdict model: certification -> categories -> groups -> failed nodes, frozen.

Every report is a projection of these records: the text report, the JSON report, the metrics
samples and the MCP tools read them and nothing else, so they cannot disagree. Built by
``nvcre.runtime.judge.verdict`` from the objects the API server returns. Numbers are kept as
numbers; formatting belongs to the reports. Environment variables appear by name only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BandwidthPoint",
    "CategoryVerdict",
    "CertificationVerdict",
    "CliqueVerdict",
    "DiagnoseTest",
    "DiagnosisVerdict",
    "DomainTraining",
    "FailedAttempt",
    "FailedNode",
    "FailureLog",
    "GroupVerdict",
    "InfrastructureFaultVerdict",
    "IterationVerdict",
    "JobState",
    "MeasurementState",
    "NodeResult",
    "RestartVerdict",
    "RetryVerdict",
    "TrainingMetrics",
    "WorkflowState",
]

PASSED = "PASSED"
INCOMPLETE = "INCOMPLETE"
FAILED = "FAILED"
RUNNING = "RUNNING"


@dataclass(frozen=True)
class FailedNode:
    """A node blamed for a failure."""

    name: str
    reason: str
    message: str = ""


@dataclass(frozen=True)
class FailureLog:
    """The log excerpt of one failed pod (``Job.status.failureLog``)."""

    pod_name: str
    node_name: str
    exit_code: int | None
    reason: str
    tail: str


@dataclass(frozen=True)
class BandwidthPoint:
    """Bandwidth at one message size; provisional until the measurement read the complete log."""

    size_bytes: int
    alg_bw: float
    bus_bw: float
    samples: int
    provisional: bool = False
    provisional_reason: str = ""


@dataclass(frozen=True)
class RestartVerdict:
    """Checkpoint restarts of one group's Job and what its goodput measurement counted for them.

    Only built when the Job restarted at least once (``status.restartCount > 0``). The times are
    whole-run totals in seconds from the GoodputMeasurement, None when it has not published them.
    """

    #: restarts used (``Job.status.restartCount``)
    count: int
    #: restarts allowed (``Job.spec.checkpoint.maxRestarts``, 0 when unset)
    maximum: int
    #: restarts the goodput measurement has accounted for (``interruptionCount``)
    interruptions: int = 0
    #: work redone after resuming: last checkpoint to the last step before each failure
    lost_work_seconds: float | None = None
    #: from the last step before each failure to the next attempt's application start
    reschedule_seconds: float | None = None
    #: every attempt's start-up to its first step, checkpoint loading included
    resume_seconds: float | None = None


#: what Linux's ``strsignal`` calls the signals a workload is usually ended by
SIGNAL_NAMES = {
    1: "Hangup",
    2: "Interrupt",
    3: "Quit",
    4: "Illegal instruction",
    6: "Aborted",
    7: "Bus error",
    8: "Floating point exception",
    9: "Killed",
    10: "User defined signal 1",
    11: "Segmentation fault",
    12: "User defined signal 2",
    13: "Broken pipe",
    14: "Alarm clock",
    15: "Terminated",
}


@dataclass(frozen=True)
class FailedAttempt:
    """One failed run of a workload container before the run that counted (``judge.retries``)."""

    #: the attempt of the container's slot this run was (1 for the first)
    attempt: int
    node: str
    pod: str
    container: str
    #: the replicated job the pod belongs to (``launcher``, ``node``), else the container's name
    role: str
    exit_code: int
    #: the kubelet's reason (``Error``, ``OOMKilled``...)
    reason: str
    #: the signal that ended it (reported, or read from an exit code of 128 + N), 0 when none
    signal: int = 0
    #: True when the container status named the signal itself, False when read from the exit code
    signal_reported: bool = False
    #: when it ended (RFC 3339, as the API wrote it), "" when unknown
    finished_at: str = ""

    @property
    def signal_name(self) -> str:
        """The signal as Linux names it (``Killed`` for 9), "" when no signal ended the run."""
        if not self.signal:
            return ""
        return SIGNAL_NAMES.get(self.signal, f"signal {self.signal}")


@dataclass(frozen=True)
class RetryVerdict:
    """A group whose workload passed only after earlier attempts of it failed and were retried
    (a container restarted in place, or a pod its Job controller replaced). The group still passed."""

    #: the attempt that counted (the earlier ones failed)
    attempt: int
    #: the failed runs whose termination is known, oldest first
    failed: tuple[FailedAttempt, ...] = ()
    #: failed runs of which nothing is known but that they happened (the kubelet keeps only the
    #: last termination of a container), or that the record left out to stay short
    undetailed: int = 0


@dataclass(frozen=True)
class GroupVerdict:
    """One node group (one Job per iteration)."""

    name: str
    nodes: tuple[str, ...]
    phase: str
    failed: bool
    reason: str = ""
    job_name: str = ""
    failure_log: FailureLog | None = None
    domains: tuple[str, ...] = ()
    #: peak row (largest message size) of this group's bandwidth measurement
    bandwidth: BandwidthPoint | None = None
    transport: tuple[str, ...] = ()
    #: the busBandwidthGBps threshold fails for this group's value but would pass for +inf
    below_min: bool = False
    #: set when the node count is known although the node names are not (Unpinned)
    node_count: int = 0
    #: set when the group's Job restarted its workload from a checkpoint
    restarts: RestartVerdict | None = None
    #: the reason the group's bandwidth measurement failed its Job (``CollectiveDataCorrupted``...), "" when none
    measurement_failure: str = ""
    #: set when the group's workload passed only after failed attempts were retried
    retries: RetryVerdict | None = None


@dataclass(frozen=True)
class IterationVerdict:
    """One iteration of a Workflow."""

    number: int
    status: str
    duration_seconds: float | None


@dataclass(frozen=True)
class TrainingMetrics:
    """Averages over the category's goodput measurements."""

    goodput: float | None
    tflops_per_gpu: float | None
    step_time_seconds: float | None


@dataclass(frozen=True)
class DomainTraining:
    """Training metrics of the groups that ran in one topology domain (or set of domains)."""

    #: the group's domains joined with ", " ("" without topology)
    name: str
    node_count: int
    metrics: TrainingMetrics


@dataclass(frozen=True)
class CliqueVerdict:
    """One topology domain of a topology-aware run: how many of its nodes were validated."""

    name: str
    total: int
    validated: int
    passed: bool


@dataclass(frozen=True)
class InfrastructureFaultVerdict:
    """A fault on the path between two sets of nodes: they fail only when they run together."""

    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    stage: str = ""
    #: the topology domain it was found in (``path`` for the adaptive planner's link faults)
    domain: str = ""


@dataclass(frozen=True)
class DiagnoseTest:
    """One group of one diagnose round: what ran, where, and what it measured."""

    #: NVCRE's test stage (screening, screening-no-nvl, inter-screening, bisection, confirmation)
    stage: str
    #: the Job's name
    name: str
    nodes: tuple[str, ...]
    passed: bool
    #: the screening domain (first-round groups only)
    domain: str = ""
    bus_bw: float | None = None
    #: the group's name in its round (``local-2``, ``bisect-1-0a``)
    group: str = ""


@dataclass(frozen=True)
class DiagnosisVerdict:
    """Where a ``testScale: diagnose`` run is, or what it concluded."""

    #: NVCRE's stage name (``complete`` once concluded)
    stage: str
    rounds: int
    jobs: int
    #: nodes blamed, with the reason and message the failed-nodes list holds
    confirmed: tuple[FailedNode, ...] = ()
    infrastructure_faults: tuple[InfrastructureFaultVerdict, ...] = ()
    #: nodes that failed but were neither confirmed nor cleared (never blamed)
    unresolved: tuple[str, ...] = ()
    healthy_nodes: int = 0
    planner: str = ""
    #: nodes still under suspicion (``status.orchestration.diagnose.suspectNodes``)
    suspect_count: int = 0
    #: every group of every round, oldest first
    tests: tuple[DiagnoseTest, ...] = ()
    #: the first round's groups (screening domain -> its nodes), to say where a faulty node sits
    screening: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def complete(self) -> bool:
        return self.stage == "complete"

    @property
    def extremes(self) -> tuple[DiagnoseTest, DiagnoseTest] | None:
        """The tests with the highest and the lowest bus bandwidth (the first of equals), None
        when no test measured any."""
        measured = [t for t in self.tests if t.bus_bw is not None and t.bus_bw > 0]
        if not measured:
            return None
        return max(measured, key=lambda t: t.bus_bw or 0.0), min(measured, key=lambda t: t.bus_bw or 0.0)


@dataclass(frozen=True)
class CategoryVerdict:
    """One category (one Workflow)."""

    domain: str
    variant: str
    #: Pending, InProgress, Succeeded or Failed
    status: str
    workflow: str = ""
    failure_reason: str = ""
    #: the Workflow's whole InProgress message while a Job's scheduling is blocked (Running categories only)
    blocked: str = ""
    runtime_seconds: float | None = None
    iteration_count: int = 1
    iterations: tuple[IterationVerdict, ...] = ()
    test_scale: str = ""
    placement: str = ""
    nodes_per_job: int = 0
    jobs: int = 0
    target_nodes: int = 0
    exercised_nodes: int = 0
    mnnvl: str = ""
    groups: tuple[GroupVerdict, ...] = ()
    bandwidth: tuple[BandwidthPoint, ...] = ()
    transport: tuple[str, ...] = ()
    measures_bandwidth: bool = False
    training: TrainingMetrics | None = None
    env_names: tuple[str, ...] = ()
    #: the diagnose hint: a failed bandwidth category with a multi-node group that recorded none
    next_step: str = ""
    #: set for ``testScale: diagnose`` once its status has a diagnose block
    diagnosis: DiagnosisVerdict | None = None
    #: topology-aware runs: each domain's validated nodes
    cliques: tuple[CliqueVerdict, ...] = ()
    #: training runs: metrics per topology domain of the groups
    domain_training: tuple[DomainTraining, ...] = ()

    @property
    def failed_groups(self) -> tuple[GroupVerdict, ...]:
        return tuple(group for group in self.groups if group.failed)

    @property
    def restarted_groups(self) -> tuple[GroupVerdict, ...]:
        return tuple(group for group in self.groups if group.restarts is not None)

    @property
    def retried_groups(self) -> tuple[GroupVerdict, ...]:
        """Groups that passed only after failed attempts of their workload were retried."""
        return tuple(group for group in self.groups if group.retries is not None and not group.failed)

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"


@dataclass(frozen=True)
class WorkflowState:
    """A Workflow's lifecycle, for the status gauges."""

    name: str
    namespace: str
    certification: str
    status: str


@dataclass(frozen=True)
class JobState:
    """A Job's lifecycle, for the status gauges (timed out counts as failed)."""

    name: str
    namespace: str
    workflow: str
    status: str
    timed_out: bool = False


@dataclass(frozen=True)
class MeasurementState:
    """A bandwidth measurement's rows, for the NCCL gauges (gone once it completes)."""

    name: str
    namespace: str
    job: str
    workflow: str
    test_type: str
    complete: bool
    rows: tuple[BandwidthPoint, ...]
    #: the reason its run cannot be trusted (``status.failure.reason``), "" when none
    failure_reason: str = ""


@dataclass(frozen=True)
class NodeResult:
    """Per-node outcome (WorkloadRun reports only)."""

    name: str
    group: str
    status: str


@dataclass(frozen=True)
class CertificationVerdict:
    """THE verdict of a Certification or a WorkloadRun."""

    kind: str
    name: str
    namespace: str
    #: InProgress, Succeeded, Failed or "" when no lifecycle condition is true yet
    status: str
    result: str
    platform: str = ""
    gpu: str = ""
    total_nodes: int = 0
    excluded_nodes: tuple[str, ...] = ()
    exclusion_reason: str = ""
    categories: tuple[CategoryVerdict, ...] = ()
    failed_nodes: tuple[FailedNode, ...] = ()
    node_results: tuple[NodeResult, ...] = ()
    workflows: tuple[WorkflowState, ...] = ()
    jobs: tuple[JobState, ...] = ()
    measurements: tuple[MeasurementState, ...] = field(default=())

    @property
    def title(self) -> str:
        return "WorkloadRun Report" if self.kind == "WorkloadRun" else "Certification Report"

    @property
    def failed_node_names(self) -> tuple[str, ...]:
        return tuple(sorted({node.name for node in self.failed_nodes}))

    @property
    def passed_categories(self) -> int:
        return sum(1 for category in self.categories if category.status == "Succeeded")
