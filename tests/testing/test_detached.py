"""Detached supervisors: started and awaited through their state file, told apart by start time, stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.testing import detached, session, simsession

#: a stand-in supervisor: writes its state file, then waits for SIGTERM
_SUPERVISOR = """
import json, os, sys, time
path = sys.argv[1]
with open(path + ".tmp", "w") as fh:
    json.dump({"supervisor_pid": os.getpid(), "pids": {}}, fh)
os.replace(path + ".tmp", path)
time.sleep(60)
"""


class Refused(RuntimeError):
    """The failure a launch test expects."""


def test_a_supervisor_is_awaited_through_its_state_file_and_stopped(tmp_path: Path) -> None:
    state_file = tmp_path / "sup.json"
    state = detached.launch(
        [sys.executable, "-c", _SUPERVISOR, str(state_file)],
        tmp_path / "sup.log",
        read_state=lambda: detached.read_state_file(state_file),
        what="test supervisor",
        fail=Refused,
        timeout=30.0,
    )
    pid = int(state["supervisor_pid"])
    assert detached.alive(pid)
    recorded = {"supervisor_pid": pid, "supervisor_started": detached.started_at(pid)}
    assert detached.is_recorded(recorded, "no-such-marker")
    detached.terminate(pid, timeout=10.0)
    assert not detached.alive(pid)
    assert not detached.is_recorded(recorded, "python")


def test_a_supervisor_that_exits_while_starting_is_reported_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(Refused, match=r"the test supervisor exited with code 3 while starting:\nbroken"):
        detached.launch(
            [sys.executable, "-c", "import sys; print('broken'); sys.exit(3)"],
            tmp_path / "sup.log",
            read_state=lambda: None,
            what="test supervisor",
            fail=Refused,
            timeout=30.0,
        )


def test_a_pid_taken_by_another_process_is_not_the_recorded_supervisor() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not detached.is_recorded({"supervisor_pid": gone.pid, "supervisor_started": 1}, "python")
    assert not detached.runs(gone.pid, "python")


def test_a_state_file_is_cleared_only_by_its_writer(tmp_path: Path) -> None:
    path = tmp_path / "run" / "x.json"
    detached.write_json_atomic(path, {"supervisor_pid": 7})
    detached.clear_state_file(path, 8)
    assert detached.read_state_file(path) == {"supervisor_pid": 7}
    detached.clear_state_file(path, 7)
    assert detached.read_state_file(path) is None
    path.write_text("[1, 2]")
    assert detached.read_state_file(path) is None  # not a state


def test_only_a_workdir_directly_under_the_run_directory_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detached, "run_dir", lambda: tmp_path / "run")
    inside, elsewhere = tmp_path / "run" / "work", tmp_path / "other"
    inside.mkdir(parents=True)
    elsewhere.mkdir()
    detached.remove_workdir({"workdir": str(elsewhere)})
    detached.remove_workdir({"workdir": str(inside)})
    assert elsewhere.is_dir() and not inside.exists()


def test_both_sessions_stop_through_the_shared_shutdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No supervisor recorded: both stops answer None; a stale record is removed without signalling anyone."""
    monkeypatch.setattr(detached, "run_dir", lambda: tmp_path)
    monkeypatch.setattr(session, "run_dir", lambda: tmp_path)
    monkeypatch.setattr(simsession, "run_dir", lambda: tmp_path)
    assert session.stop_detached() is None and simsession.stop() is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = {"supervisor_pid": gone.pid, "supervisor_started": 1, "pids": {"kwok": gone.pid}, "workdir": str(tmp_path / "w")}
    (tmp_path / "w").mkdir()
    detached.write_json_atomic(simsession.state_path(), stale)
    assert simsession.stop() == stale
    assert not simsession.state_path().exists() and not (tmp_path / "w").exists()
