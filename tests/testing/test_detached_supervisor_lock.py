"""One development environment at a time: the supervisor lock closes the window in which two
``dev up`` started together both found no state file and both started (the one the state file
did not name then outlived ``dev down``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvcre.testing import detached


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_second_supervisor_is_refused_while_the_first_holds_the_lock(isolated_cache: Path) -> None:
    first = detached.claim_supervisor()
    assert first is not None and (isolated_cache / "run" / detached.SUPERVISOR_LOCK).is_file()
    try:
        assert detached.claim_supervisor() is None
    finally:
        first.close()
    again = detached.claim_supervisor()
    assert again is not None
    again.close()


def test_the_lock_goes_with_its_holder_however_it_ends(isolated_cache: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom nvcre.testing import detached\nh = detached.claim_supervisor()\n"
         "print('held' if h else 'busy', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ},
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert detached.claim_supervisor() is None
        os.kill(holder.pid, signal.SIGKILL)  # no clean-up of its own
        holder.wait(timeout=10)
        deadline = time.monotonic() + 5
        claimed = detached.claim_supervisor()
        while claimed is None and time.monotonic() < deadline:
            time.sleep(0.05)
            claimed = detached.claim_supervisor()
        assert claimed is not None
        claimed.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_simulated_cluster_will_not_start_beside_a_starting_one(isolated_cache: Path) -> None:
    from nvcre.testing import simsession

    held = detached.claim_supervisor()
    assert held is not None
    try:
        with pytest.raises(simsession.SimSessionError, match="another development cluster is starting"):
            simsession.serve(profile="h100", nodes=1, platform="", faults={})
    finally:
        held.close()
    assert not simsession.requests_dir().exists()  # refused before it touched anything
