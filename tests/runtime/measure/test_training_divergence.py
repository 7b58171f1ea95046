"""A diverged training run is seen, never dropped, and fails its measurement; a step line without
a step time takes one from the timestamps, and an empty training read says why it is empty.

The diverged lines are the shapes the tools print: Megatron-LM formats a NaN loss average with
``{:.6E}`` (``lm loss: NAN``) and counts ``number of nan iterations``; Lightning prints
``reduced_train_loss=nan.0`` (the NeMo 1 bar below is a real one,
https://github.com/NVIDIA-NeMo/Speech/issues/7957). The untimed lines are real too: NeMo 2
without ``train_step_timing`` (https://github.com/NVIDIA-NeMo/Speech/pull/10128) and NeMo
Automodel's ``step N | epoch E | loss L`` lines (https://github.com/NVIDIA-NeMo/Automodel/pull/3473).
"""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.judge.measured import (
    MEASUREMENT_FAILURE_REASONS,
    first_failure,
    measurement_failure,
    measurement_unsettled,
)
from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.measure import goodput_state
from nvcre.runtime.measure.goodput_state import GoodputTail, RunningGoodput, fold
from nvcre.runtime.measure.training import DIVERGED_CONDITION, LOSS_NOT_FINITE, calculate_goodput, parse_training
from nvcre.runtime.reconcile.measurement_kinds import CONDITION_FIELD, GoodputKind, diverged_condition, no_step_message
from nvcre.runtime.report import json as json_report
from tests.goldenharness import GOLDEN

REAL = Path(__file__).resolve().parents[3] / "golden" / "measure" / "real" / "training"
T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def _profile(name: str) -> dict[str, Any]:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == name)


def _megatron(iteration: int, loss: str, nan_iterations: int = 0, *, when: datetime | None = None) -> str:
    stamp = f"[{(when or T0 + timedelta(seconds=iteration)):%Y-%m-%d %H:%M:%S}.000000] "
    return (
        f"{stamp}iteration {iteration:8d}/     200 | consumed samples: {iteration * 32:10d} | "
        "elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 510.0 | "
        f"learning rate: 3.000000E-04 | global batch size:    32 | lm loss: {loss} | loss scale: 1.0 | "
        f"grad norm: 1.012 | number of skipped iterations:   0 | number of nan iterations: {nan_iterations:3d} |"
    )


