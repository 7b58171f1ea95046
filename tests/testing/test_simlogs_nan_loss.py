"""The simulated cluster's ``nan-loss`` fault prints what a diverged Megatron-LM run prints, and the
real parser reads it as diverged: ``lm loss: NAN`` and a non-zero ``number of nan iterations`` from
half-way on, every report still a step, the workload still logging to its end."""

from __future__ import annotations

from datetime import UTC, datetime

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.training import parse_training
from nvcre.testing import simlogs
from nvcre.testing.simfaults import parse_fault

PROFILE = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")
T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def _log(diverge_at: float | None) -> list[str]:
    run = simlogs.TrainingRun(world_size=16, iterations=200, checkpoint_every=0, diverge_at=diverge_at, seed="t")
    return [line.text for line in simlogs.training_log(run, T0)]


def test_the_fault_is_a_known_kind() -> None:
    assert parse_fault("nan-loss").kind == "nan-loss"


def test_a_diverged_run_is_read_as_diverged_from_half_way() -> None:
    lines = _log(0.5)
    assert any("lm loss: NAN" in line and "number of nan iterations:  10" in line for line in lines)
    parsed = parse_training(lines, PROFILE)
    assert len(parsed.steps) == 20, "every report is a step, the diverged ones too"
    assert parsed.first_diverged == (110, "loss nan and 10 nan iteration(s)")
    assert parsed.diverged_lines == 10


def test_a_healthy_run_shows_no_divergence() -> None:
    parsed = parse_training(_log(None), PROFILE)
    assert len(parsed.steps) == 20 and parsed.first_diverged is None
