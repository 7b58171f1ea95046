"""The simulated bad link: two nodes that are fine apart and slow only when one group holds both."""

from __future__ import annotations

import pytest

from nvcre.testing.simfaults import NO_FAULT, FaultError, group_quality, parse_assignment, parse_fault


def test_a_bad_link_names_its_peer_and_round_trips() -> None:
    fault = parse_fault("bad-link:gpu-7")
    assert (fault.kind, fault.peer, str(fault)) == ("bad-link", "gpu-7", "bad-link:gpu-7")
    assert parse_fault(str(fault)) == fault
    assert parse_assignment("gpu-3=bad-link:gpu-7") == ("gpu-3", fault)


@pytest.mark.parametrize("spec", ["bad-link", "bad-link:", "bad-link: "])
def test_a_bad_link_without_a_peer_is_refused(spec: str) -> None:
    with pytest.raises(FaultError, match=r"bad-link needs the node at the other end \(bad-link:PEER\)"):
        parse_fault(spec)


def test_the_link_is_slow_only_with_both_ends_in_the_group() -> None:
    link = parse_fault("bad-link:b")
    assert group_quality({"a": link}) == 1.0
    assert group_quality({"a": link, "c": NO_FAULT}) == 1.0
    assert group_quality({"a": link, "b": NO_FAULT}) == pytest.approx(0.1)
    assert group_quality({"a": link, "b": NO_FAULT, "c": parse_fault("slow-link:0.05")}) == pytest.approx(0.05)
    # a node named as its own peer is no link at all
    assert group_quality({"a": parse_fault("bad-link:a")}) == 1.0


def test_node_local_qualities_are_unchanged() -> None:
    assert group_quality({"a": parse_fault("slow-link:0.5"), "b": NO_FAULT}) == 0.5
    assert group_quality({}) == 1.0
