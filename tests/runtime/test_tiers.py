"""The tier table is the one place that names tiers: the controller derives its routes, informers
and reconcilers from it and spells no tier itself."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, JOBS, NODES, PODS, TRAINJOBS, WORKFLOWS
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.tiers import CACHES, TABLE, TIERS, Shared, informed, reconcilers, routes, tier_named
from nvcre.runtime.watches import OWNER_BATCH_SECONDS, owner_may_care

CONTROLLER = Path(__file__).resolve().parents[2] / "runtime" / "controller.py"


def tier_names_in(source: str, tiers: tuple[str, ...] = TIERS) -> list[str]:
    """Where ``source`` spells a tier: a string literal that is a tier's name (in a comparison, a
    tuple, a call or anywhere else), or a comparison of a variable named ``tier`` by equality."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in tiers:
            found.append(f"line {node.lineno}: the literal {node.value!r}")
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for op in node.ops):
            names = [side.id for side in (node.left, *node.comparators) if isinstance(side, ast.Name)]
            if "tier" in names:
                found.append(f"line {node.lineno}: a comparison of a tier by name")
    return found


def test_the_controller_names_no_tier() -> None:
    assert tier_names_in(CONTROLLER.read_text(encoding="utf-8")) == []


def test_the_check_finds_each_way_of_naming_a_tier() -> None:
    assert sorted(tier_names_in('if tier == "job":\n    pass\n')) == ["line 1: a comparison of a tier by name", "line 1: the literal 'job'"]
    assert tier_names_in('if tier in ("bandwidth", "goodput"):\n    pass\n') == [
        "line 1: the literal 'bandwidth'",
        "line 1: the literal 'goodput'",
    ]
    assert tier_names_in('self.enqueue("workflow", ns, name)\n') == ["line 1: the literal 'workflow'"]
    assert tier_names_in("if tier != JOB_TIER:\n    pass\n") == ["line 1: a comparison of a tier by name"]
    assert tier_names_in("if tier in self.queues and name:\n    pass\n") == []


def test_every_row_is_named_once_and_found_by_name() -> None:
    assert len(set(TIERS)) == len(TABLE)
    assert all(tier_named(name).name == name for name in TIERS)


def test_an_event_reaches_a_tier_for_itself_then_its_owner_then_across_tiers() -> None:
    table = routes()
    jobs = [(route.tier, route.watch.delay) for route in table[JOBS.plural]]
    assert jobs == [("job", 0.0), ("workflow", OWNER_BATCH_SECONDS), ("bandwidth", 0.0), ("goodput", 0.0)]
    assert next(route.watch.when for route in table[JOBS.plural] if route.tier == "workflow") is owner_may_care
    measurement = [(route.tier, route.watch.delay) for route in table[BANDWIDTH_MEASUREMENTS.plural]]
    assert measurement == [("bandwidth", 0.0), ("workflow", OWNER_BATCH_SECONDS), ("job", OWNER_BATCH_SECONDS), ("job", 0.0)]
    assert [(route.tier, route.watch.delay) for route in table[TRAINJOBS.plural]] == [
        ("workflow", OWNER_BATCH_SECONDS),
        ("job", OWNER_BATCH_SECONDS),
    ]
    assert [route.tier for route in table[PODS.plural]] == ["job", "bandwidth", "goodput"]
    assert [route.tier for route in table[NODES.plural]] == ["certification", "workloadrun", "job"]
    assert [route.tier for route in table[WORKFLOWS.plural]] == ["workflow", "certification", "workloadrun"]


def test_every_routed_resource_is_informed_and_every_cache_shape_is_used() -> None:
    plurals = {resource.plural for resource in informed()}
    assert set(routes()) <= plurals
    assert set(CACHES) <= plurals
    assert [resource.plural for resource in informed()[: len(TABLE)]] == [tier.resource.plural for tier in TABLE]


def test_one_reconciler_per_row_and_shared_parts_made_once() -> None:
    ctx = Context(kube=None, stores={})  # type: ignore[arg-type]
    built = reconcilers(ctx)
    assert list(built) == list(TIERS)
    owners: dict[str, Any] = {name: getattr(function, "__self__", None) for name, function in built.items()}
    assert owners["bandwidth"] is owners["goodput"] is not None
    assert owners["workflow"].running.jobs is owners["job"]
    shared = Shared(ctx)
    made: list[Context] = []

    def make(given: Context) -> list[Context]:
        made.append(given)
        return made

    assert shared.one(make) is shared.one(make) is made
    assert made == [ctx]
