"""Reads training logs (Megatron-style) and computes goodput from what they show.

``parse_training`` applies a LogProfile's patterns: ``trainingStep`` (named groups
``iteration`` and optionally ``elapsedTime``, ``timestamp``, ``tflops``, ``loss``, ``epoch``,
``globalStep``, ``tokensPerSec``, ``skipped``, ``iterationsPerSecond``), ``checkpointSave`` / ``checkpointDone``
(``step``, ``path``, ``timestamp``), ``checkpointRestore`` (``path``) and ``applicationStart``.
Lines are read after the kubelet timestamp and any launcher tag (``[1,0]<stdout>:``, ``0: ``)
are cut. A pattern without a ``timestamp`` group takes the line's kubelet timestamp. Captured
times honour the pattern's ``units`` (s, ms, us; seconds when unset), unless the line shows its
own: an ``elapsedTimeUnit`` group that took part gives the unit of that line's ``elapsedTime``
(Megatron-DeepSpeed prints ``(ms)`` in most forks and ``(s)`` in BigScience's), and a unit it
shows other than s, ms or us leaves the line unread. A step counts only when
every captured number parses; an optional group that did not take part is simply absent. A step
whose ``skipped`` count is above zero is kept and counted in ``skipped_iterations`` (Megatron's
fp16 loss-scale skips log no loss). A counter (``iteration``, ``epoch``, ``skipped``...) may be
printed as a float with a whole value (Lightning's ``global_step=794.0``, ``9e+3``). A line
whose ``elapsedTime`` did not take part but whose ``iterationsPerSecond`` did (a progress bar
that prints a rate, ``1.73it/s``, once an iteration takes under a second) has the rate's inverse
as its step time; a rate of zero gives none.

A diverged run is seen, never dropped: a ``loss`` of ``nan`` or ``inf`` (any case, with or without
a sign, Lightning's ``nan.0``) keeps its step, and a ``nanIterations`` count above zero
(Megatron's ``number of nan iterations: N``) marks it too; ``TrainingParse.first_diverged`` names
the first such line and :data:`LOSS_NOT_FINITE` is the reason the measurement then records.

A step line without a step time (``elapsedTime`` did not take part) takes one from the
timestamps: the time since the previous iteration line that carried one, divided by the
iterations between them. The first such line only sets the clock; a line with no timestamp at all
has no step time and is counted in ``untimed_lines`` so the measurement can say why it holds no step.
Every iteration line, timed or not, still shows progress: the parse keeps the first and last
iteration any line showed, the last line's loss and how many lines printed a TFLOP/s figure, so
a log whose lines carry no step time (nor timestamps) still shows how far the run got.

``calculate_goodput`` is NVCRE's formula at a given ``now``:
``(t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re)``, zero when the numerator is negative
or the denominator is not positive; warm-up steps are left out of the step-time and TFLOPS
averages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .profile import (
    ProfilePattern,
    matched_part,
    parse_layout_time,
    parse_rfc3339,
    profile_pattern,
    profile_spec_of,
    split_line,
)
from .timefmt import rfc3339

__all__ = [
    "DIVERGED_CONDITION",
    "LOSS_NOT_FINITE",
    "Checkpoint",
    "Goodput",
    "TrainingParse",
    "TrainingStep",
    "calculate_goodput",
    "parse_training",
]

_UNIT_DIVISOR = {"s": 1.0, "ms": 1000.0, "us": 1000000.0}
#: the reason a training measurement records when its log shows a non-finite loss
LOSS_NOT_FINITE = "TrainingLossNotFinite"
#: the GoodputMeasurement condition that carries it (``True`` once a diverged step is seen)
DIVERGED_CONDITION = "Diverged"
#: how a non-finite number is printed: nan or inf in any case, signed or not, Lightning's ``nan.0``
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)(?:\.0*)?", re.IGNORECASE)


@dataclass(frozen=True)
class TrainingStep:
    """One logged training iteration; times in seconds."""

    iteration: int
    elapsed_time: float
    timestamp: datetime | None
    tflops: float | None = None
    loss: float | None = None
    epoch: int = 0
    global_step: int = 0
    #: iterations the step line reports as skipped (fp16 loss-scale overflow), 0 when none
    skipped: int = 0
    tokens_per_sec: float | None = None
    #: iterations the step line reports as nan (Megatron's ``number of nan iterations``), 0 when none
    nan_iterations: int = 0
    #: the step time came from the timestamps of this line and the one before
    derived_time: bool = False

    @property
    def loss_finite(self) -> bool:
        """Whether the loss is a finite number (True when the line shows no loss)."""
        return self.loss is None or math.isfinite(self.loss)

    @property
    def diverged(self) -> bool:
        """Whether the line shows a diverged run: a non-finite loss or nan iterations."""
        return not self.loss_finite or self.nan_iterations > 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "elapsedTime": self.elapsed_time,
            "epoch": self.epoch,
            "globalStep": self.global_step,
            "iteration": self.iteration,
            "stepTiming": self.elapsed_time,
        }
        if self.loss is not None and self.loss_finite:
            out["loss"] = self.loss
        elif self.loss is not None:
            out["lossNotFinite"] = str(self.loss)  # JSON has no NaN: the text Python prints for it
        if self.nan_iterations:
            out["nanIterations"] = self.nan_iterations
        if self.derived_time:
            out["stepTimeFrom"] = "timestamps"
        if self.tflops is not None:
            out["tflops"] = self.tflops
        if self.skipped:
            out["skipped"] = self.skipped
        if self.tokens_per_sec is not None:
            out["tokensPerSec"] = self.tokens_per_sec
        if self.timestamp is not None:
            out["timestamp"] = rfc3339(self.timestamp)
        return out


@dataclass(frozen=True)
class Checkpoint:
    """A completed checkpoint save: the step, where it went, when it finished and how long it paused."""

    step: int
    path: str
    timestamp: datetime | None
    save_duration: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "saveDuration": self.save_duration, "step": self.step}
        if self.timestamp is not None:
            out["timestamp"] = rfc3339(self.timestamp)
        return out


@dataclass(frozen=True)
class TrainingParse:
    """Everything one read of a training log showed."""

    steps: tuple[TrainingStep, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()
    checkpoint_restores: tuple[str, ...] = ()
    application_start: datetime | None = None
    last_log_timestamp: datetime | None = None
    #: a save that started and has not finished yet: (step, path, started)
    pending_save: tuple[int, str, datetime | None] | None = None
    warmup_steps: int = 0
    log_interval: int = 0
    #: lines the ``trainingStep`` pattern matched whose numbers parsed, steps or not
    iteration_lines: int = 0
    #: of those, lines with no step time that no timestamps could give one
    untimed_lines: int = 0
    #: the progress those lines show, timed or not: the first and the last of them, and how many
    #: printed a TFLOP/s figure
    first_line: TrainingStep | None = None
    last_line: TrainingStep | None = None
    tflops_lines: int = 0
    #: lines that showed a diverged run (non-finite loss or nan iterations)
    diverged_lines: int = 0
    #: the first of them: (iteration, what it showed)
    first_diverged: tuple[int, str] | None = None
    #: the last iteration line that carried a timestamp: (iteration, time); the next line without
    #: a step time is timed from it
    anchor: tuple[int, datetime] | None = None

    @property
    def first_line_iteration(self) -> int | None:
        """The iteration the first iteration line showed, timed or not."""
        return self.first_line.iteration if self.first_line is not None else None

    @property
    def last_line_iteration(self) -> int | None:
        """The iteration the last iteration line showed, timed or not: how far the run got."""
        return self.last_line.iteration if self.last_line is not None else None

    @property
    def last_line_loss(self) -> float | None:
        """The last iteration line's loss (None when it printed none)."""
        return self.last_line.loss if self.last_line is not None else None

    @property
    def skipped_iterations(self) -> int:
        """Iterations the log reports as skipped (counted, never dropped)."""
        return sum(step.skipped for step in self.steps)

    @property
    def first_step(self) -> TrainingStep | None:
        return self.steps[0] if self.steps else None

    @property
    def last_step(self) -> TrainingStep | None:
        return self.steps[-1] if self.steps else None

    @property
    def last_checkpoint(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON projection (empty parts left out)."""
        out: dict[str, Any] = {}
        if self.application_start is not None:
            out["applicationStartTime"] = rfc3339(self.application_start)
        if self.checkpoint_restores:
            out["checkpointRestore"] = list(self.checkpoint_restores)
        if self.checkpoints:
            out["checkpoints"] = [c.to_dict() for c in self.checkpoints]
            out["lastCheckpoint"] = self.checkpoints[-1].to_dict()
        if self.steps:
            out["firstStep"] = self.steps[0].to_dict()
            out["lastStep"] = self.steps[-1].to_dict()
            out["steps"] = [s.to_dict() for s in self.steps]
        if self.last_log_timestamp is not None:
            out["lastLogTimestamp"] = rfc3339(self.last_log_timestamp)
        if self.log_interval:
            out["logInterval"] = self.log_interval
        if self.skipped_iterations:
            out["skippedIterations"] = self.skipped_iterations
        if self.untimed_lines:
            out["untimedLines"] = self.untimed_lines
        if self.first_diverged is not None:
            out["divergedLines"] = self.diverged_lines
            out["firstDiverged"] = {"iteration": self.first_diverged[0], "shows": self.first_diverged[1]}
        if self.pending_save is not None:
            step, path, started = self.pending_save
            pending: dict[str, Any] = {"path": path, "step": step}
            if started is not None:
                pending["timestamp"] = rfc3339(started)
            out["pendingSave"] = pending
        return out


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _loss(text: str | None) -> float | None:
    """A loss: any finite number, or nan/inf as a diverged run prints it (``nan``, ``NAN``,
    ``-inf``, Lightning's ``nan.0``); None when it is neither."""
    if text is None:
        return None
    if _NON_FINITE.fullmatch(text.strip()):
        return float(text.strip().lower().rstrip("0").rstrip("."))
    return _number(text)


#: the largest counter a float literal still holds exactly (Lightning prints ``global_step=9e+3``)
_EXACT_FLOAT_INT = 2**53


def _integer(text: str | None) -> int | None:
    """A counter: plain digits, or a float literal with an integral value (``794.0``, ``9e+3``:
    Lightning's progress bar prints its step counters as floats); anything else is not a count."""
    if text is None or not text.isascii():
        return None
    if text.isdigit():
        value = int(text)
        return value if value < 2**63 else None
    if not text[:1].isdigit() or not all(c.isdigit() or c in ".eE+" for c in text):
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number) or number != int(number) or number > _EXACT_FLOAT_INT:
        return None
    return int(number)


def _unit(pattern: ProfilePattern, group: str, groups: Mapping[str, str | None]) -> str | None:
    """The time unit of ``group`` on one line: what its ``<group>Unit`` capture shows when that
    took part (``elapsedTimeUnit`` for ``elapsedTime``), else the pattern's ``units`` entry
    (seconds when unset); None when the line shows a unit other than s, ms or us."""
    shown = groups.get(group + "Unit")
    if shown is None:
        return pattern.units.get(group, "s")
    return shown if shown in _UNIT_DIVISOR else None


def _when(match_ts: str | None, kubelet: datetime | None) -> datetime | None:
    if match_ts:
        parsed = parse_layout_time(match_ts)
        if parsed is not None:
            return parsed
    return kubelet


@dataclass(frozen=True)
class _Line:
    """One iteration line as read: its step (elapsed time None when the line carried none)."""

    iteration: int
    elapsed_time: float | None
    timestamp: datetime | None
    numbers: Mapping[str, float | None]
    ints: Mapping[str, int]

    def step(self, elapsed: float, *, derived: bool = False) -> TrainingStep:
        return TrainingStep(
            iteration=self.iteration,
            elapsed_time=elapsed,
            timestamp=self.timestamp,
            tflops=self.numbers["tflops"],
            loss=self.numbers["loss"],
            epoch=self.ints["epoch"],
            global_step=self.ints["globalStep"],
            skipped=self.ints["skipped"],
            tokens_per_sec=self.numbers["tokensPerSec"],
            nan_iterations=self.ints["nanIterations"],
            derived_time=derived,
        )


def _read_line(pattern: ProfilePattern, groups: Mapping[str, str | None], kubelet: datetime | None) -> _Line | None:
    """The numbers of a matched iteration line; None when one of them does not parse."""
    iteration = _integer(groups.get("iteration"))
    raw_elapsed = groups.get("elapsedTime")
    elapsed = _number(raw_elapsed) if raw_elapsed is not None else None
    unit = _unit(pattern, "elapsedTime", groups)
    if iteration is None or unit is None or (raw_elapsed is not None and (elapsed is None or elapsed < 0)):
        return None
    numbers: dict[str, float | None] = {}
    for name in ("tflops", "loss", "tokensPerSec"):
        raw = groups.get(name)
        value = (_loss(raw) if name == "loss" else _number(raw)) if raw is not None else None
        if raw is not None and value is None:
            return None
        numbers[name] = value
    ints: dict[str, int] = {}
    for name in ("epoch", "globalStep", "skipped", "nanIterations"):
        raw = groups.get(name)
        parsed = _integer(raw) if raw is not None else None
        if raw is not None and parsed is None:
            return None
        ints[name] = parsed if parsed is not None else (iteration if name == "globalStep" else 0)
    stamp_text = groups.get("timestamp")
    if stamp_text and parse_layout_time(stamp_text) is None:
        return None
    seconds = elapsed / _UNIT_DIVISOR.get(unit, 1.0) if elapsed is not None else None
    if seconds is None and groups.get("iterationsPerSecond") is not None:
        rate = _number(groups.get("iterationsPerSecond") or "")
        if rate is None or rate < 0:
            return None
        seconds = 1.0 / rate if rate > 0 else None
    return _Line(iteration, seconds, _when(stamp_text, kubelet), numbers, ints)


def _derived_time(line: _Line, anchor: tuple[int, datetime] | None) -> float | None:
    """The step time the timestamps give a line without one: the time since ``anchor`` (the last
    iteration line with a timestamp) over the iterations between them; None when they give none."""
    if anchor is None or line.timestamp is None or line.iteration <= anchor[0]:
        return None
    seconds = (line.timestamp - anchor[1]).total_seconds()
    return seconds / (line.iteration - anchor[0]) if seconds >= 0 else None


def _divergence(step: TrainingStep) -> str:
    """What a diverged step line shows, in words."""
    shown = [] if step.loss_finite else [f"loss {step.loss}"]
    if step.nan_iterations:
        shown.append(f"{step.nan_iterations} nan iteration(s)")
    return " and ".join(shown)


def _setting(spec: Mapping[str, Any], key: str) -> int:
    value = spec.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _lines(text: str | Iterable[str]) -> Iterator[str]:
    for piece in [text] if isinstance(text, str) else text:
        yield from piece.splitlines()


def _training_patterns(
    spec: Mapping[str, Any],
) -> tuple[ProfilePattern, ProfilePattern | None, ProfilePattern | None, ProfilePattern | None, ProfilePattern | None]:
    """The step pattern (required) and the checkpoint, restore and start patterns (each optional)."""
    step_p = profile_pattern(spec, "trainingStep", ("iteration",))
    assert step_p is not None
    return (
        step_p,
        profile_pattern(spec, "checkpointSave", ("step",), optional=True),
        profile_pattern(spec, "checkpointDone", ("step",), optional=True),
        profile_pattern(spec, "checkpointRestore", optional=True),
        profile_pattern(spec, "applicationStart", optional=True),
    )


def _checkpoint_done(
    groups: Mapping[str, str | None], kubelet: datetime | None, pending: tuple[int, str, datetime | None] | None
) -> Checkpoint | None:
    """A finished checkpoint; its save took from the matching pending save to now (0 when unknown)."""
    step_no = _integer(groups.get("step"))
    if step_no is None:
        return None
    finished = _when(groups.get("timestamp"), kubelet)
    duration = 0.0
    if pending is not None and pending[0] == step_no and pending[2] is not None and finished is not None:
        duration = max(0.0, (finished - pending[2]).total_seconds())
    path = groups.get("path") or (pending[1] if pending is not None else "")
    return Checkpoint(step=step_no, path=path, timestamp=finished, save_duration=duration)


# Long: one pass over the lines, each tried against the five patterns in turn; the step branch
# keeps the counts (iteration lines, untimed, diverged) and the clock anchor in the loop's locals.
def parse_training(
    text: str | Iterable[str], profile_spec: Mapping[str, Any], *, anchor: tuple[int, datetime] | None = None
) -> TrainingParse:
    """Steps, checkpoints, restores and the application start in ``text``.

    ``text`` is the log, or its consecutive pieces (each ending at a line end, as
    :class:`~nvcre.runtime.measure.windows.LogWindows` gives them): one piece is held at a time.
    ``anchor`` is the last timestamped iteration line of the text before this one (a later batch
    of the same log), which times this text's first line when it has no step time.

    Raises ``PatternError`` when the profile has no usable ``trainingStep`` pattern; the log
    itself never raises.
    """
    spec = profile_spec_of(profile_spec)
    step_p, save_p, done_p, restore_p, start_p = _training_patterns(spec)

    steps: list[TrainingStep] = []
    checkpoints: list[Checkpoint] = []
    restores: list[str] = []
    app_start: datetime | None = None
    last_log: datetime | None = None
    pending: tuple[int, str, datetime | None] | None = None
    matched = untimed = diverged = tflops_lines = 0
    first_diverged: tuple[int, str] | None = None
    first_line: TrainingStep | None = None
    last_line: TrainingStep | None = None

    for raw in _lines(text):
        stamp_text, body = split_line(raw)
        kubelet = parse_rfc3339(stamp_text) if stamp_text else None
        if kubelet is not None:
            last_log = kubelet
        if not body.strip():
            continue
        body = matched_part(body)
        match = step_p.regex.search(body)
        if match is not None:
            line = _read_line(step_p, match.groupdict(), kubelet)
            if line is None:
                continue
            matched += 1
            derived = line.elapsed_time is None
            elapsed = _derived_time(line, anchor) if derived else line.elapsed_time
            if line.timestamp is not None:
                anchor = (line.iteration, line.timestamp)
            step = line.step(elapsed if elapsed is not None else 0.0, derived=derived)
            first_line, last_line = first_line or step, step
            tflops_lines += step.tflops is not None
            if step.diverged:
                diverged += 1
                first_diverged = first_diverged or (step.iteration, _divergence(step))
            if elapsed is None:
                untimed += 1
                continue
            steps.append(step)
            continue
        if save_p is not None and (match := save_p.regex.search(body)) is not None:
            step_no = _integer(match.groupdict().get("step"))
            if step_no is not None:
                pending = (step_no, match.groupdict().get("path") or "", _when(match.groupdict().get("timestamp"), kubelet))
            continue
        if done_p is not None and (match := done_p.regex.search(body)) is not None:
            checkpoint = _checkpoint_done(match.groupdict(), kubelet, pending)
            if checkpoint is not None:
                checkpoints.append(checkpoint)
                pending = None
            continue
        if restore_p is not None and (match := restore_p.regex.search(body)) is not None:
            restores.append(match.groupdict().get("path") or body.strip())
            continue
        if start_p is not None and app_start is None and (match := start_p.regex.search(body)) is not None:
            app_start = _when(match.groupdict().get("timestamp"), kubelet)
    return TrainingParse(
        steps=tuple(steps),
        checkpoints=tuple(checkpoints),
        checkpoint_restores=tuple(restores),
        application_start=app_start,
        last_log_timestamp=last_log,
        pending_save=pending,
        warmup_steps=_setting(spec, "warmupSteps"),
        log_interval=_setting(spec, "logInterval"),
        iteration_lines=matched,
        untimed_lines=untimed,
        first_line=first_line,
        last_line=last_line,
        tflops_lines=tflops_lines,
        diverged_lines=diverged,
        first_diverged=first_diverged,
        anchor=anchor,
    )


@dataclass(frozen=True)
class Goodput:
    """Goodput and the timings it came from (seconds)."""

    ratio: float
    training_time: float
    lost_work_time: float
    resume_time: float
    reschedule_time: float
    checkpoint_save_time: float
    warmup_time: float
    non_warmup_time: float
    avg_step_time: float | None
    avg_tflops_per_gpu: float | None
    last_checkpoint_step: int
    highest_step: int
    non_warmup_steps: tuple[int, ...] = field(default=())

    def status_fields(self) -> dict[str, str]:
        """GoodputMeasurement status fields as decimal strings."""
        out = {
            "result": f"{self.ratio:.4f}",
            "trainingTimeSec": f"{self.training_time:.2f}",
            "lostWorkTimeSec": f"{self.lost_work_time:.2f}",
            "resumeTimeSec": f"{self.resume_time:.2f}",
            "rescheduleTimeSec": f"{self.reschedule_time:.2f}",
            "checkpointSaveTimeSec": f"{self.checkpoint_save_time:.2f}",
            "warmupTimeSec": f"{self.warmup_time:.2f}",
            "nonWarmupTimeSec": f"{self.non_warmup_time:.2f}",
        }
        if self.avg_step_time is not None:
            out["avgStepTimeSec"] = f"{self.avg_step_time:.4f}"
        if self.avg_tflops_per_gpu is not None:
            out["avgTFLOPSPerGPU"] = f"{self.avg_tflops_per_gpu:.2f}"
        return out


def calculate_goodput(
    parse: TrainingParse,
    now: datetime,
    *,
    reschedule_time: float = 0.0,
    lost_work_time: float = 0.0,
    extra_resume_time: float = 0.0,
) -> Goodput:
    """NVCRE's goodput at ``now`` (the Job's terminal time once it has ended).

    ``t_w`` is the wall time the run had: from the application start (the first logged step
    when there is none) to ``now``, so the startup, reschedule and save time subtracted from it
    lie inside it; ``t_rm`` is application start to the first step plus ``extra_resume_time`` from
    restarts; ``t_save`` sums the checkpoint pauses; ``t_ch`` (``lost_work_time``) and ``t_re``
    (``reschedule_time``) come from the interruptions the caller tracked.
    """
    timed = [step for step in parse.steps if step.timestamp is not None]
    first_step = timed[0].timestamp if timed else None
    starts = [t for t in (parse.application_start, first_step) if t is not None]
    wall_start = min(starts) if first_step is not None else None
    wall = max(0.0, (now - wall_start).total_seconds()) if wall_start is not None else 0.0
    resume = max(0.0, extra_resume_time)
    if first_step is not None and parse.application_start is not None:
        resume += max(0.0, (first_step - parse.application_start).total_seconds())
    save = sum(c.save_duration for c in parse.checkpoints)
    reschedule = max(0.0, reschedule_time)
    lost = max(0.0, lost_work_time)
    numerator = wall - lost - resume - reschedule - save
    denominator = wall - reschedule
    ratio = 0.0 if numerator < 0 or denominator <= 0 else min(1.0, numerator / denominator)

    interval = max(parse.log_interval, 1)
    base = parse.steps[0].iteration - interval if parse.steps else 0
    warm = [s for s in parse.steps if s.iteration - base <= parse.warmup_steps]
    rest = [s for s in parse.steps if s.iteration - base > parse.warmup_steps]
    tflops = [s.tflops for s in rest if s.tflops is not None and s.tflops > 0]
    return Goodput(
        ratio=ratio,
        training_time=wall,
        lost_work_time=lost,
        resume_time=resume,
        reschedule_time=reschedule,
        checkpoint_save_time=save,
        warmup_time=sum(s.elapsed_time for s in warm),
        non_warmup_time=sum(s.elapsed_time for s in rest),
        avg_step_time=(sum(s.elapsed_time for s in rest) / len(rest)) if rest else None,
        avg_tflops_per_gpu=(sum(tflops) / len(tflops)) if tflops else None,
        last_checkpoint_step=parse.checkpoints[-1].step if parse.checkpoints else 0,
        highest_step=max((s.iteration for s in parse.steps), default=0),
        non_warmup_steps=tuple(s.iteration for s in rest),
    )
