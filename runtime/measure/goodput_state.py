"""Goodput of a training log read in pieces: running sums that each later piece extends.

A GoodputMeasurement samples its training pod's log while the Job runs, each sample reading only
what was logged since the one before (:mod:`.cursor`). Goodput needs every step since the first
(which steps are warm-up, the averages, the checkpoint pauses), so :class:`RunningGoodput` keeps
what the pieces read so far add up to, small enough to travel as JSON on the measurement:

- the lines of a piece go through :func:`~.training.parse_training` a batch at a time, and the
  batch's steps and checkpoints are added one by one, in log order, to the same sums
  :func:`~.training.calculate_goodput` takes over a whole log. Floating-point sums are kept in the
  same order, so :meth:`RunningGoodput.goodput` equals the goodput of one read of the whole log
  exactly, however the log was cut into pieces;
- a checkpoint save that has started and not finished when a batch ends is carried into the next
  batch as the line that started it (the parser times a save from that line to the one that ends
  it), cut to the part a pattern ever sees;
- a line that holds none of the literal text every match of the profile's patterns needs
  (:func:`~.profile.required_literals`) cannot match any of them and is skipped before parsing.

Nothing here knows what a line looks like: the profile's patterns and the parser decide, and the
parser's public results are all this module reads. Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from . import training
from .cursor import LogCursor
from .profile import MAX_MATCHED_LINE, parse_rfc3339, profile_spec_of, required_literals, split_kubelet_timestamp, strip_escapes
from .timefmt import rfc3339

__all__ = ["BATCH_LINES", "GoodputTail", "RunningGoodput", "candidate_lines", "fold"]

#: lines handed to the parser at a time (it holds a batch's steps while it parses it)
BATCH_LINES = 4096
#: the longest carried save line kept: its timestamp token, a launcher tag and what a pattern sees
_MAX_CARRIED = MAX_MATCHED_LINE + 512


def _time(value: Any) -> datetime | None:
    return parse_rfc3339(value) if isinstance(value, str) and value else None


def _stamp(value: datetime | None) -> str | None:
    return rfc3339(value) if value is not None else None


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("not finite")
    return number


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("not an integer")
    return value


@dataclass
class RunningGoodput:
    """What the steps and checkpoints read so far add up to (times in seconds)."""

    warmup_steps: int = 0
    log_interval: int = 0
    steps: int = 0
    first_iteration: int = 0
    #: the first step's own timestamp (None when that step had none)
    first_step_time: datetime | None = None
    #: the timestamp of the first step that had one
    first_timed_step: datetime | None = None
    last_iteration: int = 0
    last_step_time: datetime | None = None
    highest_step: int = 0
    warmup_time: float = 0.0
    non_warmup_time: float = 0.0
    non_warmup_steps: int = 0
    tflops_sum: float = 0.0
    tflops_count: int = 0
    #: iterations the step lines report as skipped
    skipped_iterations: int = 0
    checkpoints: int = 0
    checkpoint_save_time: float = 0.0
    last_checkpoint_step: int = 0
    last_checkpoint_time: datetime | None = None
    application_start: datetime | None = None
    #: the line that started a checkpoint save not finished yet ("" when none)
    pending_line: str = ""
    #: iteration lines the step pattern matched, and those no step time could be given
    iteration_lines: int = 0
    untimed_lines: int = 0
    #: lines that showed a diverged run, and the first one's iteration and what it showed
    diverged_lines: int = 0
    first_diverged_iteration: int = 0
    first_diverged_shows: str = ""
    #: the last iteration line with a timestamp (it times the next line without a step time)
    anchor_iteration: int = 0
    anchor_time: datetime | None = None

    def take(self, parse: training.TrainingParse) -> None:
        """Add one batch's parse, whose lines follow everything taken so far."""
        self.warmup_steps, self.log_interval = parse.warmup_steps, parse.log_interval
        if self.application_start is None:
            self.application_start = parse.application_start
        for step in parse.steps:
            self._take_step(step)
        self.iteration_lines += parse.iteration_lines
        self.untimed_lines += parse.untimed_lines
        if parse.first_diverged is not None and not self.diverged_lines:
            self.first_diverged_iteration, self.first_diverged_shows = parse.first_diverged
        self.diverged_lines += parse.diverged_lines
        if parse.anchor is not None:
            self.anchor_iteration, self.anchor_time = parse.anchor
        for checkpoint in parse.checkpoints:
            self.checkpoints += 1
            self.checkpoint_save_time += checkpoint.save_duration
            self.last_checkpoint_step = checkpoint.step
            self.last_checkpoint_time = checkpoint.timestamp

    def take_lifecycle(self, parse: training.TrainingParse) -> None:
        """Add what the profile's lifecycle pod showed, when it is not the step pod
        (``workerStrategy.lifecyclePod``): Megatron prints its start and its checkpoint saves on
        the first rank and its iteration lines on the last, so on several nodes the step pod's log
        alone shows no start-up and no saves. The earlier start counts; the lifecycle pod's saves
        count when the step pod's log showed none (never twice)."""
        start = parse.application_start
        if start is not None and (self.application_start is None or start < self.application_start):
            self.application_start = start
        if self.checkpoints == 0:
            for checkpoint in parse.checkpoints:
                self.checkpoints += 1
                self.checkpoint_save_time += checkpoint.save_duration
                self.last_checkpoint_step = checkpoint.step
                self.last_checkpoint_time = checkpoint.timestamp

    def _take_step(self, step: training.TrainingStep) -> None:
        if self.steps == 0:
            self.first_iteration = step.iteration
            self.first_step_time = step.timestamp
        if self.first_timed_step is None:
            self.first_timed_step = step.timestamp
        self.steps += 1
        self.last_iteration, self.last_step_time = step.iteration, step.timestamp
        self.highest_step = max(self.highest_step, step.iteration)
        skipped = getattr(step, "skipped", 0)  # a field newer parsers fill
        if isinstance(skipped, int) and skipped > 0:
            self.skipped_iterations += skipped
        # warm-up counts from one log interval before the first logged iteration
        base = self.first_iteration - max(self.log_interval, 1)
        if step.iteration - base <= self.warmup_steps:
            self.warmup_time += step.elapsed_time
            return
        self.non_warmup_time += step.elapsed_time
        self.non_warmup_steps += 1
        if step.tflops is not None and step.tflops > 0:
            self.tflops_sum += step.tflops
            self.tflops_count += 1

    def goodput(self, now: datetime) -> training.Goodput:
        """NVCRE's goodput at ``now``, as :func:`~.training.calculate_goodput` computes it over
        every step and checkpoint taken (no interruption: :mod:`.attempts` adds those)."""
        first = self.first_timed_step
        starts = [t for t in (self.application_start, first) if t is not None]
        wall_start = min(starts) if first is not None else None
        wall = max(0.0, (now - wall_start).total_seconds()) if wall_start is not None else 0.0
        resume = 0.0
        if first is not None and self.application_start is not None:
            resume += max(0.0, (first - self.application_start).total_seconds())
        save = self.checkpoint_save_time
        numerator = wall - resume - save
        ratio = 0.0 if numerator < 0 or wall <= 0 else min(1.0, numerator / wall)
        return training.Goodput(
            ratio=ratio,
            training_time=wall,
            lost_work_time=0.0,
            resume_time=resume,
            reschedule_time=0.0,
            checkpoint_save_time=save,
            warmup_time=self.warmup_time,
            non_warmup_time=self.non_warmup_time,
            avg_step_time=self.non_warmup_time / self.non_warmup_steps if self.non_warmup_steps else None,
            avg_tflops_per_gpu=self.tflops_sum / self.tflops_count if self.tflops_count else None,
            last_checkpoint_step=self.last_checkpoint_step if self.checkpoints else 0,
            highest_step=self.highest_step,
        )

    @property
    def anchor(self) -> tuple[int, datetime] | None:
        """The last timestamped iteration line taken, as the parser's ``anchor``."""
        return (self.anchor_iteration, self.anchor_time) if self.anchor_time is not None else None

    def copy(self) -> RunningGoodput:
        return replace(self)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, datetime):
                data[key] = rfc3339(value)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunningGoodput:
        """The sums a :meth:`to_dict` wrote; ValueError when ``data`` is not that shape."""
        out = cls()
        for name, kind in _FIELDS.items():
            if name not in data and name in _LATER_FIELDS:
                continue  # written before the field existed: its default
            if name not in data:
                raise ValueError(f"{name} is missing")
            value = data[name]
            if kind == "time":
                if value is not None and _time(value) is None:
                    raise ValueError(f"{name} is not a time")
                setattr(out, name, _time(value))
            elif kind == "float":
                setattr(out, name, _number(value))
            elif kind == "int":
                setattr(out, name, _whole(value))
            elif not isinstance(value, str) or len(value) > _MAX_CARRIED:
                raise ValueError(f"{name} is not a line")
            else:
                setattr(out, name, value)
        return out


