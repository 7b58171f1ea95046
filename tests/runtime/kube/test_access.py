"""Namespace access reviews: allowed answers remembered for a while, denied ones asked again.

Offline, over the recording in-memory client, which answers every SelfSubjectAccessReview
(allowed unless its resource is listed as denied) and counts the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.install.rbac import access_reviews
from nvcre.runtime.kube.access import AccessCheck, NamespaceAccess
from nvcre.runtime.kube.errors import ApiError
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.reconcile.context import Context
from nvcre.testing.fakeclock import FakeClock
from nvcre.testing.fakekube import MemoryKube


def test_allowed_answers_are_cached_per_namespace_and_resource_for_a_bounded_time() -> None:
    kube = MemoryKube()
    now = FakeClock(0.0)
    access = NamespaceAccess(access_reviews, clock=now, ttl=300.0)
    assert access.check(kube, "a").allowed
    asked = len(kube.calls)
    assert asked > 0
    assert access.check(kube, "a").allowed
    assert len(kube.calls) == asked  # all answered from memory
    assert access.check(kube, "b").allowed
    assert len(kube.calls) == 2 * asked  # another namespace is asked on its own
    now.advance(301.0)
    assert access.check(kube, "a").allowed
    assert len(kube.calls) == 3 * asked  # expired: asked again


def test_a_denied_answer_is_asked_again_and_only_it() -> None:
    kube = MemoryKube()
    kube.denied.add("pods")
    access = NamespaceAccess(access_reviews, clock=lambda: 0.0)
    first = access.check(kube, "a")
    assert not first.allowed and any("pods" in item for item in first.missing)
    asked = len(kube.calls)
    denied = len(first.missing)
    second = access.check(kube, "a")
    assert second.missing == first.missing
    assert len(kube.calls) == asked + denied
    kube.denied.clear()  # the RoleBinding appeared
    assert access.check(kube, "a").allowed


def _review(namespace: str, verb: str, group: str, resource: str, subresource: str = "") -> dict[str, Any]:
    attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}}


def test_only_the_reviews_handed_in_are_asked_and_a_refusal_names_verb_group_and_resource() -> None:
    kube = MemoryKube()
    kube.denied.update({"jobsets", "pods"})

    def reviews(namespace: str) -> list[Mapping[str, Any]]:
        return [_review(namespace, "create", "jobset.x-k8s.io", "jobsets"), _review(namespace, "get", "", "pods", "log")]

    check = NamespaceAccess(reviews, clock=lambda: 0.0).check(kube, "team-a")
    assert check == AccessCheck(False, ("create jobset.x-k8s.io/jobsets", "get core/pods/log"))
    assert len(kube.calls) == 2


class _Refusing(MemoryKube):
    """An API server that cannot answer an access review."""

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        raise ApiError(503, "ServiceUnavailable", "etcd is down")


def test_a_review_the_server_cannot_answer_is_an_error_and_never_remembered() -> None:
    access = NamespaceAccess(access_reviews, clock=lambda: 0.0)
    failed = access.check(_Refusing(), "a")
    assert not failed.allowed and failed.missing == ()
    assert failed.error == "SelfSubjectAccessReview failed: etcd is down"
    kube = MemoryKube()
    assert access.check(kube, "a").allowed
    assert len(kube.calls) == len(access_reviews("a"))  # nothing was taken as granted meanwhile


def test_the_controller_context_asks_the_run_roles_reviews() -> None:
    kube = MemoryKube()
    ctx = Context(kube=kube, stores={})
    assert ctx.access.check(kube, "team-a").allowed
    asked = [call for call in kube.calls if "selfsubjectaccessreviews" in str(call)]
    assert len(asked) == len(access_reviews("team-a")) > 0
