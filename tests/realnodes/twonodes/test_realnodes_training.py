"""A training category carried out on two real nodes with JobSet, the Kubeflow Trainer and the
nvcre controller, as a user runs it (``nvcrectl certification run --wait``).

``training/nemotron5-8b`` renders a TrainJob whose init container copies Megatron-LM from the
image's ``/opt/megatron-lm`` and whose ``train.sh`` installs it with pip, then runs ``torchrun
... pretrain_gpt.py`` with the catalog's Megatron options. The workload image answers each of
those names with a CPU stand-in: ``torchrun`` starts one worker per GPU the pod asked for, and
``pretrain_gpt.py`` trains a small model for real, tensor-parallel inside each pod and
data-parallel across the two pods over TCP, logging Megatron's iteration lines. The category
PASSES with the goodput nvcre read from that log, a goodput floor it cannot reach FAILS with
``ThresholdViolation`` naming both nodes, and the last test stops the environment and checks
the host is as it was."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import Environment, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

STEPS = 50
CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {name}
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
    taintSelectors:
    - key: nvidia.com/gpu
      effect: NoSchedule
  categories:
  - domain: training
    variant: nemotron5-8b
    options:
      nodesPerJob: 2
      gpusPerNode: 2
      maxSteps: {steps}
      resources:
        limits: {{cpu: "2", memory: 2Gi}}
        requests: {{cpu: 100m, memory: 256Mi}}
      thresholds:
        goodputRatio: "{floor}"
"""


def certify(env: Environment, tmp_path: Path, name: str, floor: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    """``certification run --wait`` of the training category; (the run, its results, its namespace)."""
    cert, results = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    cert.write_text(CERTIFICATION.format(name=name, steps=STEPS, floor=floor))
    run = nvcrectl(
        env.cluster, "certification", "run", "--cert-file", str(cert), "--grant-run-access", "--wait", "--timeout", "6m",
        "--results-file", str(results), timeout=540,
    )  # fmt: skip
    created = re.search(r"created in namespace (\S+?)\.?$", run.stderr, re.MULTILINE)
    assert created is not None and results.is_file(), (run.returncode, run.stdout[-2000:], run.stderr[-3000:])
    return run, json.loads(results.read_text()), created.group(1)


def node_logs(cluster: Any, namespace: str) -> dict[str, tuple[str, str]]:
    """Each training pod's ``node`` container log with timestamps, and the node it ran on, by pod name."""
    from kubernetes import client

    core = client.CoreV1Api(cluster.api_client())
    pods = core.list_namespaced_pod(namespace).items
    assert len(pods) == 2 and all([s.restart_count for s in p.status.container_statuses] == [0] for p in pods), pods
    return {
        p.metadata.name: (
            str(core.read_namespaced_pod_log(p.metadata.name, namespace, container="node", timestamps=True)),
            p.spec.node_name,
        )
        for p in pods
    }


@dataclass
class TrainingRun:
    """The passing run: its CLI result, its results file, and each pod's log with its node."""

    run: subprocess.CompletedProcess[str]
    results: dict[str, Any]
    logs: dict[str, tuple[str, str]]


@pytest.fixture(scope="module")
def passed(env: Environment, tmp_path_factory: pytest.TempPathFactory) -> TrainingRun:
    """The training category with a goodput floor it can meet, and its pods' logs read right after."""
    run, results, namespace = certify(env, tmp_path_factory.mktemp("training"), "training", "value >= 0.05")
    return TrainingRun(run, results, node_logs(env.cluster, namespace) if run.returncode == 0 else {})


def _megatron_profile() -> dict[str, Any]:
    from nvcre.compiler.logprofiles import builtin_logprofiles

    [profile] = [p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training"]
    return profile


def test_a_training_category_passes_with_the_goodput_read_from_the_standins_real_log(env: Environment, passed: TrainingRun) -> None:
    from nvcre.runtime.measure.training import calculate_goodput, parse_training

    run, results = passed.run, passed.results
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert (results["result"], results["failedNodes"], results["totalNodes"]) == ("PASSED", [], 2)
    [category] = results["categories"]
    assert (category["variant"], category["status"]) == ("nemotron5-8b", "Succeeded")
    training = category["training"]
    ratio = float(training["goodput"].split()[0])
    assert 0.05 <= ratio <= 1.0, training

    # One pod per node; the first logged Megatron's start line, the last the iteration lines.
    assert sorted(node for _, node in passed.logs.values()) == sorted(env.cluster.node_names)
    text = "\n".join(log for log, _ in passed.logs.values())
    assert text.count("train.sh: gpus=4 tp=2 pp=1 micro_batch=1 global_batch=4") == 2, text[-3000:]
    assert "using world size: 4, data-parallel size: 2," in text and "tensor-model-parallel size: 2" in text, text[-3000:]
    [last] = [log for log, _ in passed.logs.values() if "] iteration " in log]
    parsed = parse_training(last, _megatron_profile())
    assert [s.iteration for s in parsed.steps] == list(range(10, STEPS + 1, 10)), last[-3000:]
    # Real steps: measured times, a throughput from the operations done, a loss that falls.
    assert all(s.elapsed_time > 0 and s.tflops is not None and s.tflops > 0 for s in parsed.steps), parsed.steps
    losses = [s.loss for s in parsed.steps if s.loss is not None]
    assert len(losses) == len(parsed.steps) and losses[-1] < losses[0], losses
    assert len({s.elapsed_time for s in parsed.steps}) > 1, parsed.steps  # measured, not a constant
    # The report's step time is the log's: the mean of the steps after the warm-up.
    end = parsed.steps[-1].timestamp
    assert end is not None
    average = calculate_goodput(parsed, end).avg_step_time
    assert average is not None and abs(float(training["stepTime"].removesuffix("s")) - average) <= 0.006, (training, average)


# A defect the real nodes found: the goodput read only the trainingStepPod's log, so Megatron's start
# line (rank 0, the lifecyclePod) was never seen and the start-up counted as productive time (1.00).
def test_the_goodput_leaves_out_the_startup_the_first_pods_log_shows(passed: TrainingRun) -> None:
    from nvcre.runtime.measure.training import parse_training

    assert passed.run.returncode == 0, passed.run.stderr[-3000:]
    [first] = [log for log, _ in passed.logs.values() if "using world size: " in log]
    [last] = [log for log, _ in passed.logs.values() if "] iteration " in log]
    started, steps = parse_training(first, _megatron_profile()).application_start, parse_training(last, _megatron_profile()).steps
    # Rendezvous, set-up and the first ten steps lie between the start line and the first logged step.
    assert started is not None and steps[0].timestamp is not None and (steps[0].timestamp - started).total_seconds() > 0.1
    [category] = passed.results["categories"]
    assert float(category["training"]["goodput"].split()[0]) < 0.99, category["training"]


def test_a_goodput_floor_the_run_cannot_reach_fails_with_threshold_violation_on_both_nodes(env: Environment, tmp_path: Path) -> None:
    run, results, _ = certify(env, tmp_path, "training-floor", "value > 1.0")
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr[-3000:])
    assert results["result"] == "FAILED"
    assert sorted((d["name"], d["reason"]) for d in results["failedNodeDetails"]) == [
        (node, "ThresholdViolation") for node in sorted(env.cluster.node_names)
    ]
    [category] = results["categories"]
    assert category["status"] == "Failed" and float(category["training"]["goodput"].split()[0]) > 0, category
