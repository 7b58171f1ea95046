"""Checked-cache mode: an object changed in place after it was cached is reported, a copy is not."""

from __future__ import annotations

import copy
import logging

import pytest

from nvcre.runtime.kube import cachecheck
from nvcre.runtime.kube.informers import Store


def _pod(name: str, rv: str, phase: str = "Running") -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "status": {"phase": phase}}


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv(cachecheck.ENV_VAR, "1")
    return Store(resource="pods")


def _mutations(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "cached object changed in place"]


def test_an_in_place_change_is_reported_when_the_object_is_replaced(checked: Store, caplog: pytest.LogCaptureFixture) -> None:
    checked.put(_pod("a", "1"))
    cached = checked.get("a", "ns")
    assert cached is not None
    cached["status"]["phase"] = "Failed"  # what a careless reconciler would do
    with caplog.at_level(logging.ERROR, logger="nvcre.runtime.kube.cache"):
        checked.put(_pod("a", "2"))
    (record,) = _mutations(caplog)
    assert record.__dict__["resource"] == "pods" and record.__dict__["object"] == "ns/a" and record.__dict__["detected"] == "update"


def test_verify_and_delete_find_a_change_too(checked: Store, caplog: pytest.LogCaptureFixture) -> None:
    checked.put(_pod("a", "1"))
    checked.put(_pod("b", "1"))
    checked.get("a", "ns")["metadata"]["labels"] = {"x": "y"}  # type: ignore[index]
    checked.get("b", "ns")["status"]["phase"] = "Succeeded"  # type: ignore[index]
    with caplog.at_level(logging.ERROR, logger="nvcre.runtime.kube.cache"):
        assert checked.verify() == 2
        assert checked.verify() == 0, "a change is reported once"
        checked.get("a", "ns")["status"]["phase"] = "Unknown"  # type: ignore[index]
        checked.remove(_pod("a", "3"))
    assert [r.__dict__["detected"] for r in _mutations(caplog)] == ["verify", "verify", "delete"]


def test_a_reader_that_copies_first_is_fine(checked: Store, caplog: pytest.LogCaptureFixture) -> None:
    checked.put(_pod("a", "1"))
    mine = copy.deepcopy(checked.get("a", "ns"))
    mine["status"]["phase"] = "Failed"  # type: ignore[index]
    events, size = checked.replace([_pod("a", "2"), _pod("c", "1")])
    assert size == 2 and {e[0] for e in events} == {"ADDED", "MODIFIED"}
    assert checked.verify() == 0
    assert not _mutations(caplog)


def test_the_mode_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cachecheck.ENV_VAR, raising=False)
    store = Store()
    store.put(_pod("a", "1"))
    store.get("a", "ns")["status"]["phase"] = "Failed"  # type: ignore[index]
    assert store.verify() == 0
