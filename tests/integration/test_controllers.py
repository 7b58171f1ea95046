"""With kube-controller-manager running, ownership is enforced for real: the
garbage collector removes dependents and the Job controller creates pods."""

from __future__ import annotations

import pytest

from tests.integration.integration_helpers import eventually

pytestmark = pytest.mark.integration


def test_garbage_collector_deletes_dependents_of_a_deleted_owner(controlplane_controllers, namespace):
    from kubernetes import client

    with controlplane_controllers.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}, "data": {"role": "owner"}})
        core.create_namespaced_config_map(
            namespace,
            {
                "metadata": {
                    "name": "dependent",
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "name": "owner",
                            "uid": owner.metadata.uid,
                        }
                    ],
                },
                "data": {"role": "dependent"},
            },
        )
        core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")

        def dependent_gone() -> bool:
            names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
            return "dependent" not in names

        eventually(dependent_gone, timeout=60, what="the garbage collector to delete 'dependent'")


def test_job_controller_creates_owned_pods(controlplane_controllers, namespace):
    from kubernetes import client

    with controlplane_controllers.api_client() as api_client:
        job = client.BatchV1Api(api_client).create_namespaced_job(
            namespace,
            {
                "metadata": {"name": "smoke"},
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "registry.example/smoke:1"}],
                        }
                    },
                },
            },
        )
        core = client.CoreV1Api(api_client)
        pods = eventually(
            lambda: core.list_namespaced_pod(namespace, label_selector="job-name=smoke").items,
            timeout=60,
            what="the Job controller to create a pod",
        )
    owners = pods[0].metadata.owner_references
    assert [(o.kind, o.name, o.uid, o.controller) for o in owners] == [("Job", "smoke", job.metadata.uid, True)]
