"""The ``killed-rank-once`` fault kills the ranks of the first attempt it sees and no later one;
``killed-rank`` goes on killing. Real processes named like a stand-in rank stand in for a pod's,
and the watcher is pointed at them instead of a kubelet's cgroup (no root or kubelet needed)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcre.testing.realnodes import rankkill


@pytest.fixture
def ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[set[int], list[subprocess.Popen[bytes]]]]:
    """The pids the watcher sees in its cgroup, and a way to start ranks into it."""
    program = tmp_path / "all_reduce_perf_mpi"
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, program)
    seen: set[int] = set()
    started: list[subprocess.Popen[bytes]] = []
    monkeypatch.setattr(rankkill, "_one_hierarchy", lambda relative: tmp_path)
    monkeypatch.setattr(rankkill.cgroups, "pids_under", lambda directory: set(seen))
    yield seen, started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


def _start(tmp_path: Path, seen: set[int], started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([str(tmp_path / "all_reduce_perf_mpi"), "30"])
    started.append(proc)
    seen.add(proc.pid)
    return proc


def _killed(proc: subprocess.Popen[bytes], within: float) -> bool:
    try:
        return proc.wait(timeout=within) == -9
    except subprocess.TimeoutExpired:
        return False


def test_killed_rank_once_spares_the_retry(tmp_path: Path, ranks: tuple[set[int], list[subprocess.Popen[bytes]]]) -> None:
    seen, started = ranks
    killer = rankkill.RankKiller("pods", once=True).start()
    try:
        first = _start(tmp_path, seen, started)
        assert _killed(first, 5)
        time.sleep(4 * rankkill.POLL_SECONDS)
        retry = _start(tmp_path, seen, started)
        assert not _killed(retry, 0.5)
        assert [k.pid for k in killer.killed] == [first.pid]
    finally:
        killer.stop()


def test_killed_rank_kills_every_attempt(tmp_path: Path, ranks: tuple[set[int], list[subprocess.Popen[bytes]]]) -> None:
    seen, started = ranks
    killer = rankkill.RankKiller("pods").start()
    try:
        first = _start(tmp_path, seen, started)
        assert _killed(first, 5)
        retry = _start(tmp_path, seen, started)
        assert _killed(retry, 5)
        assert [k.pid for k in killer.killed] == [first.pid, retry.pid]
    finally:
        killer.stop()
