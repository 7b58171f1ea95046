"""Fault isolation for ``testScale: diagnose``: pure planners that pick each round's node groups.

A planner is a pair of pure functions over immutable state: ``start(nodes, topology, options)``
gives the first round, ``advance(state, results)`` takes the round's group results and gives the
next round or the final diagnosis. The runtime runs each round as one Workflow iteration and
feeds the results back; nothing here touches a cluster, a clock or a random source.

Three planners share that interface:

* :mod:`.baseline` — NVCRE's algorithm as documented (screening, no-NVL re-screen, inter-domain
  representatives, bisection, cross-boundary probes, confirmation against rotating references);
* :mod:`.adaptive` — ours: every node screened once on its own (NIC loopback), confirmation
  before blame, then a path screen and a link search that names both ends of a bad link;
* :mod:`.pathfirst` — opt-in: one path screen of every node first, single-node runs only where
  it failed, and link searches that share rounds.

The state types live in :mod:`.model` and are read from it on first use, so the render path,
which only checks a Certification's diagnose annotations (:mod:`.prior`), never defines them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Diagnosis, GroupResult, InfrastructureFault, Options, Planner, Prior, PriorGroup, Round, RoundGroup

__all__ = ["Diagnosis", "GroupResult", "InfrastructureFault", "Options", "Planner", "Prior", "PriorGroup", "Round", "RoundGroup", "planner"]

#: the names above that :mod:`.model` defines
_MODEL_NAMES = frozenset(__all__) - {"planner"}


def __getattr__(name: str) -> Any:
    if name not in _MODEL_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import model

    value = getattr(model, name)
    globals()[name] = value
    return value


def planner(name: str) -> Planner:
    """The planner called ``name`` (``adaptive``, ``baseline`` or ``pathfirst``)."""
    from . import adaptive, baseline, pathfirst

    planners: dict[str, Planner] = {"adaptive": adaptive.PLANNER, "baseline": baseline.PLANNER, "pathfirst": pathfirst.PLANNER}
    try:
        return planners[name]
    except KeyError:
        raise ValueError(f"unknown diagnose planner {name!r}; choose adaptive, baseline or pathfirst") from None
