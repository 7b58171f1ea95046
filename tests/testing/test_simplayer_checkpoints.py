"""The workload player's checkpoint memory and crash-once faults, offline (decide() is pure)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from nvcre.runtime.measure.training import calculate_goodput, parse_training
from nvcre.testing import simlogs
from nvcre.testing.simfaults import parse_fault
from nvcre.testing.simplayer import PlayerMemory, attempt_key, checkpoint_claim, decide
from nvcre.testing.simprofiles import profile
from nvcre.testing.simworkloads import classify

ROOT = Path(__file__).resolve().parents[2]
MEGATRON = yaml.safe_load((ROOT / "catalog/logprofiles/megatron-training.yaml").read_text())["spec"]
STARTED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CLAIM = "nemotron5-8b-pvc-abcde-job"


class View:
    def __init__(self, faults: dict[str, str]) -> None:
        self.faults = {n: parse_fault(k) for n, k in faults.items()}

    def profile_of(self, node: str) -> Any:
        return profile("h100")

    def fault_of(self, node: str) -> Any:
        return self.faults.get(node, parse_fault("none"))

    def trigger_xid(self, node: str) -> None:  # pragma: no cover - decide never calls it
        raise AssertionError


def training_pod(index: int, node: str, *, uid: str = "js-uid-1", checkpoint: bool = True, save: str = "50") -> dict[str, Any]:
    env = [{"name": "ENABLE_CHECKPOINT", "value": "true" if checkpoint else "false"}, {"name": "SAVE_INTERVAL", "value": save}]
    return {
        "metadata": {
            "name": f"w-{index}",
            "namespace": "ns",
            "uid": f"pod-{uid}-{index}",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "j-workload",
                "jobset.sigs.k8s.io/jobset-uid": uid,
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
            },
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
            "ownerReferences": [{"kind": "Job", "name": "j-workload-node-0"}],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "node",
                    "command": ["/bin/bash", "/config/train.sh"],
                    "env": env,
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    "volumeMounts": [{"name": "workspace", "mountPath": "/mnt/workspace"}],
                }
            ],
            "volumes": [{"name": "workspace", "persistentVolumeClaim": {"claimName": CLAIM}}],
        },
        "status": {"phase": "Running"},
    }


def play(pods: list[dict[str, Any]], faults: dict[str, str], memory: PlayerMemory | None = None, who: int = -1) -> Any:
    pod = pods[who]
    return decide(pod, classify(pod), pods, View(faults), seed="t", started=STARTED, memory=memory)


def texts(decision: Any) -> list[str]:
    return [line.text for line in decision.lines]


def test_checkpointing_runs_save_on_their_claim_at_the_save_interval() -> None:
    decision = play([training_pod(0, "a"), training_pod(1, "b")], {})
    assert decision.exit_code == 0
    assert decision.checkpoint_claim == f"ns/{CLAIM}"
    assert [i for i, _ in decision.saves] == [50, 100, 150, 200]
    assert "saving checkpoint at iteration      50 to /mnt/workspace/checkpoints in torch_dist format" in " ".join(texts(decision))
    off = play([training_pod(0, "a", checkpoint=False), training_pod(1, "b", checkpoint=False)], {})
    assert off.checkpoint_claim is None and off.saves == ()
    assert not any("saving checkpoint" in t for t in texts(off)), "no --save without ENABLE_CHECKPOINT"


def test_a_new_attempt_on_the_same_claim_resumes_after_the_last_save() -> None:
    pods = [training_pod(0, "a", uid="second"), training_pod(1, "b", uid="second")]
    memory = PlayerMemory(checkpoints={f"ns/{CLAIM}": 100})
    first = play(pods, {}, memory, who=0)
    assert first.resumed_from == 100
    assert "Loading checkpoint from /mnt/workspace/checkpoints" in texts(first)
    assert "  successfully loaded checkpoint from /mnt/workspace/checkpoints [ t 1/1, p 1/1 ] at iteration 100" in texts(first)
    last = play(pods, {}, memory)
    parsed = parse_training("\n".join(texts(first) + texts(last)), MEGATRON)
    assert parsed.checkpoint_restores == ("/mnt/workspace/checkpoints",)
    assert parsed.steps[0].iteration == 110 and parsed.steps[-1].iteration == 200
    fresh = play(pods, {}, PlayerMemory(), who=0)
    assert not any("loading" in t.lower() and "checkpoint" in t for t in texts(fresh))
    # Resuming halfway leaves about half the run to do.
    assert last.seconds < play(pods, {}).seconds


def test_crash_once_crashes_every_pod_of_the_first_attempt_only() -> None:
    faults = {"b": "crash-once"}
    first = [training_pod(0, "a", uid="one"), training_pod(1, "b", uid="one")]
    taken = play(first, faults, who=0)
    assert taken.exit_code == 1 and taken.crash_once_taken == ("b",)
    memory = PlayerMemory(crash_once={"b": taken.attempt})
    sibling = play(first, faults, memory)
    assert sibling.exit_code == 1, "the other pod of the same attempt crashes too"
    assert sibling.crash_once_taken == ()
    assert any("Got completion from peer on b" in t for t in texts(sibling))
    second = [training_pod(0, "a", uid="two"), training_pod(1, "b", uid="two")]
    healthy = play(second, faults, memory)
    assert healthy.exit_code == 0 and healthy.crash_once_taken == ()
    persistent = play(second, {"b": "nccl-crash"}, memory)
    assert persistent.exit_code == 1, "nccl-crash never wears off"


def test_the_attempt_is_the_jobset_uid_and_its_restart_attempt() -> None:
    pod = training_pod(0, "a", uid="u")
    again = training_pod(1, "b", uid="u")
    restarted = training_pod(0, "a", uid="u")
    restarted["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "1"
    assert attempt_key(pod) == attempt_key(again) == "ns/j-workload/u/0"
    assert attempt_key(restarted) != attempt_key(pod)
    assert checkpoint_claim(pod) == (f"ns/{CLAIM}", "/mnt/workspace/checkpoints")


def test_a_crashed_then_resumed_run_parses_into_a_goodput_below_one() -> None:
    crashed = simlogs.training_log(simlogs.TrainingRun(world_size=16, checkpoint_every=50, crash_node="b"), STARTED)
    saves = simlogs.checkpoint_saves(crashed)
    assert saves[-1][0] == 100, "the crash comes after the save at iteration 100"
    assert re.search(r"NCCL error", crashed[-2].text)
    resumed = simlogs.training_log(simlogs.TrainingRun(world_size=16, checkpoint_every=50, resume_from=100), STARTED)
    parsed = parse_training("\n".join(line.text for line in resumed), MEGATRON)
    goodput = calculate_goodput(parsed, parsed.steps[-1].timestamp or STARTED)
    assert 0.0 < goodput.ratio < 1.0 and goodput.last_checkpoint_step == 200


def test_the_last_rank_logs_steps_even_when_its_peer_is_not_listed_yet() -> None:
    """A pod that starts before its peer is listed still knows the declared world (PET_NNODES)."""
    last = training_pod(1, "n1")
    assert not [t for t in texts(play([last], {})) if "] iteration" in t], "without the declared size it cannot know it is last"
    last["spec"]["containers"][0]["env"].append({"name": "PET_NNODES", "value": "2"})
    steps = [t for t in texts(play([last], {})) if "] iteration" in t]
    assert steps and steps[-1].split("iteration")[1].split("/")[0].strip() == "200"
