"""A diagnose that follows a failed run: the run's groups as the planner's prior.

Deterministic worlds: a flaky node that fails only on some of its runs, and bad links that fail
any group holding both their ends. The adaptive planner, given the failed run's groups, names the
flaky node and every link; the prior is a pure input, so the same prior plans the same rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nvcre.compiler.diagnose import Options, Prior, PriorGroup
from tests.diagnosekit import NODES, World, crashes_on, run_adaptive


def _links_world(links: Sequence[tuple[str, str]]) -> World:
    return lambda nodes: not any(a in nodes and b in nodes for a, b in links)


def _prior(failed: Sequence[Sequence[str]]) -> Prior:
    groups = [tuple(NODES[i : i + 4]) for i in range(0, len(NODES), 4)]
    return Prior(tuple(PriorGroup(g, not any(set(g) & set(f) for f in failed)) for g in groups))


def test_a_flaky_node_of_a_failed_group_is_named_when_it_shows_on_a_later_exposure() -> None:
    flaky = "n05"
    _, without = run_adaptive(Options(), crashes_on(flaky, {3, 4}))
    assert not without.failed, "one clean run of each node hides a node that fails on its third run"
    rounds, with_prior = run_adaptive(Options(prior=_prior([[flaky]])), crashes_on(flaky, {3, 4}))
    assert dict(with_prior.faulty_nodes).keys() == {flaky}
    suspects = {n for r in rounds[1:] for g in r.groups if len(g.nodes) == 1 for n in g.nodes}
    assert suspects <= set(NODES[4:8]), "only the failed group's nodes get extra single-node runs"


def test_two_bad_links_are_both_named_and_no_node_is_blamed() -> None:
    links = [("n01", "n09"), ("n02", "n14")]
    for options in (Options(), Options(prior=_prior([["n01", "n02"]]))):
        _, diagnosis = run_adaptive(options, _links_world(links))
        named = {(f.side_a[0], f.side_b[0]) for f in diagnosis.infrastructure_faults}
        assert named == set(links)
        assert not diagnosis.faulty_nodes


def test_two_bad_links_inside_one_failed_group_are_both_named_from_the_prior() -> None:
    links = [("n00", "n01"), ("n02", "n03")]
    rounds, diagnosis = run_adaptive(Options(prior=_prior([["n00"]])), _links_world(links))
    assert {(f.side_a[0], f.side_b[0]) for f in diagnosis.infrastructure_faults} == set(links)
    path = [r for r in rounds if r.stage == "path-screen"]
    assert path[0].groups[0].nodes == ("n00", "n01", "n02", "n03"), "the path screen starts from the failed group"


def test_the_same_prior_plans_the_same_rounds() -> None:
    options = Options(prior=_prior([["n05"], ["n10"]]))
    first = run_adaptive(options, crashes_on("n05", {2, 5}))
    again = run_adaptive(options, crashes_on("n05", {2, 5}))
    assert first == again


def test_a_prior_naming_nodes_outside_the_run_is_ignored_for_them() -> None:
    prior = Prior((PriorGroup(("gone", "n03"), False),))
    rounds, diagnosis = run_adaptive(Options(prior=prior), lambda nodes: True)
    assert not diagnosis.failed
    assert all("gone" not in g.nodes for r in rounds for g in r.groups)


def test_the_prior_annotation_is_read_into_the_options_and_a_malformed_one_is_refused_by_field() -> None:
    from nvcre.compiler.diagnose.session import options_for
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PRIOR

    def workflow(value: str) -> dict[str, object]:
        return {"metadata": {"annotations": {ANNOTATION_DIAGNOSE_PRIOR: value}}, "spec": {}}

    good = '{"groups": [{"nodes": ["n00", "n01"], "passed": false}, {"nodes": ["n02"], "passed": true}]}'
    options = options_for(workflow(good), 4, mnnvl=False)
    assert options.prior == Prior((PriorGroup(("n00", "n01"), False), PriorGroup(("n02",), True)))
    for bad, message in (
        ("not json", "not JSON"),
        ("[]", "expected {"),
        ('{"groups": [{"nodes": "n00", "passed": false}]}', "groups[0].nodes: expected a non-empty list"),
        ('{"groups": []}', "groups: expected a non-empty list"),
        ('{"groups": [{"nodes": ["n00"], "passed": "no"}]}', "groups[0].passed: expected true or false"),
    ):
        with pytest.raises(CompileError) as caught:
            options_for(workflow(bad), 4, mnnvl=False)
        (diagnostic,) = caught.value.diagnostics
        assert diagnostic.path == f"metadata.annotations[{ANNOTATION_DIAGNOSE_PRIOR}]" and message in diagnostic.message
    assert options_for({"spec": {}}, 4, mnnvl=False).prior is None
