"""Long, chatty training runs on the simulated cluster: what the player decides and how the log is written."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from nvcre.runtime.measure.cursor import stamp_key
from nvcre.testing import simlogs
from nvcre.testing.simplayer import LOG_BYTES_ENV, TRAINING_SECONDS_ENV, LogWriter, decide
from nvcre.testing.simworkloads import classify
from tests.testing.test_simplayer_checkpoints import View, training_pod

STARTED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _pod(index: int, env: dict[str, str]) -> dict:
    pod = training_pod(index, f"n{index}", checkpoint=False)
    pod["spec"]["containers"][0]["env"] += [{"name": k, "value": v} for k, v in env.items()]
    return pod


def test_a_long_run_reports_a_step_a_second_and_only_the_step_pod_chatters() -> None:
    env = {TRAINING_SECONDS_ENV: "120", LOG_BYTES_ENV: "2000000"}
    pods = [_pod(0, env), _pod(1, env)]
    last = decide(pods[1], classify(pods[1]), pods, View({}), seed="t", started=STARTED)
    steps = [line for line in last.lines if " iteration " in line.text]
    assert len(steps) == 120 and 119 < last.seconds < 121
    assert all(0.9 < b.offset - a.offset < 1.1 for a, b in zip(steps, steps[1:], strict=False))
    assert last.chatter is not None and last.chatter.bytes_per_second == 2_000_000
    assert last.chatter.end == max(line.offset for line in last.lines)
    first = decide(pods[0], classify(pods[0]), pods, View({}), seed="t", started=STARTED)
    assert first.chatter is None
    plain = [training_pod(0, "a", checkpoint=False), training_pod(1, "b", checkpoint=False)]
    assert decide(plain[1], classify(plain[1]), plain, View({}), seed="t", started=STARTED).chatter is None


def test_chatter_lines_are_stamped_one_by_one_at_the_asked_rate() -> None:
    chatter = simlogs.Chatter(1.0, 3.0, 200_000)
    lines = chatter.lines(STARTED, 0.0, 10.0)
    assert all(len(text) == 200 for _, text in lines)
    assert len(lines) == 2000  # 2 s at 1,000 lines of 200 bytes a second
    keys = [stamp_key(text.split(" ", 1)[0]) for _, text in lines]
    assert all(a is not None and b is not None and a < b for a, b in zip(keys, keys[1:], strict=False))
    # asked for in pieces, the same lines
    pieces = chatter.lines(STARTED, 0.0, 1.7) + chatter.lines(STARTED, 1.7, 2.35) + chatter.lines(STARTED, 2.35, 9.0)
    assert pieces == lines


def test_the_writer_keeps_chatter_and_scheduled_lines_in_time_order(tmp_path: Path) -> None:
    path = tmp_path / "pod.log"
    writer = LogWriter()
    writer.start()
    started = datetime.now(UTC)
    try:
        lines = [simlogs.LogLine(offset / 10, f"step {offset}") for offset in range(1, 9)]
        writer.schedule(path, started.timestamp(), started, lines)
        writer.stream(path, started.timestamp(), started, simlogs.Chatter(0.0, 0.9, 100_000))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "step 8" not in (path.read_text() if path.exists() else ""):
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        writer.stop()
    written = path.read_text().splitlines()
    keys = [stamp_key(line.split(" ", 1)[0]) for line in written]
    assert None not in keys and keys == sorted(keys)  # type: ignore[type-var]
    assert [line.rsplit(" ", 1)[-1] for line in written if " step " in line] == [str(i) for i in range(1, 9)]
    assert 400 <= sum(" NCCL INFO " in line for line in written) <= 460  # 0.9 s at 500 lines a second
