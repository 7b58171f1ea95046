"""A rank killed in the first attempt only (``killed-rank-once``) on two real nodes: the kubelet
restarts the MPI launcher in place (the catalog's ``restartPolicy: OnFailure``), the retry runs
clean, and the certification PASSES, as NVCRE judges it (its Job looks only at the TrainJob's
``Complete`` and ``Failed`` conditions). What is new is that the run says so: the group's Job
succeeds with a message naming the attempt that passed and how the earlier one ended, and a
Warning Event ``WorkloadAttemptFailed`` says the same. The environment is stopped at the end and
the host left as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.vocabulary import ANNOTATION_GROUP_NODES
from nvcre.runtime.judge.retry_note import retries_of_job
from tests.realnodes.realnodes_helpers import Environment, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: retried
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
  categories:
  - domain: communication
    variant: nccl-all-reduce
    options:
      nodesPerJob: 1
      gpusPerNode: 2
      maxBytes: 4M
      numIterations: 20
      numCycles: 1
"""


def _jobs_and_events(cluster: Any, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's nvcre Jobs and its Events (events.k8s.io, read as plain JSON: the client's model
    refuses the kubelet's Events, which carry no ``eventTime``)."""
    from kubernetes import client

    with cluster.api_client() as api_client:
        jobs = client.CustomObjectsApi(api_client).list_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs")
        raw = client.EventsV1Api(api_client).list_namespaced_event(namespace, _preload_content=False)
        events = json.loads(raw.data)
    return list(jobs.get("items") or []), list(events.get("items") or [])


def test_a_rank_killed_in_the_first_attempt_only_passes_and_the_job_names_the_failed_attempt(env: Environment, tmp_path: Path) -> None:
    from nvcre.testing.realnodes.faults import RealFault

    cluster = env.cluster
    victim, _healthy = cluster.node_names
    cluster.set_fault(victim, RealFault("killed-rank-once"))
    killer = cluster.rank_killers[victim]
    cert, results = tmp_path / "retried.yaml", tmp_path / "retried.json"
    cert.write_text(CERTIFICATION)
    try:
        run = nvcrectl(
            cluster, "certification", "run", "--cert-file", str(cert), "--grant-run-access", "--wait", "--timeout", "8m",
            "--results-file", str(results),
        )  # fmt: skip
    finally:
        cluster.set_fault(victim, "none")
    assert run.returncode == 0, (run.stderr[-3000:], run.stdout[-3000:])
    assert killer.killed and {k.program for k in killer.killed} == {"all_reduce_perf_mpi"}, killer.killed
    report = json.loads(results.read_text())
    assert (report["result"], report["failedNodes"]) == ("PASSED", [])
    [retried_group] = report["categories"][0]["retriedGroups"]  # the report says what the retry hid
    assert retried_group["passedOnAttempt"] == 2 and retried_group["failedRuns"][0]["exitCode"] != 0, retried_group

    created = re.search(r"created in namespace (\S+?)\.?$", run.stderr, re.MULTILINE)
    assert created is not None, run.stderr
    jobs, events = _jobs_and_events(cluster, created.group(1))
    retried = [(job, found) for job in jobs if (found := retries_of_job(job)) is not None]
    assert len(retried) == 1, [j.get("status") for j in jobs]
    job, found = retried[0]
    assert found.attempt == 2 and found.undetailed == 0, found
    (failure,) = found.failed
    assert (failure.attempt, failure.role, failure.container) == (1, "launcher", "node"), failure
    assert failure.exit_code != 0 and failure.node in cluster.node_names and failure.pod and failure.finished_at, failure
    # the group whose ranks were killed is the one that retried
    group_nodes = job["metadata"]["annotations"].get(ANNOTATION_GROUP_NODES, "")
    assert group_nodes == victim, job["metadata"]
    name = job["metadata"]["name"]
    warned = [e for e in events if e.get("reason") == "WorkloadAttemptFailed" and (e.get("regarding") or {}).get("name") == name]
    assert len(warned) == 1 and warned[0].get("type") == "Warning", warned
    assert "passed on attempt 2 after 1 failed run" in str(warned[0].get("note")), warned
