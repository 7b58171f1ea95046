"""The measurement tier records a diverged training run on the GoodputMeasurement, sampled and
final, and says why a finished training log gave no step.

The same offline API seam as the sampling tests: a fake clock, a pod log served as ``pods/log``
serves it (kubelet timestamps, ``sinceTime``), and the reconciler as the controller runs it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from nvcre.runtime.clock import format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge.measured import measurement_failure
from nvcre.runtime.kube.resources import JOBS
from nvcre.runtime.reconcile import measurement as measurement_module
from nvcre.runtime.reconcile.context import Context
from tests.runtime.reconcile.test_measurement_sampling import INTERVAL, T0, Cluster, _reconcile, _setup


def _line(second: int, iteration: int, loss: str, nan_iterations: int = 0) -> str:
    when = T0 + timedelta(seconds=second)
    return (
        f"{when:%Y-%m-%dT%H:%M:%S}.000000000Z [{when:%Y-%m-%d %H:%M:%S}.000000] iteration {iteration:8d}/     200 | "
        "consumed samples: 320 | elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 510.0 | "
        f"learning rate: 3.000000E-04 | global batch size:    32 | lm loss: {loss} | loss scale: 1.0 | "
        f"grad norm: nan | number of skipped iterations:   0 | number of nan iterations: {nan_iterations:3d} |\n"
    )


def _finish(cluster: Cluster, ctx: Context, second: int) -> None:
    job = ctx.stores[JOBS.plural].get("j", "ns")
    assert job is not None
    done = format_time(T0 + timedelta(seconds=second))
    job["status"] = cond.set_lifecycle(job["status"], cond.SUCCEEDED, "WorkloadCompleted", "done", done)
    ctx.stores[JOBS.plural].put(job)


def test_a_diverged_run_is_recorded_while_it_runs_and_when_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    healthy = [_line(s, 10 * s, "2.500000E+00") for s in range(1, 8)]
    diverged = [_line(s, 10 * s, "NAN", 10) for s in range(8, 12)]
    cluster.text = "".join(healthy)
    cluster.now = 8.0
    _reconcile(cluster, ctx, reconciler)
    status = cluster.goodput()["status"]
    assert cond.condition(status, "Diverged") is None and measurement_failure(cluster.goodput()) is None

    cluster.text = "".join(healthy + diverged)
    cluster.now += INTERVAL
    _reconcile(cluster, ctx, reconciler)
    sampled = cond.condition(cluster.goodput()["status"], "Diverged") or {}
    assert (sampled.get("status"), sampled.get("reason")) == ("True", "TrainingLossNotFinite")
    assert "iteration 80" in sampled["message"]

    _finish(cluster, ctx, 13)
    _reconcile(cluster, ctx, reconciler)
    final = cluster.goodput()["status"]
    assert (cond.condition(final, "Complete") or {}).get("reason") == "JobSucceeded"
    assert final["highestStep"] == 110 and final["result"]  # the steps' goodput stays visible
    failure = measurement_failure(cluster.goodput())
    assert failure is not None and failure.reason == "TrainingLossNotFinite"
    assert "4 iteration line(s)" in failure.message


def test_a_finished_log_whose_lines_carry_no_step_time_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    # Megatron lines whose step-time field the (user) profile cannot read, and no timestamps at all
    profile = ctx.stores["logprofiles"].get("megatron-training", None)
    assert profile is not None
    profile["spec"]["patterns"]["trainingStep"]["regex"] = r"iteration\s+(?P<iteration>\d+)/\s*\d+ \|(?P<elapsedTime>x)?"
    profile["spec"]["patterns"]["trainingStep"]["example"] = "iteration 10/ 200 |"
    ctx.stores["logprofiles"].put(profile)
    cluster.text = "".join(line.split(" ", 1)[1].split("] ", 1)[1] for line in (_line(s, 10 * s, "2.5") for s in range(1, 6)))
    _finish(cluster, ctx, 6)
    cluster.now = 7.0
    _reconcile(cluster, ctx, reconciler)
    complete = cond.condition(cluster.goodput()["status"], "Complete") or {}
    assert complete.get("reason") == "NoDataCollected"
    assert "5 iteration line(s) matched" in complete["message"] and "none carried a step time" in complete["message"]
