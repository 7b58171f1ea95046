"""The real control plane: it runs the pinned release, serves the Trainer and
JobSet APIs with their schemas, enforces RBAC, behaves like a cluster for
server-side apply, installs the project's CRDs and can route pod logs to a
simulated kubelet."""

from __future__ import annotations

import http.server
import json
import ssl
import threading

import pytest

from nvcre.testing.controlplane import crd_files, load_crds, project_crd_dir
from tests.integration.integration_helpers import crd_conditions, error_causes, sample, unique

pytestmark = pytest.mark.integration

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
THIRD_PARTY_CRDS = (
    "trainjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
    "jobsets.jobset.x-k8s.io",
)


def test_server_runs_the_pinned_release(controlplane):
    from kubernetes import client

    with controlplane.api_client() as api_client:
        version = client.VersionApi(api_client).get_code()
    assert version.git_version == "v1.36.3"
    assert controlplane.server.startswith("https://127.0.0.1:")


@pytest.mark.parametrize("name", THIRD_PARTY_CRDS)
def test_third_party_crd_is_established(controlplane, name):
    assert name in controlplane.installed_crds
    with controlplane.api_client() as api_client:
        conditions = crd_conditions(api_client, name)
    assert conditions.get("Established") == "True", conditions
    assert conditions.get("NamesAccepted") == "True", conditions


def _dry_run_create(api_client, namespace: str, plural: str, body: dict) -> dict:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).create_namespaced_custom_object(*TRAINER, namespace, plural, body, dry_run="All")


def test_trainjob_sample_is_accepted_by_server_side_dry_run(controlplane, namespace):
    from kubernetes import client

    with controlplane.api_client() as api_client:
        runtime = _dry_run_create(api_client, namespace, "trainingruntimes", sample("trainingruntime"))
        job = _dry_run_create(api_client, namespace, "trainjobs", sample("trainjob"))
        stored = client.CustomObjectsApi(api_client).list_namespaced_custom_object(*TRAINER, namespace, "trainjobs")

    assert runtime["kind"] == "TrainingRuntime"
    assert runtime["spec"]["mlPolicy"]["numNodes"] == 1
    assert job["kind"] == "TrainJob"
    assert job["metadata"]["namespace"] == namespace
    # The sample leaves apiGroup out: the CRD's structural schema defaults it.
    assert job["spec"]["runtimeRef"]["apiGroup"] == "trainer.kubeflow.org"
    assert job["spec"]["trainer"]["numNodes"] == 2
    assert stored["items"] == [], "a dry run must not persist anything"


def _without_runtime_ref(body: dict) -> dict:
    del body["spec"]["runtimeRef"]
    return body


def _with_text_node_count(body: dict) -> dict:
    body["spec"]["trainer"]["numNodes"] = "two"
    return body


def _with_foreign_manager(body: dict) -> dict:
    body["spec"]["managedBy"] = "example.com/some-other-controller"
    return body


def _with_two_ml_policies(body: dict) -> dict:
    body["spec"]["mlPolicy"]["mpi"] = {"numProcPerNode": 1}
    return body


@pytest.mark.parametrize(
    ("kind", "plural", "break_it", "field"),
    [
        ("trainjob", "trainjobs", _without_runtime_ref, "spec.runtimeRef"),
        ("trainjob", "trainjobs", _with_text_node_count, "spec.trainer.numNodes"),
        ("trainjob", "trainjobs", _with_foreign_manager, "spec.managedBy"),
        ("trainingruntime", "trainingruntimes", _with_two_ml_policies, "spec.mlPolicy"),
    ],
    ids=["missing-runtimeRef", "numNodes-not-integer", "foreign-managedBy", "two-ml-policies"],
)
def test_invalid_trainer_object_is_rejected_with_field_path(controlplane, namespace, kind, plural, break_it, field):
    from kubernetes import client

    with controlplane.api_client() as api_client:
        with pytest.raises(client.ApiException) as caught:
            _dry_run_create(api_client, namespace, plural, break_it(sample(kind)))
    assert caught.value.status == 422, caught.value.body
    fields = [c.get("field") for c in error_causes(caught.value)]
    assert field in fields, f"expected a cause at {field}, got {fields}"


