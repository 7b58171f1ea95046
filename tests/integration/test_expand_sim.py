"""The second lowering end to end on the simulated GPU cluster.

A Certification is stored, its Workflow expanded and stored, planned from the live Node objects,
and every object the controller would create (dependencies, Jobs, TrainJobs, measurements) is
created from the expansion as it is. The real Trainer v2.2.1 and JobSet must accept the pinned
TrainJobs, the scheduler must place each group's pods on that group's nodes (the controller's
runtime patch), the worker pods must carry the Job label, and the workloads must complete.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.sim]


def _create(dyn, obj: dict[str, Any]) -> dict[str, Any]:
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = obj["metadata"].get("namespace")
    return resource.create(body=obj, namespace=namespace).to_dict()


def _wait(check, *, timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _finished(dyn, namespace: str, name: str) -> str | None:
    train_job = dyn.resources.get(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob").get(name=name, namespace=namespace)
    for condition in (train_job.to_dict().get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def test_expanded_objects_run_pinned_on_the_simulated_cluster(simcluster, sim_namespace, tmp_path) -> None:
    from kubernetes import client, dynamic

    from nvcre.compiler.expand import (
        expand_certification,
        expand_job,
        expand_job_dependencies,
        expand_workflow_dependencies,
        expand_workload,
    )
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.compiler.plan import plan_workflow

    names = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-h100")
    with simcluster.api_client() as api:
        dyn = dynamic.DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
        core = client.CoreV1Api(api)
        live = [{**api.sanitize_for_serialization(core.read_node(n)), "apiVersion": "v1", "kind": "Node"} for n in names]
        facts = facts_from_documents(live)
        certification = _create(
            dyn,
            {
                "apiVersion": "nvcre.nvidia.com/v1alpha1",
                "kind": "Certification",
                "metadata": {"name": "sim", "namespace": sim_namespace},
                "spec": {
                    "target": {"nodeNames": names, "nodeSelector": {"nvidia.com/gpu.present": "true"}},
                    "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}],
                },
            },
        )
        (workflow,) = expand_certification(certification, facts)
        workflow = _create(dyn, workflow)
        plan = plan_workflow(workflow, facts)
        assert [g.nodes for g in plan.groups] == [tuple(names[:2]), tuple(names[2:])]
        for obj in expand_workflow_dependencies(workflow):
            _create(dyn, obj)
        jobs: dict[str, tuple[str, ...]] = {}
        workloads: list[str] = []
        for group in plan.groups:
            job = expand_job(workflow, plan, group, 1)
            for dep in expand_job_dependencies(workflow, plan, group, 1, job):
                _create(dyn, dep)
            job = _create(dyn, job)
            for dep in expand_job_dependencies(workflow, plan, group, 1, job):
                resource = dyn.resources.get(api_version=dep["apiVersion"], kind=dep["kind"])
                resource.patch(
                    body={"metadata": {"ownerReferences": dep["metadata"]["ownerReferences"]}},
                    name=dep["metadata"]["name"],
                    namespace=sim_namespace,
                    content_type="application/merge-patch+json",
                )
            created = [_create(dyn, obj) for obj in expand_workload(job, workflow)]
            assert [o["kind"] for o in created] == ["TrainJob", "BandwidthMeasurement"]
            jobs[job["metadata"]["name"]] = group.nodes
            workloads.append(created[0]["metadata"]["name"])

        # Worker pods may be gone once their JobSet completes: record every placement while it runs.
        seen: dict[str, dict[str, str]] = {job_name: {} for job_name in jobs}
        launchers: dict[str, set[str]] = {job_name: set() for job_name in jobs}

        def observe() -> bool:
            for job_name in jobs:
                for pod in core.list_namespaced_pod(sim_namespace, label_selector=f"nvcre.nvidia.com/job={job_name}").items:
                    if pod.spec.node_name:
                        seen[job_name][pod.metadata.name] = pod.spec.node_name
                selector = f"jobset.sigs.k8s.io/replicatedjob-name=launcher,jobset.sigs.k8s.io/jobset-name={job_name}-workload"
                launchers[job_name] |= {
                    p.spec.node_name for p in core.list_namespaced_pod(sim_namespace, label_selector=selector).items if p.spec.node_name
                }
            return all(_finished(dyn, sim_namespace, name) for name in workloads)

        _wait(observe, timeout=120, what="the TrainJobs to finish", interval=0.1)
        assert [_finished(dyn, sim_namespace, name) for name in workloads] == ["Complete", "Complete"]
        for job_name, nodes in jobs.items():
            assert sorted(seen[job_name].values()) == sorted(nodes), f"{job_name}: labelled worker pods on the group's nodes"
            assert launchers[job_name] and launchers[job_name] <= set(nodes)
