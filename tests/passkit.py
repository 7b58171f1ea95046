"""Shared test kit for the Workflow passes: hand-written Workflow fixtures and their catalog entries."""

from __future__ import annotations

from pathlib import Path

from nvcre.compiler.unit import EntryInfo

FIXTURES = Path(__file__).parent / "fixtures" / "workflows"

#: fixture name -> the entry it stands for (launch style decides how env and barriers are rendered)
ENTRIES = {
    "mpi-all-reduce": EntryInfo("communication", "nccl-all-reduce", "mpi", launcher_job="launcher"),
    "loopback": EntryInfo("communication", "nccl-loopback", "single"),
    "dcgm-level4": EntryInfo("diagnostics", "dcgm-level4", "single"),
    "nemotron5-8b": EntryInfo("training", "nemotron5-8b", "torch"),
}


def pod_specs(workflow: dict) -> dict[str, dict]:
    """Replicated job name -> pod spec of the TrainingRuntime in ``workflow``."""
    runtime = next(dep for dep in workflow["spec"]["dependencies"] if dep["kind"] == "TrainingRuntime")
    return {job["name"]: job["template"]["spec"]["template"]["spec"] for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
