"""A multi-node training run's goodput counts the start-up its lifecycle pod logged.

Megatron prints ``using world size ...`` (and its checkpoint saves) on the first rank and its
iteration lines on the last, which is why the built-in profile reads steps from the last pod
(``trainingStepPod: last``) and the run's lifecycle from the first (``lifecyclePod: first``).
Reading the last pod alone, a run that spent a minute starting before its first step read
goodput 1.00 on real nodes; the final read now takes the start from the first pod's log.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from nvcre.runtime.clock import format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge.pods import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from nvcre.runtime.kube.resources import JOBS, LOGPROFILES, PODS
from nvcre.runtime.reconcile import measurement as measurement_module
from nvcre.runtime.reconcile.context import Context
from tests.runtime.reconcile.test_measurement_sampling import T0, Cluster, _reconcile, _setup

FIRST, LAST = "j-workload-node-0-0", "j-workload-node-1-0"
START = (
    "using world size: 16, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 8, pipeline-model-parallel size: 1"
)


def _stamp(second: float) -> str:
    when = T0 + timedelta(seconds=second)
    return f"{when:%Y-%m-%dT%H:%M:%S}.000000000Z"


def _step(second: int, iteration: int) -> str:
    when = T0 + timedelta(seconds=second)
    return (
        f"{_stamp(second)} [{when:%Y-%m-%d %H:%M:%S}.000000] iteration {iteration:8d}/     200 | consumed samples: 320 | "
        "elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 510.0 | lm loss: 2.500000E+00 |\n"
    )


class TwoPods(Cluster):
    """Each pod its own log: the first rank's start-up, the last rank's steps."""

    def __init__(self, logs: dict[str, str]) -> None:
        super().__init__()
        self.logs = logs

    def pod_log(self, name: str, namespace: str, **options: Any) -> str:
        self.text = self.logs[name]
        return str(super().pod_log(name, namespace, **options))


def _run(monkeypatch: pytest.MonkeyPatch, logs: dict[str, str], *, strategy: dict[str, str] | None = None) -> dict[str, Any]:
    _, ctx, reconciler = _setup()
    cluster = TwoPods(logs)
    cluster.objects = ctx.kube.objects  # type: ignore[attr-defined]
    ctx.kube = cluster  # type: ignore[assignment]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    pods = ctx.stores[PODS.plural]
    (only,) = pods.list()
    pods.remove(only)
    for index, name in enumerate((FIRST, LAST)):
        pod = copy.deepcopy(only)
        pod["metadata"].update(name=name, uid=f"pod-{index}", labels={JOBSET_NAME_LABEL: "j-workload", REPLICATED_JOB_LABEL: "node"})
        pods.put(pod)
    if strategy is not None:
        profile = ctx.stores[LOGPROFILES.plural].get("megatron-training", None)
        assert profile is not None
        profile["spec"]["workerStrategy"] = strategy
        ctx.stores[LOGPROFILES.plural].put(profile)
    _finish(ctx, 101)
    cluster.now = 102.0
    _reconcile(cluster, ctx, reconciler)
    status = cluster.goodput()["status"]
    assert (cond.condition(status, "Complete") or {}).get("reason") == "JobSucceeded", status
    return status


def _finish(ctx: Context, second: int) -> None:
    job = ctx.stores[JOBS.plural].get("j", "ns")
    assert job is not None
    job["status"] = cond.set_lifecycle(
        job["status"], cond.SUCCEEDED, "WorkloadCompleted", "done", format_time(T0 + timedelta(seconds=second))
    )
    ctx.stores[JOBS.plural].put(job)


LOGS = {
    FIRST: f"{_stamp(0)} {START}\n{_stamp(1)} building GPT model ...\n",
    LAST: "".join(_step(60 + s, 10 * (s + 1)) for s in range(40)),
}


def test_the_start_up_the_first_pod_logged_is_not_productive_time(monkeypatch: pytest.MonkeyPatch) -> None:
    status = _run(monkeypatch, LOGS)
    # 60 s of start-up before the first step, 39 s of steps after it: about 0.39, never 1.00
    assert float(status["result"]) < 0.5, status
    assert status.get("applicationStartTime") == format_time(T0)


def test_one_pod_for_both_reads_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    status = _run(monkeypatch, LOGS, strategy={"type": "Multi", "lifecyclePod": "last", "trainingStepPod": "last"})
    assert float(status["result"]) == pytest.approx(1.0)
    assert "applicationStartTime" not in status
