"""The ``oom-kill`` fault's blow on a real kernel: a process that keeps growing in a memory cgroup
of its own is capped just above its size, the kernel's OOM killer ends it, and ``undo`` puts the
cgroup's limit back. Needs root and cgroup v1's memory controller (the real-node environment's
own needs); the cgroup is made for the test and removed after it, whatever happens."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcre.testing.realnodes import cgroups, oomkill

#: allocates 1 MiB every hundredth of a second and holds it, far past the fault's margin
GROWER = "import time\nheld = []\nwhile True:\n    held.append(bytearray(1 << 20))\n    time.sleep(0.01)\n"


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A memory cgroup of the test's own, emptied and removed on the way out."""
    mount = cgroups.controller_mount("memory")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("needs root and cgroup v1's memory controller")
    directory = mount / f"nvcre-oomkill-test-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    try:
        yield directory
    finally:
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        deadline = time.monotonic() + 10
        while True:
            try:
                directory.rmdir()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _start_in(directory: Path) -> subprocess.Popen[bytes]:
    procs = str(directory / "cgroup.procs")

    def join() -> None:
        Path(procs).write_text(str(os.getpid()))

    return subprocess.Popen([sys.executable, "-c", GROWER], preexec_fn=join)  # noqa: PLW1509 (joins before exec, nothing threaded)


def test_a_capped_growing_process_is_ended_by_the_oom_killer_and_undo_restores_the_limit(cgroup: Path) -> None:
    limit_before = (cgroup / "memory.limit_in_bytes").read_text().strip()
    grower = _start_in(cgroup)
    try:
        time.sleep(0.3)
        assert oomkill.memory_cgroup(grower.pid) == cgroup
        squeeze = oomkill.MemorySqueeze()
        assert squeeze(grower.pid, "grower")
        cap = squeeze.caps[cgroup]
        assert cap < 1 << 30 and int((cgroup / "memory.limit_in_bytes").read_text()) <= cap
        assert grower.wait(timeout=30) == -9
        assert squeeze.oom_kills() >= 1  # the kernel's OOM killer, not anyone's kill()
        assert squeeze.undo() == [cgroup]
        assert (cgroup / "memory.limit_in_bytes").read_text().strip() == limit_before
    finally:
        if grower.poll() is None:
            grower.kill()
        grower.wait(timeout=10)


def test_a_rank_whose_cgroup_cannot_be_found_is_not_struck() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=10)
    squeeze = oomkill.MemorySqueeze()
    assert not squeeze(gone.pid, "all_reduce_perf_mpi")
    assert squeeze.caps == {} and squeeze.undo() == []


def test_resident_bytes_reads_the_hierarchical_total(tmp_path: Path) -> None:
    (tmp_path / "memory.stat").write_text("cache 4096\nrss 8192\ntotal_cache 4096\ntotal_rss 12288\n")
    assert oomkill.resident_bytes(tmp_path) == 12288
    (tmp_path / "memory.stat").write_text("cache 4096\nrss 8192\n")
    assert oomkill.resident_bytes(tmp_path) == 8192
    assert oomkill.resident_bytes(tmp_path / "missing") == 0
