"""Topology views of a category (pure): each clique's validated nodes, training metrics per domain.

A topology-aware Workflow (``spec.orchestration.topology``) places its groups inside topology
domains (NVLink cliques, racks). ``cliques`` counts, per domain, the nodes its groups held and
those of them not on the failed-nodes list; a domain passes when none of its nodes failed and no
group in it failed. A group confined to one domain counts its nodes there; a group spanning
several counts each domain's share from ``domainNodeCounts`` (recorded when it was partitioned)
and, as the failed node's own domain is not recorded, charges a failed node to the group's first
domain. ``domain_training`` averages the GoodputMeasurements of the groups of each domain set
(the group's domains joined with ", "; "" without topology). Both follow NVCRE's report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .measured import measurement_failure
from .model import CliqueVerdict, DomainTraining, TrainingMetrics
from .reading import Obj, as_list, as_map, as_positive, job_ref_name, status_of

__all__ = ["cliques", "domain_training"]


def _groups(orch: Obj) -> list[Mapping[str, Any]]:
    return [g for g in as_list(orch.get("groups")) if isinstance(g, Mapping)]


def cliques(workflow: Obj, failed_names: Iterable[str]) -> tuple[CliqueVerdict, ...]:
    """Each topology domain of a topology-aware Workflow; () for any other Workflow."""
    if not as_map(as_map(workflow.get("spec")).get("orchestration")).get("topology"):
        return ()
    failed = set(failed_names)
    groups = _groups(as_map(status_of(workflow).get("orchestration")))
    failed_domains = {str(d) for g in groups if g.get("phase") == "Failed" for d in as_list(g.get("domains"))}
    totals: dict[str, list[int]] = {}  # domain -> [total, failed]
    for group in groups:
        domains = [str(d) for d in as_list(group.get("domains"))]
        nodes = [str(n) for n in as_list(group.get("nodes"))]
        counts = as_map(group.get("domainNodeCounts"))
        bad = sum(1 for n in nodes if n in failed)
        if len(domains) == 1:
            entry = totals.setdefault(domains[0], [0, 0])
            entry[0] += len(nodes)
            entry[1] += bad
        elif counts:
            for domain, count in counts.items():
                totals.setdefault(str(domain), [0, 0])[0] += int(count) if isinstance(count, int) else 0
            if domains:
                totals.setdefault(domains[0], [0, 0])[1] += bad
        elif domains:
            entry = totals.setdefault(domains[0], [0, 0])
            entry[0] += len(nodes)
            entry[1] += bad
    return tuple(
        CliqueVerdict(name, total, total - bad, bad == 0 and name not in failed_domains) for name, (total, bad) in sorted(totals.items())
    )


def _average(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def domain_training(workflow: Obj, measurements: Sequence[Obj]) -> tuple[DomainTraining, ...]:
    """Training metrics per domain set of the groups whose Jobs published goodput, by name."""
    by_job: dict[str, tuple[str, int]] = {}
    for group in _groups(as_map(status_of(workflow).get("orchestration"))):
        job = str(as_map(group.get("jobRef")).get("name") or "")
        if job:
            by_job[job] = (", ".join(str(d) for d in as_list(group.get("domains"))), len(as_list(group.get("nodes"))))
    sums: dict[str, tuple[int, list[float], list[float], list[float]]] = {}
    for measurement in measurements:
        if measurement.get("kind") != "GoodputMeasurement":
            continue
        name, count = by_job.get(job_ref_name(measurement), ("", 0))
        _, goodputs, tflops, steps = sums.setdefault(name, (count, [], [], []))
        status = status_of(measurement)
        diverged = measurement_failure(measurement) is not None  # its goodput is no measurement
        for bucket, field in ((goodputs, "result"), (tflops, "avgTFLOPSPerGPU"), (steps, "avgStepTimeSec")):
            value = None if diverged and field == "result" else as_positive(status.get(field))
            if value is not None:
                bucket.append(value)
    return tuple(
        DomainTraining(name, count, TrainingMetrics(_average(goodputs), _average(tflops), _average(steps)))
        for name, (count, goodputs, tflops, steps) in sorted(sums.items())
    )