def test_rbac_forbids_unprivileged_service_account(controlplane, namespace):
    from kubernetes import client

    account = unique("reader")
    with controlplane.api_client() as admin:
        core = client.CoreV1Api(admin)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": account}})
        token = core.create_namespaced_service_account_token(account, namespace, {"spec": {"expirationSeconds": 600}}).status.token
        # The admin credential may list nodes: the denial below is about the user.
        core.list_node()

    with controlplane.api_client(token=token) as user:
        review = client.AuthenticationV1Api(user).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review.status.user_info.username == f"system:serviceaccount:{namespace}:{account}"
        with pytest.raises(client.ApiException) as caught:
            client.CoreV1Api(user).list_node()
    status = json.loads(caught.value.body)
    assert caught.value.status == 403, status
    assert status["reason"] == "Forbidden"
    assert 'cannot list resource "nodes"' in status["message"]


def test_server_side_apply_twice_keeps_resource_version(controlplane, namespace):
    from kubernetes import client

    def apply(data: dict) -> str:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": namespace},
            "data": data,
        }
        result = core.patch_namespaced_config_map(
            "settings",
            namespace,
            body,
            field_manager="nvcre-integration",
            _content_type="application/apply-patch+yaml",
        )
        return result.metadata.resource_version

    with controlplane.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        first = apply({"mode": "certify"})
        second = apply({"mode": "certify"})
        changed = apply({"mode": "report"})
        managers = [m.manager for m in core.read_namespaced_config_map("settings", namespace).metadata.managed_fields]
    assert second == first, "an identical apply must be a no-op"
    assert changed != first, "a changed apply must write a new version"
    assert "nvcre-integration" in managers


_PROJECT_CRD_FILES = crd_files(project_crd_dir())


@pytest.mark.parametrize(
    "crd_file",
    [pytest.param(p, id=p.name) for p in _PROJECT_CRD_FILES]
    or [pytest.param(None, marks=pytest.mark.skip(reason="compiler/api/crds has no CRDs yet"))],
)
def test_project_crd_is_established(controlplane, crd_file):
    names = [crd["metadata"]["name"] for crd in load_crds([crd_file])]
    assert names, f"{crd_file} holds no CustomResourceDefinition"
    with controlplane.api_client() as api_client:
        for name in names:
            assert name in controlplane.installed_crds
            conditions = crd_conditions(api_client, name)
            assert conditions.get("Established") == "True", (name, conditions)


class _SimulatedKubelet(http.server.BaseHTTPRequestHandler):
    """Answers the apiserver's container-log requests for one pod."""

    expected_path = ""
    requests: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        peer = self.connection.getpeercert() or {}
        common_name = dict(x[0] for x in peer.get("subject", ())).get("commonName", "")
        self.requests.append((self.path, common_name))
        if self.path.split("?")[0] != self.expected_path:
            self.send_error(404)
            return
        body = b"epoch 1: loss 0.42\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_pod_logs_are_proxied_to_the_registered_node(controlplane, namespace):
    from kubernetes import client

    node = unique("gpu-node")
    pod = "trainer-0"
    serving = controlplane.issue_kubelet_serving_cert(node)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(serving.cert, serving.key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(controlplane.ca_cert)
    handler = type(
        "Kubelet",
        (_SimulatedKubelet,),
        {"expected_path": f"/containerLogs/{namespace}/{pod}/main", "requests": []},
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with controlplane.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            registered = controlplane.register_node(node, server.server_address[1])
            kubelet_port = server.server_address[1]
            assert registered.status.daemon_endpoints.kubelet_endpoint.port == kubelet_port
            assert [(a.type, a.address) for a in registered.status.addresses][0] == (
                "InternalIP",
                "127.0.0.1",
            )
            core.create_namespaced_pod(
                namespace,
                {
                    "metadata": {"name": pod},
                    "spec": {
                        "nodeName": node,
                        "containers": [{"name": "main", "image": "registry.example/smoke:1"}],
                    },
                },
            )
            try:
                logs = core.read_namespaced_pod_log(pod, namespace, container="main")
            finally:
                core.delete_node(node)
    finally:
        server.shutdown()
        server.server_close()
    assert logs == "epoch 1: loss 0.42\n"
    assert handler.requests, "the apiserver never reached the simulated kubelet"
    assert handler.requests[0][1] == "kube-apiserver-kubelet-client"
