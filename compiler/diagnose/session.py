"""A diagnose run as a Workflow holds it: which planner, its options, and the replay of past rounds.

The Workflow controller keeps no planner state of its own. Each reconcile it hands this module
the run's node set and the results of every finished round (group name -> pass/fail and bus
bandwidth, in round order); :func:`replay` runs the pure planner from ``start`` through one
``advance`` per finished round and returns the round to run now, or the diagnosis. The planners
are deterministic, so a restarted controller gets exactly the same answer.

The planner is chosen with the Workflow annotation ``nvcre.nvidia.com/diagnose-planner``
(``adaptive``, the default, or ``baseline``); NVCRE's API has no field for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..diagnostics import CompileError, error
from ..vocabulary import ANNOTATION_DIAGNOSE_PLANNER
from ..workflow_spec import read_workflow
from . import planner as planner_named
from .model import Diagnosis, GroupResult, Options, Prior, Round
from .prior import PLANNERS, read_prior

__all__ = [
    "DEFAULT_PLANNER",
    "PLANNERS",
    "Outcome",
    "Replay",
    "options_for",
    "prior_for",
    "planner_of",
    "replay",
    "replay_workflow",
    "round_topology",
    "status_stage",
]

DEFAULT_PLANNER = "adaptive"

#: the planner's stage -> the value ``status.orchestration.diagnose.stage`` may hold (NVCRE's enum)
_STATUS_STAGES = {
    "local-screen": "intra-screening",
    "confirm": "confirmation",
    "path-screen": "inter-screening",
    "link-search": "cross-boundary",
    "link-confirm": "confirmation",
}
STAGE_COMPLETE = "complete"


def status_stage(stage: str) -> str:
    """The NVCRE stage name a planner stage is reported under (baseline stages are NVCRE's own)."""
    return _STATUS_STAGES.get(stage, stage)


def planner_of(workflow: Mapping[str, Any]) -> str:
    """The planner the Workflow asks for; CompileError naming the annotation when it is unknown."""
    annotations = ((workflow.get("metadata") or {}).get("annotations")) or {}
    value = annotations.get(ANNOTATION_DIAGNOSE_PLANNER)
    if value is None or value == "":
        return DEFAULT_PLANNER
    if value not in PLANNERS:
        raise CompileError(
            [
                error(
                    "InvalidDiagnosePlanner",
                    f"metadata.annotations[{ANNOTATION_DIAGNOSE_PLANNER}]",
                    f"unknown diagnose planner {value!r}; choose {' or '.join(PLANNERS)}",
                )
            ]
        )
    return str(value)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def options_for(workflow: Mapping[str, Any], node_count: int, *, mnnvl: bool) -> Options:
    """The planner options a Workflow sets: ``minGroupSize``, multi-node NVLink, the largest group."""
    spec = workflow.get("spec") or {}
    diagnose = ((spec.get("orchestration") or {}).get("diagnose")) or {}
    trainer = ((((spec.get("jobTemplate") or {}).get("spec") or {}).get("workload") or {}).get("trainJob") or {}).get("trainer") or {}
    requested = _int(trainer.get("numNodes"), 0)
    # numNodes of a diagnose template is the catalog's placeholder (1); the largest group is every node
    largest = requested if requested > 1 else max(node_count, 1)
    return Options(
        min_group_size=max(_int(diagnose.get("minGroupSize"), 2), 1),
        mnnvl=mnnvl,
        max_group_size=largest,
        prior=prior_for(workflow),
    )


def prior_for(workflow: Mapping[str, Any]) -> Prior | None:
    """The failed run's groups from the ``nvcre.nvidia.com/diagnose-prior`` annotation, if any.

    The annotation is set when the diagnose is created and never changes, so every replay reads
    the same prior. Validation refuses a prior that is not the documented shape; one that reaches
    the runtime anyway (a Workflow written by hand) is refused here with a CompileError naming the
    field inside the JSON, which fails the Workflow with that message: never another exception,
    whatever the text holds (:func:`.prior.read_prior`).
    """
    annotations = (workflow.get("metadata") or {}).get("annotations") or {}
    return read_prior(annotations) if isinstance(annotations, Mapping) else None


@dataclass(frozen=True)
class Outcome:
    """How one group of a finished round ended, as the controller read it."""

    passed: bool
    bus_bw: float | None = None
    evaluable: bool = True


@dataclass(frozen=True)
class Replay:
    """The rounds played so far (in order) and what comes next: a round to run, or the diagnosis."""

    rounds: tuple[Round, ...]
    next: Round | Diagnosis

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self.next if isinstance(self.next, Diagnosis) else None

    @property
    def current(self) -> Round | None:
        return self.next if isinstance(self.next, Round) else None


_INDEX = re.compile(r"(\d+)$")


def round_topology(first_round: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """A topology that reproduces the first round's grouping: node -> its group's position.

    The first round groups nodes by their domain (or by chunk); keying each node by the position
    of its group, zero-padded so name order is position order, gives the baseline the same groups
    under the same names on replay, without keeping the label values.
    """

    def order(name: str) -> tuple[int, str]:
        found = _INDEX.search(name)
        return (int(found.group(1)) if found else 0, name)

    out: dict[str, str] = {}
    for position, name in enumerate(sorted(first_round, key=order)):
        for node in first_round[name]:
            out.setdefault(node, f"{position:06d}")
    return out


def replay(
    planner: str,
    nodes: Sequence[str],
    topology: Mapping[str, str] | None,
    options: Options,
    finished: Sequence[Mapping[str, Outcome]],
) -> Replay:
    """Run the planner over ``finished`` rounds (each: group name -> outcome) and say what is next.

    A group missing from a finished round counts as failed and not evaluable, as the planners do.
    ValueError when more rounds are given than the run has (the diagnosis came earlier).
    """
    chosen = planner_named(planner)
    if not nodes:
        # A planner's first round would hold no group and the run could never move on.
        return Replay((), Diagnosis(True, "Diagnose has no node to run on: no node matched the run's target"))
    state, current = chosen.start(tuple(nodes), topology, options)
    rounds: list[Round] = []
    step: Round | Diagnosis = current
    for index, outcomes in enumerate(finished):
        if not isinstance(step, Round):
            raise ValueError(f"round {index + 1} was recorded after the diagnosis: {step.message}")
        rounds.append(step)
        results = []
        for group in step.groups:
            got = outcomes.get(group.name)
            if got is None:
                results.append(GroupResult(group.name, group.nodes, passed=False, evaluable=False))
            else:
                results.append(GroupResult(group.name, group.nodes, got.passed, got.bus_bw, got.evaluable))
        state, step = chosen.advance(state, results)
    return Replay(tuple(rounds), step)


def replay_workflow(
    workflow: Mapping[str, Any],
    first_round: Mapping[str, Sequence[str]],
    finished: Sequence[Mapping[str, Outcome]],
) -> Replay:
    """:func:`replay` for a Workflow: its planner and options, over the nodes of its first round.

    ``first_round`` is the first round's groups (name -> nodes) as the Workflow's status recorded
    them; the node set and the grouping the planner starts from are rebuilt from it.
    """
    nodes = sorted({n for members in first_round.values() for n in members})
    mnnvl = read_workflow(workflow).mnnvl_enabled
    options = options_for(workflow, len(nodes), mnnvl=mnnvl)
    return replay(planner_of(workflow), nodes, round_topology(first_round), options, finished)