def _field_kinds() -> dict[str, str]:
    kinds = {}
    for item in RunningGoodput.__dataclass_fields__.values():
        text = str(item.type)
        kinds[item.name] = "time" if "datetime" in text else "float" if text == "float" else "int" if text == "int" else "line"
    return kinds


_FIELDS = _field_kinds()
#: fields added after sums were first carried on measurements: a tail written without them reads on
_LATER_FIELDS = frozenset(
    {
        "iteration_lines",
        "untimed_lines",
        "diverged_lines",
        "first_diverged_iteration",
        "first_diverged_shows",
        "anchor_iteration",
        "anchor_time",
    }
)


@lru_cache(maxsize=64)
def _literals(regexes: tuple[str, ...]) -> tuple[str, ...] | None:
    found: list[str] = []
    for regex in regexes:
        literals = required_literals(regex)
        if literals is None:
            return None
        found.extend(literals)
    return tuple(dict.fromkeys(found))


def _profile_literals(spec: Mapping[str, Any]) -> tuple[str, ...] | None:
    """Text at least one of which every match of every pattern of the profile holds; None when a
    pattern has no such text (then every line is a candidate)."""
    patterns = profile_spec_of(spec).get("patterns")
    if not isinstance(patterns, Mapping) or not patterns:
        return None
    regexes = []
    for entry in patterns.values():
        regex = entry.get("regex") if isinstance(entry, Mapping) else None
        if not isinstance(regex, str):
            return None
        regexes.append(regex)
    return _literals(tuple(regexes))


