"""Partitioning node names into job groups: name order, topology domains, diagnose screening."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.compiler.plan.partition import (
    PartitionFailure,
    partition_by_name,
    partition_by_topology,
    screening_groups,
)


def names(n: int, prefix: str = "n") -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


def shape(groups) -> list[tuple[str, tuple[str, ...], bool]]:
    return [(g.name, g.nodes, g.overflow) for g in groups]


def test_full_groups_in_name_order() -> None:
    assert shape(partition_by_name(list(reversed(names(4))), 2)) == [
        ("group-0", ("n00", "n01"), False),
        ("group-1", ("n02", "n03"), False),
    ]


def test_leftovers_form_an_overflow_group_borrowing_from_the_last_full_group() -> None:
    assert shape(partition_by_name(names(5), 2)) == [
        ("group-0", ("n00", "n01"), False),
        ("group-1", ("n02", "n03"), False),
        ("group-2-overflow", ("n03", "n04"), True),
    ]
    assert shape(partition_by_name(names(7), 3))[-1] == ("group-2-overflow", ("n04", "n05", "n06"), True)


def test_fewer_nodes_than_a_job_is_one_partial_group() -> None:
    assert shape(partition_by_name(names(2), 4)) == [("group-0", ("n00", "n01"), False)]


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(PartitionFailure, match="nodesPerJob must be >= 1, got 0"):
        partition_by_name(names(2), 0)
    with pytest.raises(PartitionFailure, match="no nodes"):
        partition_by_name([], 1)


def labels(domains: dict[str, str], key: str = "rack") -> dict[str, dict[str, str]]:
    return {node: {key: domain} for node, domain in domains.items()}


def test_strict_domain_is_one_group_per_domain_largest_first() -> None:
    nodes = {"a1": "r2", "a2": "r2", "b1": "r1", "c1": "r3", "c2": "r3", "c3": "r3"}
    groups = partition_by_topology(list(nodes), labels(nodes), 6, "rack", strict_domain=True)
    assert [(g.name, g.nodes, g.domains) for g in groups] == [
        ("group-0", ("c1", "c2", "c3"), ("r3",)),
        ("group-1", ("a1", "a2"), ("r2",)),
        ("group-2", ("b1",), ("r1",)),
    ]
    assert all(not g.domain_node_counts for g in groups)


def test_topology_packing_uses_few_domains_and_counts_multi_domain_groups() -> None:
    nodes = {f"x{i}": "r1" for i in range(3)} | {f"y{i}": "r2" for i in range(3)}
    groups = partition_by_topology(list(nodes), labels(nodes), 4, "rack")
    assert groups[0].nodes == ("x0", "x1", "x2", "y0")
    assert groups[0].domains == ("r1", "r2")
    assert dict(groups[0].domain_node_counts) == {"r1": 3, "r2": 1}
    # y1, y2 were left over: an overflow group re-uses tested nodes to reach the job size.
    assert groups[1].overflow and {"y1", "y2"} <= set(groups[1].nodes) and len(groups[1].nodes) == 4


def test_a_node_without_the_topology_label_is_an_error() -> None:
    with pytest.raises(PartitionFailure, match='node "b" missing topology label "rack"'):
        partition_by_topology(["a", "b"], {"a": {"rack": "r1"}, "b": {}}, 1, "rack")


def test_screening_by_domain_and_by_square_root_chunks() -> None:
    nodes = {"a": "c1", "b": "c2", "c": "c1"}
    lab = labels(nodes, "clique") | {"d": {}}
    groups = screening_groups([*nodes, "d"], lab, "clique")
    assert [(g.name, g.nodes, g.domains) for g in groups] == [
        ("screen-0", ("a", "c"), ("c1",)),
        ("screen-1", ("b",), ("c2",)),
        ("screen-2", ("d",), ("unknown",)),
    ]
    chunks = screening_groups(names(10), {}, "")
    assert [len(g.nodes) for g in chunks] == [4, 4, 2]
    assert [len(g.nodes) for g in screening_groups(names(3), {}, "")] == [2, 1]


@settings(max_examples=150, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=40),
    per_job=st.integers(min_value=1, max_value=12),
    racks=st.integers(min_value=0, max_value=5),
    seed=st.randoms(use_true_random=False),
)
def test_every_node_is_in_a_group_and_no_group_exceeds_the_job_size(count, per_job, racks, seed) -> None:
    nodes = names(count)
    seed.shuffle(nodes)
    if racks:
        lab = {n: {"rack": f"r{seed.randrange(racks)}"} for n in nodes}
        groups = partition_by_topology(nodes, lab, per_job, "rack")
    else:
        groups = partition_by_name(nodes, per_job)
    covered = {n for g in groups for n in g.nodes}
    assert covered == set(nodes)
    assert all(0 < len(g.nodes) <= per_job for g in groups)
    assert all(len(set(g.nodes)) == len(g.nodes) for g in groups)
    assert len({g.name for g in groups}) == len(groups)
    if count >= per_job and not racks:
        # In name order every group, overflow included, is a full job.
        assert all(len(g.nodes) == per_job for g in groups)
