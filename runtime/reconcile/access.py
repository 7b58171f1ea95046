"""May the controller write in a run namespace? SelfSubjectAccessReviews, cached briefly.

Under ``rbac.scope: namespaced`` the controller's writes outside its own API group are granted
per namespace by the RoleBinding ``nvcre-manager-run``. Before a Workflow writes anything in its
namespace, the controller asks the API server (never guesses from a cache of RBAC objects). A
granted namespace is remembered for 30 s; a denied one is asked again on every reconcile, so the
Workflow proceeds as soon as the binding exists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from nvcre.compiler.install.rbac import access_reviews

from ..kube.client import Kube
from ..kube.errors import ApiError

__all__ = ["AccessCheck", "NamespaceAccess"]

_GRANTED_TTL = 30.0


@dataclass(frozen=True)
class AccessCheck:
    """``allowed``, else what is missing (``verb group/resource``) or why the review failed."""

    allowed: bool
    missing: tuple[str, ...] = ()
    error: str = ""


class NamespaceAccess:
    """Per-namespace access reviews with a short memory of success."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._granted: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, kube: Kube, namespace: str) -> AccessCheck:
        now = self._clock()
        with self._lock:
            if now - self._granted.get(namespace, float("-inf")) < _GRANTED_TTL:
                return AccessCheck(True)
        missing = []
        for review in access_reviews(namespace):
            try:
                answer = kube.create(review)
            except ApiError as exc:
                return AccessCheck(False, error=f"SelfSubjectAccessReview failed: {exc.message or exc}")
            if not (answer.get("status") or {}).get("allowed"):
                attrs = review["spec"]["resourceAttributes"]
                resource = attrs["resource"] + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
                missing.append(f"{attrs['verb']} {attrs['group'] or 'core'}/{resource}")
        if missing:
            return AccessCheck(False, tuple(missing))
        with self._lock:
            self._granted[namespace] = now
        return AccessCheck(True)