def candidate_lines(text: str, literals: tuple[str, ...] | None) -> list[str]:
    """The lines of ``text`` (split as the parser splits them) a pattern could match.

    A literal is looked for in the text the parser matches, so a line with terminal colour codes
    between the words of a literal is looked at without them."""
    lines = text.splitlines()
    if literals is None:
        return lines
    return [line for line in lines if _holds_any(strip_escapes(line), literals)]


def _holds_any(text: str, literals: tuple[str, ...]) -> bool:
    return any(literal in text for literal in literals)


def _pending(line: str, spec: Mapping[str, Any]) -> tuple[int, str, datetime | None] | None:
    return training.parse_training((line,), spec).pending_save


def _carried(line: str) -> str:
    """The save line as carried: its timestamp and as much of the rest as a pattern may see
    (with room for a launcher tag the parser cuts before matching)."""
    keep = _MAX_CARRIED - 64
    line = strip_escapes(line)  # what the parser reads of it, so the cut keeps what a pattern sees
    stamp, body = split_kubelet_timestamp(line)
    if len(body) <= keep:
        return line
    return f"{stamp} {body[:keep]}" if stamp else body[:keep]


def _fold_batch(state: RunningGoodput, lines: list[str], spec: Mapping[str, Any]) -> None:
    carried = state.pending_line
    parse = training.parse_training([carried, *lines] if carried else lines, spec, anchor=state.anchor)
    state.take(parse)
    if parse.pending_save is None:
        state.pending_line = ""
    elif not carried or _pending(carried, spec) != parse.pending_save:
        # A save started in this batch: the last line that starts one is the one still open.
        state.pending_line = next((_carried(line) for line in reversed(lines) if _pending(line, spec) is not None), "")


def fold(state: RunningGoodput, text: str | Iterable[str], spec: Mapping[str, Any]) -> RunningGoodput:
    """``state`` with ``text`` added: the log, or its consecutive pieces, each ending at a line end.

    Raises ``PatternError`` when the profile has no usable ``trainingStep`` pattern, as the
    parser does, whether or not the text holds a line.
    """
    state.take(training.parse_training((), spec))  # the profile's settings, even for an empty log
    literals = _profile_literals(spec)
    for piece in [text] if isinstance(text, str) else text:
        lines = candidate_lines(piece, literals)
        for start in range(0, len(lines), BATCH_LINES):
            _fold_batch(state, lines[start : start + BATCH_LINES], spec)
    return state


@dataclass
class GoodputTail:
    """A GoodputMeasurement's sampling of one pod's log: which log (the pod and its container
    restarts), where the reads stopped, and what the lines read so far add up to."""

    identity: str
    cursor: LogCursor = field(default_factory=LogCursor)
    state: RunningGoodput = field(default_factory=RunningGoodput)

    def to_json(self) -> str:
        cursor = [self.cursor.stamp[0], self.cursor.stamp[1], self.cursor.at_stamp] if self.cursor.stamp is not None else None
        data = {"identity": self.identity, "cursor": cursor, "state": self.state.to_dict()}
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> GoodputTail | None:
        """The tail an annotation holds; None when absent or not the shape :meth:`to_json` writes."""
        if not text:
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("identity"), str):
                return None
            raw = data.get("cursor")
            cursor = LogCursor()
            if raw is not None:
                if not isinstance(raw, list) or len(raw) != 3 or not isinstance(raw[0], str):
                    return None
                cursor = LogCursor((raw[0], _whole(raw[1])), _whole(raw[2]))
            state = data.get("state")
            if not isinstance(state, dict):
                return None
            return cls(data["identity"], cursor, RunningGoodput.from_dict(state))
        except (ValueError, RecursionError):
            return None
