"""The memory of this process's own recent writes, and the reconcilers' use of it.

A status write is visible to the next reconcile even while the cache still shows the version it
replaced, and only then; a name this process just created is not created a second time.
"""

from __future__ import annotations

from typing import Any

from nvcre.runtime.kube.recent import RecentWrites


class Ticking:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def obj(rv: str, phase: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv}, "status": {"phase": phase}}


def test_the_written_object_answers_only_while_the_cache_shows_the_version_it_replaced():
    clock = Ticking()
    recent = RecentWrites(clock=clock, ttl=30.0)
    recent.wrote("jobs", obj("1"), obj("2", "Running"))
    assert recent.overlay("jobs", "a", "ns", obj("1"))["status"]["phase"] == "Running"
    # the cache caught up: the cache answers and the entry is gone
    assert recent.overlay("jobs", "a", "ns", obj("2", "Running")) == obj("2", "Running")
    assert len(recent) == 0
    assert recent.overlay("jobs", "a", "ns", obj("1")) == obj("1")


def test_a_newer_foreign_version_or_a_vanished_object_wins_over_the_memory():
    recent = RecentWrites(clock=Ticking())
    recent.wrote("jobs", obj("1"), obj("2", "Running"))
    assert recent.overlay("jobs", "a", "ns", obj("3", "Failed"))["status"]["phase"] == "Failed"
    recent.wrote("jobs", obj("3"), obj("4", "Running"))
    assert recent.overlay("jobs", "a", "ns", None) is None
    assert len(recent) == 0


def test_memories_expire_and_other_names_or_kinds_are_untouched():
    clock = Ticking()
    recent = RecentWrites(clock=clock, ttl=30.0)
    recent.wrote("jobs", obj("1"), obj("2", "Running"))
    assert recent.overlay("workflows", "a", "ns", obj("1")) == obj("1")
    assert recent.overlay("jobs", "b", "ns", None) is None
    clock.now += 31.0
    assert recent.overlay("jobs", "a", "ns", obj("1")) == obj("1")


def test_an_unchanged_write_or_one_without_a_base_version_is_not_remembered():
    recent = RecentWrites(clock=Ticking())
    recent.wrote("jobs", obj("2"), obj("2"))
    recent.wrote("jobs", obj(""), obj("2"))
    assert len(recent) == 0


def test_the_remembered_object_leaves_managed_fields_out():
    recent = RecentWrites(clock=Ticking())
    written = obj("2", "Running")
    written["metadata"]["managedFields"] = [{"manager": "x"}]
    recent.wrote("jobs", obj("1"), written)
    assert "managedFields" not in recent.overlay("jobs", "a", "ns", obj("1"))["metadata"]


def test_created_names_are_remembered_for_a_bounded_time():
    clock = Ticking()
    recent = RecentWrites(clock=clock, ttl=30.0)
    recent.create("bandwidthmeasurements", "j-bandwidth", "ns")
    assert recent.created("bandwidthmeasurements", "j-bandwidth", "ns")
    assert not recent.created("bandwidthmeasurements", "j-bandwidth", "other")
    assert not recent.created("goodputmeasurements", "j-bandwidth", "ns")
    clock.now += 30.0
    assert not recent.created("bandwidthmeasurements", "j-bandwidth", "ns")


def test_expired_entries_are_pruned_as_new_ones_arrive():
    clock = Ticking()
    recent = RecentWrites(clock=clock, ttl=30.0)
    for index in range(50):
        recent.create("jobs", f"j{index}", "ns")
    clock.now += 40.0
    recent.create("jobs", "fresh", "ns")
    assert len(recent) == 1
