"""May the controller write in a run namespace? SelfSubjectAccessReviews, answers cached briefly.

Under ``rbac.scope: namespaced`` the controller's writes outside its own API group are granted
per namespace by the RoleBinding ``nvcre-manager-run``. Before a Workflow writes anything in its
namespace, the controller asks the API server (never guesses from a cache of RBAC objects), one
review per (verb, group, resource) of the run role. An allowed answer is remembered per
(namespace, verb, group, resource) for :data:`GRANTED_SECONDS`; a denied one is never
remembered, so only the missing permissions are asked again on the next reconcile and the
Workflow proceeds as soon as the binding exists.

Which reviews to ask is not this module's to know: the run role lives in the compiler, so the
caller hands in a function that gives the review bodies for a namespace (the controller passes
the compiler's ``access_reviews``). This module only sends them and remembers the answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .client import Kube
from .errors import ApiError

__all__ = ["GRANTED_SECONDS", "AccessCheck", "NamespaceAccess", "ReviewsFor"]

#: how long an allowed answer stands (a revoked permission shows up as failed writes meanwhile)
GRANTED_SECONDS = 300.0

_Key = tuple[str, str, str, str]

#: the SelfSubjectAccessReview bodies that tell whether the controller may work in a namespace
ReviewsFor = Callable[[str], Iterable[Mapping[str, Any]]]


@dataclass(frozen=True)
class AccessCheck:
    """``allowed``, else what is missing (``verb group/resource``) or why the review failed."""

    allowed: bool
    missing: tuple[str, ...] = ()
    error: str = ""


def _key(attrs: Mapping[str, Any]) -> _Key:
    resource = str(attrs["resource"]) + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
    return str(attrs.get("namespace") or ""), str(attrs["verb"]), str(attrs.get("group") or ""), resource


class NamespaceAccess:
    """Per-(namespace, verb, resource) access reviews with a bounded memory of allowed answers."""

    def __init__(self, reviews: ReviewsFor, clock: Callable[[], float] = time.monotonic, ttl: float = GRANTED_SECONDS) -> None:
        self._reviews = reviews
        self._clock = clock
        self._ttl = ttl
        self._granted: dict[_Key, float] = {}
        self._lock = threading.Lock()

    def _fresh(self, key: _Key, now: float) -> bool:
        with self._lock:
            at = self._granted.get(key)
            if at is not None and now - at >= self._ttl:
                del self._granted[key]
                return False
            return at is not None

    def check(self, kube: Kube, namespace: str) -> AccessCheck:
        now = self._clock()
        missing = []
        for review in self._reviews(namespace):
            attrs = review["spec"]["resourceAttributes"]
            key = _key(attrs)
            if self._fresh(key, now):
                continue
            try:
                answer = kube.create(review)
            except ApiError as exc:
                return AccessCheck(False, error=f"SelfSubjectAccessReview failed: {exc.message or exc}")
            if (answer.get("status") or {}).get("allowed"):
                with self._lock:
                    self._granted[key] = now
            else:
                missing.append(f"{key[1]} {key[2] or 'core'}/{key[3]}")
        if missing:
            return AccessCheck(False, tuple(missing))
        return AccessCheck(True)
