"""Which objects belong to a run: the one rule the report and the gauges share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.vocabulary import LABEL_CERTIFICATION, LABEL_JOB, LABEL_WORKFLOW
from nvcre.runtime.judge.membership import RunIndex, status_workflow_refs
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.metrics.registry import verdicts
from nvcre.runtime.ops.collect import collect_run
from nvcre.runtime.ops.queries import verdict_from
from nvcre.testing.fakekube import MemoryKube

PLURALS = {
    "certifications": "Certification",
    "workflows": "Workflow",
    "jobs": "Job",
    "bandwidthmeasurements": "BandwidthMeasurement",
    "goodputmeasurements": "GoodputMeasurement",
}


def _obj(kind: str, name: str, *, labels: dict[str, str] | None = None, owner: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": "Certification", "name": "c", "uid": owner, "controller": True}]
    return {"kind": kind, "metadata": meta, **extra}


def _cert(uid: str = "uid-now", refs: tuple[str, ...] = ()) -> dict[str, Any]:
    cert = _obj("Certification", "c")
    cert["metadata"]["uid"] = uid
    cert["status"] = {"categoryStatuses": [{"domain": "d", "variant": v, "workflowRef": {"name": v}} for v in refs]}
    return cert


def _names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_owned_workflows_and_their_jobs_and_measurements_belong() -> None:
    index = RunIndex(
        [_obj("Workflow", "wf-b", owner="uid-now"), _obj("Workflow", "wf-a", owner="uid-now")],
        [_obj("Job", "j2", labels={LABEL_WORKFLOW: "wf-b"}), _obj("Job", "j1", labels={LABEL_WORKFLOW: "wf-a"})],
        [
            _obj("BandwidthMeasurement", "j1-bandwidth", spec={"jobRef": {"name": "j1"}}),
            _obj("GoodputMeasurement", "j2-goodput", labels={LABEL_JOB: "j2"}),
        ],
    )
    got = index.members(_cert())
    assert _names(got.workflows) == ["wf-a", "wf-b"]
    assert _names(got.jobs) == ["j1", "j2"]
    assert _names(got.measurements) == ["j1-bandwidth", "j2-goodput"]  # jobRef, then the label fallback


def test_a_label_alone_does_not_make_a_stale_workflow_a_member() -> None:
    stale = _obj("Workflow", "wf-old", labels={LABEL_CERTIFICATION: "c"}, owner="uid-earlier-run")
    index = RunIndex([stale, _obj("Workflow", "wf-new", owner="uid-now")], [_obj("Job", "old", labels={LABEL_WORKFLOW: "wf-old"})], [])
    got = index.members(_cert())
    assert _names(got.workflows) == ["wf-new"]
    assert got.jobs == ()


def test_a_workflow_the_status_names_belongs_without_an_owner_reference() -> None:
    index = RunIndex([_obj("Workflow", "named"), _obj("Workflow", "other")], [], [])
    got = index.members(_cert(uid="", refs=("named", "gone")))
    assert _names(got.workflows) == ["named"]


def test_other_workflows_jobs_and_measurements_stay_out() -> None:
    index = RunIndex(
        [_obj("Workflow", "mine", owner="uid-now"), _obj("Workflow", "theirs", owner="uid-other")],
        [_obj("Job", "j-mine", labels={LABEL_WORKFLOW: "mine"}), _obj("Job", "j-theirs", labels={LABEL_WORKFLOW: "theirs"})],
        [_obj("BandwidthMeasurement", "m", spec={"jobRef": {"name": "j-theirs"}})],
    )
    got = index.members(_cert())
    assert (_names(got.workflows), _names(got.jobs), got.measurements) == (["mine"], ["j-mine"], ())


def test_a_workloadrun_reads_the_workflow_its_status_names() -> None:
    run = _obj("WorkloadRun", "r")
    run["metadata"]["uid"] = "uid-now"
    run["status"] = {"workflowRef": {"name": "wf-b"}}
    index = RunIndex([_obj("Workflow", "wf-a", owner="uid-now"), _obj("Workflow", "wf-b", owner="uid-now")], [], [])
    assert index.members(run).workflow is not None
    assert index.members(run).workflow["metadata"]["name"] == "wf-b"
    run["status"] = {}
    assert index.members(run).workflow["metadata"]["name"] == "wf-a"  # no reference yet: the first member


def test_status_references_are_read_in_order_once() -> None:
    cert = _cert(refs=("b", "a", "b"))
    assert status_workflow_refs(cert) == ("b", "a")
    assert status_workflow_refs({"status": "not a map"}) == ()


# ------------------------------------------------------------------ the report and the gauges agree

GOLDEN_REPORTS = Path(__file__).resolve().parents[3] / "golden" / "report"


@pytest.mark.parametrize("case", ["passed", "failed-hardware", "failed-threshold-two-groups"])
def test_the_report_and_the_gauges_read_the_same_objects_of_a_run(case: str) -> None:
    objects = [d for d in yaml.safe_load_all((GOLDEN_REPORTS / case / "objects.yaml").read_text(encoding="utf-8")) if d]
    cert = next(o for o in objects if o["kind"] == "Certification")
    namespace = cert["metadata"]["namespace"]
    # a Workflow (and its Job) left from an earlier run of the same name: labelled, owned by another uid
    stale = _obj("Workflow", "stale-from-before", labels={LABEL_CERTIFICATION: cert["metadata"]["name"]}, owner="uid-before")
    stale_job = _obj("Job", "stale-job", labels={LABEL_WORKFLOW: "stale-from-before"})
    for obj in (stale, stale_job):
        obj["metadata"]["namespace"] = namespace
        obj["apiVersion"] = "nvcre.nvidia.com/v1alpha1"
    objects += [stale, stale_job]

    server = MemoryKube()
    for obj in objects:
        server.put(obj)
    reported = verdict_from(collect_run(server, "Certification", cert["metadata"]["name"], namespace), "Certification")
    stores: dict[str, Store] = {}
    for plural, kind in PLURALS.items():
        stores[plural] = Store()
        for obj in objects:
            if obj["kind"] == kind:
                stores[plural].put(obj)
    (gauged,) = [v for v in verdicts(stores) if v.name == cert["metadata"]["name"]]

    assert [w.name for w in reported.workflows] == [w.name for w in gauged.workflows]
    assert [j.name for j in reported.jobs] == [j.name for j in gauged.jobs]
    assert reported.workflows, "the case has Workflows of its own"
    assert "stale-from-before" not in {w.name for w in reported.workflows}
    assert "stale-job" not in {j.name for j in reported.jobs}
