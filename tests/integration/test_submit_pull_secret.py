"""A run's pull Secret never replaces a Secret nvcrectl did not create.

``--workload-registry`` used to replace any Secret of the pull Secret's name (create, then replace
on AlreadyExists), tie it to the run and let ``--cleanup`` delete it. The submit step is called
here as ``certification run`` calls it, against the session's API server, so the Secret is stored
and read back by a real API server.
"""

from __future__ import annotations

import pytest

from nvcre.compiler import compose
from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.resources import CERTIFICATIONS, Resource
from nvcre.runtime.ops.submit import Registry, SecretTaken, submit_run

pytestmark = pytest.mark.integration

SECRETS = Resource("", "v1", "secrets", "Secret")


def _certification(name: str, namespace: str) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-loopback"}]},
    }


def test_a_users_secret_of_the_same_name_is_left_alone(controlplane, namespace) -> None:
    kube = ApiServerClient.from_kubeconfig(str(controlplane.kubeconfig))
    try:
        name = compose.pull_secret_name("leakcert")
        user_secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": {"token": "VVNFUi1SRUFMLVBXCg=="},
        }
        kube.create(user_secret)
        registry = Registry("reg.example.com:5000", "robot", "run-password")
        with pytest.raises(SecretTaken, match="was not created by nvcrectl"):
            submit_run(kube, _certification("leakcert", namespace), grant_run_access=True, registry=registry)
        kept = kube.get(SECRETS, name, namespace)
        assert kept["data"] == user_secret["data"] and kept["type"] == "Opaque"
        assert not kept["metadata"].get("ownerReferences")
        assert not kube.list(CERTIFICATIONS, namespace).items  # nothing was submitted

        # a Secret nvcrectl made for an earlier run of that name is renewed and owned by the new run
        kube.delete(SECRETS, name, namespace)
        submit_run(kube, _certification("leakcert", namespace), grant_run_access=True, registry=registry)
        kube.delete(CERTIFICATIONS, "leakcert", namespace)
        again = submit_run(kube, _certification("leakcert", namespace), grant_run_access=True, registry=registry)
        owned = kube.get(SECRETS, name, namespace)
        assert [ref["uid"] for ref in owned["metadata"]["ownerReferences"]] == [again.object["metadata"]["uid"]]
    finally:
        kube.close()
