"""The owner-scoped Workflow name the controller falls back to when a rendered name is taken."""

from __future__ import annotations

from nvcre.compiler.naming import workflow_name
from nvcre.runtime.reconcile.owned_names import owner_scoped_name

# two daily names that render one Workflow name (20 bits of FNV-1a)
DAILY = ("team-ml-h100-pool-cert-2028-07-27", "team-ml-h100-pool-cert-2030-03-29")


def test_the_audits_daily_names_render_one_name() -> None:
    first, second = (workflow_name(n, "communication", "nccl-all-reduce", None) for n in DAILY)
    assert first == second == "team-ml-h100-pool-cert-20-41e97"


def test_each_owner_gets_its_own_stable_name_within_the_limit() -> None:
    rendered = "team-ml-h100-pool-cert-20-41e97"
    a = owner_scoped_name(rendered, "2f1c0d1e-0000-4000-8000-000000000001")
    b = owner_scoped_name(rendered, "2f1c0d1e-0000-4000-8000-000000000002")
    assert a != b and a != rendered and b != rendered
    assert a == owner_scoped_name(rendered, "2f1c0d1e-0000-4000-8000-000000000001")
    assert len(a) <= 31 and a.startswith("team-ml-h100-pool-ce")
    assert not a.startswith("-") and "--" not in a


def test_a_short_rendered_name_keeps_its_whole_prefix() -> None:
    name = owner_scoped_name("abc", "uid")
    assert name.startswith("abc-") and len(name) == 14