def _diverged_megatron_log() -> str:
    """Ten reports: finite losses up to iteration 60, NAN from iteration 70 on."""
    lines = [_megatron(i, "2.500000E+00") for i in range(10, 70, 10)]
    lines += [_megatron(i, "NAN", 10) for i in range(70, 110, 10)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the parser


def test_megatron_nan_steps_are_counted_and_the_first_is_named() -> None:
    parsed = parse_training(_diverged_megatron_log(), _profile("megatron-training"))
    # every report is a step: the diverged ones are not dropped
    assert [s.iteration for s in parsed.steps] == list(range(10, 110, 10))
    assert parsed.diverged_lines == 4
    assert parsed.first_diverged == (70, "loss nan and 10 nan iteration(s)")
    diverged = parsed.steps[6]
    assert diverged.diverged and math.isnan(diverged.loss or 0.0) and diverged.nan_iterations == 10
    assert not parsed.steps[0].diverged
    # the JSON projection carries no NaN (JSON has none): the loss is named instead
    projected = diverged.to_dict()
    assert "loss" not in projected and projected["lossNotFinite"] == "nan" and projected["nanIterations"] == 10
    assert parsed.to_dict()["firstDiverged"] == {"iteration": 70, "shows": "loss nan and 10 nan iteration(s)"}


@pytest.mark.parametrize("text", ["nan", "NAN", "-nan", "inf", "INF", "-inf", "+inf"])
def test_every_spelling_of_a_non_finite_loss_is_seen(text: str) -> None:
    parsed = parse_training(_megatron(10, text) + "\n", _profile("megatron-training"))
    assert len(parsed.steps) == 1 and parsed.diverged_lines == 1
    assert parsed.first_diverged is not None and parsed.first_diverged[0] == 10


def test_nan_iterations_alone_mark_a_diverged_run() -> None:
    # the interval's average loss can be finite while some of its iterations were nan
    parsed = parse_training(_megatron(10, "2.500000E+00", 3) + "\n", _profile("megatron-training"))
    assert parsed.first_diverged == (10, "3 nan iteration(s)")


def test_megatron_deepspeed_reads_a_nan_loss_and_its_tflops() -> None:
    line = (REAL / "megatron-deepspeed-2023-no-loss-tflops.txt").read_text(encoding="utf-8").splitlines()[0]
    diverged = line.replace("| loss scale:", "| lm loss: NAN | loss scale:").replace("nan iterations:   0", "nan iterations:   1")
    parsed = parse_training(diverged + "\n", _profile("megatron-deepspeed-training"))
    (step,) = parsed.steps
    assert step.tflops == 78.36 and step.elapsed_time == pytest.approx(4.2479) and step.iteration == 5426
    assert parsed.first_diverged == (5426, "loss nan and 1 nan iteration(s)")


def test_nemo2_nan_loss_is_seen() -> None:
    line = (
        "Training epoch 0, iteration 41/999 | lr: 2.999e-06 | global_batch_size: 512 | global_step: 41 | "
        "reduced_train_loss: nan | train_step_timing in s: 46.86 | consumed_samples: 21504"
    )
    parsed = parse_training(line + "\n", _profile("nemo2-training"))
    assert [s.iteration for s in parsed.steps] == [41] and parsed.first_diverged == (41, "loss nan")


def test_the_real_nemo1_nan_bar_is_seen_as_a_diverged_iteration_line() -> None:
    text = (REAL / "nemo1-2023-progress-bar-nan.txt").read_text(encoding="utf-8")
    parsed = parse_training(text, _profile("nemo1-training"))
    # the bar prints no s/it and the excerpt no timestamp: no step, but the nan.0 is seen
    assert parsed.iteration_lines == 1 and parsed.untimed_lines == 1 and parsed.steps == ()
    assert parsed.first_diverged == (9000, "loss nan")
    # the same bar under kubelet timestamps, after a healthy one: a step, with its NaN loss
    healthy = text.splitlines()[0].replace("reduced_train_loss=nan.0", "reduced_train_loss=3.090").replace("9e+3", "8999.0")
    stamped = f"2023-11-30T01:13:38.000000000Z {healthy}\n2023-11-30T01:13:38.615000000Z {text.splitlines()[0]}\n"
    parsed = parse_training(stamped, _profile("nemo1-training"))
    assert [s.iteration for s in parsed.steps] == [9000] and math.isnan(parsed.steps[0].loss or 0.0)
    assert parsed.steps[0].elapsed_time == pytest.approx(0.615) and parsed.steps[0].derived_time


def test_the_real_nemo1_bar_reads_its_step_time_and_float_global_step() -> None:
    text = (REAL / "nemo1-2023-progress-bar-loss-global-step.txt").read_text(encoding="utf-8")
    (step,) = parse_training(text, _profile("nemo1-training")).steps
    assert (step.iteration, step.epoch, step.elapsed_time, step.loss) == (794, 0, 41.36, 3.090)
    assert not step.derived_time


def test_a_finite_run_shows_no_divergence() -> None:
    text = "\n".join(_megatron(i, "2.500000E+00") for i in range(10, 60, 10)) + "\n"
    parsed = parse_training(text, _profile("megatron-training"))
    assert parsed.diverged_lines == 0 and parsed.first_diverged is None and "firstDiverged" not in parsed.to_dict()


# ------------------------------------------------------------------ step times from timestamps


def _automodel_profile() -> dict[str, Any]:
    """A user LogProfile for NeMo Automodel's step lines, whose elapsedTime never takes part."""
    return {
        "timestamp": {"layout": "2006-01-02 15:04:05"},
        "patterns": {
            "trainingStep": {
                "regex": r"(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) \| INFO \| \S+ \| step (?P<iteration>\d+) \| "
                r"epoch (?P<epoch>\d+) \| loss (?P<loss>[\d.]+)(?P<elapsedTime>x)?"
            }
        },
    }


def test_lines_without_a_step_time_are_timed_by_their_timestamps() -> None:
    text = (REAL / "nemo-automodel-2026-step-lines.txt").read_text(encoding="utf-8")
    parsed = parse_training(text, _automodel_profile())
    # the first line sets the clock; each later one is timed from the one before
    assert parsed.iteration_lines == 7 and parsed.untimed_lines == 1
    assert [s.iteration for s in parsed.steps] == [10, 11, 12, 13, 14, 15]
    assert parsed.steps[0].elapsed_time == 3.0 and all(s.derived_time for s in parsed.steps)
    assert parsed.steps[0].to_dict()["stepTimeFrom"] == "timestamps"


def test_kubelet_timestamps_time_nemo2_lines_without_train_step_timing() -> None:
    lines = (REAL / "nemo2-2024-no-step-timing.txt").read_text(encoding="utf-8").splitlines()
    stamped = "".join(
        f"{(T0 + timedelta(seconds=2 * i)).strftime('%Y-%m-%dT%H:%M:%S')}.000000000Z {line}\n" for i, line in enumerate(lines)
    )
    parsed = parse_training(stamped, _profile("nemo2-training"))
    assert [s.iteration for s in parsed.steps] == list(range(1, 9))
    assert {s.elapsed_time for s in parsed.steps} == {2.0}
    # without timestamps the same lines give no step, and the parse says how many were seen
    bare = parse_training("\n".join(lines) + "\n", _profile("nemo2-training"))
    assert bare.steps == () and (bare.iteration_lines, bare.untimed_lines) == (9, 9)


def test_a_step_time_between_logged_iterations_is_per_iteration() -> None:
    # every 10th iteration logged, 5 s apart: 0.5 s per iteration
    text = "".join(
        f"{(T0 + timedelta(seconds=5 * i)).strftime('%Y-%m-%dT%H:%M:%S')}.000000000Z Training epoch 0, iteration {10 * i}/99 | "
        f"global_step: {10 * i} | reduced_train_loss: 2.0\n"
        for i in range(1, 5)
    )
    parsed = parse_training(text, _profile("nemo2-training"))
    assert [(s.iteration, s.elapsed_time) for s in parsed.steps] == [(20, 0.5), (30, 0.5), (40, 0.5)]


def test_running_sums_in_batches_equal_one_read_of_the_whole_log(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = (REAL / "nemo2-2024-no-step-timing.txt").read_text(encoding="utf-8").splitlines()
    stamped = "".join(
        f"{(T0 + timedelta(seconds=3 * i)).strftime('%Y-%m-%dT%H:%M:%S')}.000000000Z {line}\n" for i, line in enumerate(lines)
    )
    spec = _profile("nemo2-training")
    end = T0 + timedelta(minutes=5)
    whole = calculate_goodput(parse_training(stamped, spec), end)
    monkeypatch.setattr(goodput_state, "BATCH_LINES", 2)  # the anchor crosses every batch
    pieces = stamped.splitlines(keepends=True)
    state = fold(RunningGoodput(), ["".join(pieces[:3]), "".join(pieces[3:])], spec)
    assert state.steps == 8 and state.untimed_lines == 1
    assert state.goodput(end) == whole.__class__(**{**whole.__dict__, "non_warmup_steps": ()})


def test_an_empty_read_says_why_it_has_no_step() -> None:
    lines = (REAL / "nemo2-2024-no-step-timing.txt").read_text(encoding="utf-8")
    state = fold(RunningGoodput(), lines, _profile("nemo2-training"))
    message = no_step_message(state)
    assert "9 iteration line(s) matched" in message and "none carried a step time" in message
    assert "no line matched" in no_step_message(fold(RunningGoodput(), "nothing here\n", _profile("nemo2-training")))


# ------------------------------------------------------------------ the measurement


def test_the_measurement_fields_carry_the_diverged_condition_and_keep_the_goodput() -> None:
    text = "".join(
        f"{(T0 + timedelta(seconds=i)).strftime('%Y-%m-%dT%H:%M:%S')}.000000000Z {line}\n"
        for i, line in enumerate(_diverged_megatron_log().splitlines())
    )
    spec = _profile("megatron-training")
    fields = GoodputKind().fields(spec, text, "2026-12-06T09:05:00Z", {}, lambda: T0)
    condition = fields[CONDITION_FIELD]
    assert (condition["type"], condition["status"], condition["reason"]) == (DIVERGED_CONDITION, "True", LOSS_NOT_FINITE)
    assert "iteration 70" in condition["message"] and "4 iteration line(s)" in condition["message"]
    assert fields["result"] and fields["highestStep"] == 100  # goodput of the steps stays visible
    # a clean run carries no condition
    clean = "".join(line + "\n" for line in _diverged_megatron_log().splitlines()[:6])
    assert CONDITION_FIELD not in GoodputKind().fields(spec, clean, "2026-12-06T09:05:00Z", {}, lambda: T0)


def test_an_older_tail_without_the_new_sums_still_reads() -> None:
    state = fold(RunningGoodput(), _diverged_megatron_log(), _profile("megatron-training"))
    assert diverged_condition(state) is not None
    tail = GoodputTail("pod/0", state=state)
    restored = GoodputTail.from_json(tail.to_json())
    assert restored is not None and restored.state == state
    old = state.to_dict()
    for name in (
        "iteration_lines",
        "untimed_lines",
        "diverged_lines",
        "first_diverged_iteration",
        "first_diverged_shows",
        "anchor_iteration",
        "anchor_time",
    ):
        old.pop(name)
    assert RunningGoodput.from_dict(old).steps == state.steps
    with pytest.raises(ValueError):
        RunningGoodput.from_dict({k: v for k, v in old.items() if k != "steps"})


# ------------------------------------------------------------------ the verdict


def _objects(case: str) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _diverged(goodput: dict[str, Any]) -> dict[str, Any]:
    state = fold(RunningGoodput(), _diverged_megatron_log(), _profile("megatron-training"))
    condition = diverged_condition(state)
    assert condition is not None
    out = copy.deepcopy(goodput)
    out["status"]["conditions"].append({**condition, "lastTransitionTime": "2026-03-01T10:11:00Z"})
    return out


def test_a_diverged_measurement_names_its_failure() -> None:
    goodput = _objects("training-restarted-passed")["GoodputMeasurement"][0]
    assert measurement_failure(goodput) is None
    failure = measurement_failure(_diverged(goodput))
    assert failure is not None and failure.reason == LOSS_NOT_FINITE and "iteration 70" in failure.message
    assert LOSS_NOT_FINITE in MEASUREMENT_FAILURE_REASONS
    assert first_failure(None, goodput, _diverged(goodput)) == failure
    # a Diverged condition with another reason is not a failure this project knows
    odd = _diverged(goodput)
    odd["status"]["conditions"][-1]["reason"] = "SomethingElse"
    assert measurement_failure(odd) is None


def test_a_job_with_a_goodput_measurement_waits_for_it_and_not_after() -> None:
    kinds = _objects("training-restarted-passed")
    job = copy.deepcopy(kinds["Job"][0])
    job["spec"]["goodputMeasurement"] = {"logProfileRef": "megatron-training"}
    running = copy.deepcopy(kinds["GoodputMeasurement"][0])
    running["status"]["conditions"] = []
    assert measurement_unsettled(job, running, expired=False)
    assert not measurement_unsettled(job, running, expired=True)
    assert not measurement_unsettled(job, kinds["GoodputMeasurement"][0], expired=False)
    # recorded and not yet on the Job: wait for the Job tier to write it
    assert measurement_unsettled(job, _diverged(kinds["GoodputMeasurement"][0]), expired=False)


def test_the_report_fails_the_diverged_run_and_blames_its_group() -> None:
    kinds = _objects("training-restarted-passed")
    clean = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["GoodputMeasurement"])
    assert clean.result == "PASSED"
    measurements = [_diverged(kinds["GoodputMeasurement"][0])]
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], measurements)
    assert verdict.result == "FAILED"
    assert [(n.name, n.reason) for n in verdict.failed_nodes] == [("gpu-07", LOSS_NOT_FINITE), ("gpu-08", LOSS_NOT_FINITE)]
    report = json_report.to_dict(verdict)
    assert report["result"] == "FAILED"
    assert {d["reason"] for d in report["failedNodeDetails"]} == {LOSS_NOT_FINITE}
    assert "iteration 70" in report["failedNodeDetails"][0]["message"]
    assert report["categories"][0]["failedGroups"][0]["measurementFailure"] == LOSS_NOT_FINITE
