"""Who is asking, and may they read ``/metrics``? TokenReview then SubjectAccessReview, cached briefly.

The metrics endpoint trusts nobody by itself: a bearer token is sent to the API server as a
TokenReview, and the user it names is checked with a SubjectAccessReview for the non-resource
URL ``/metrics`` and verb ``get``, the same pair of checks a Kubernetes component makes for its
own ``/metrics``. Answers are remembered per token (by its SHA-256, never the token itself) for
a short while, so a scrape every few seconds costs the API server two requests a minute at most;
an API server that cannot answer is never remembered, and nothing is allowed while it cannot.

A token the cache does not hold costs a TokenReview, and anyone who reaches the port can send a
fresh random token with every request. Reviews of tokens never seen to authenticate are therefore
rate limited for the whole process (a token bucket: :data:`REVIEW_BURST` at once, then
:data:`REVIEWS_PER_SECOND`); a request over the limit is answered 429 without asking the API
server. A token that authenticated before (the last :data:`CACHE_ENTRIES` such, by hash) is
re-reviewed outside the limit, so a flood of unknown tokens cannot lock out the scraper whose
answer just expired.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .client import Kube
from .errors import ApiError
from .resources import Resource

__all__ = [
    "ALLOWED_SECONDS",
    "DENIED_SECONDS",
    "MAX_TOKEN_BYTES",
    "REVIEWS_PER_SECOND",
    "REVIEW_BURST",
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "Decision",
    "RequestReviewer",
    "bearer_token",
]

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False)

#: How long an answer stands: a granted read a minute, a refusal (or an unknown token) ten seconds,
#: so a RoleBinding just created takes effect on the next scrapes.
ALLOWED_SECONDS = 60.0
DENIED_SECONDS = 10.0
#: Tokens remembered at once; the oldest answer is forgotten first.
CACHE_ENTRIES = 256
#: A longer Authorization header is refused without asking the API server.
MAX_TOKEN_BYTES = 16 * 1024
#: Reviews of tokens not known to authenticate: this many per second on average, this many at once.
#: A scraper needs one review a minute; the audit's flood sent about 250 a second.
REVIEWS_PER_SECOND = 5.0
REVIEW_BURST = 20


class _Bucket:
    """A token bucket on an injectable clock: ``take()`` is True while it holds a whole token."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + max(0.0, now - self._at) * self._rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


@dataclass(frozen=True)
class Decision:
    """The HTTP status the request gets (200, 401, 403 or 503) and a short reason for the body."""

    status: int
    reason: str
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == 200


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_BYTES or any(c.isspace() for c in token):
        return None
    return token


class RequestReviewer:
    """Decides one request's access to ``path`` with ``verb`` from its bearer token."""

    def __init__(
        self,
        kube: Kube,
        *,
        path: str = "/metrics",
        verb: str = "get",
        clock: Callable[[], float] = time.monotonic,
        allowed_seconds: float = ALLOWED_SECONDS,
        denied_seconds: float = DENIED_SECONDS,
        reviews_per_second: float = REVIEWS_PER_SECOND,
        review_burst: int = REVIEW_BURST,
    ) -> None:
        self._kube = kube
        self._path = path
        self._verb = verb
        self._clock = clock
        self._ttl = {True: allowed_seconds, False: denied_seconds}
        self._cache: OrderedDict[str, tuple[float, Decision]] = OrderedDict()
        #: hashes of tokens that authenticated before: re-reviewed outside the rate limit
        self._known: OrderedDict[str, None] = OrderedDict()
        self._unknown_reviews = _Bucket(reviews_per_second, review_burst, clock)
        self._lock = threading.Lock()
        #: requests answered 429 because the review rate limit was reached
        self.limited = 0

    def review(self, authorization: str | None) -> Decision:
        """The decision for a request carrying ``authorization`` (the header's value, or None)."""
        token = bearer_token(authorization)
        if token is None:
            return Decision(401, "a bearer token is required")
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
            if key not in self._known and not self._unknown_reviews.take():
                self.limited += 1
                return Decision(429, "too many requests with tokens to review; try again shortly")
        try:
            decision = self._decide(token)
        except ApiError as exc:
            return Decision(503, f"the API server could not review the request ({exc.status})")
        with self._lock:
            self._cache[key] = (now + self._ttl[decision.allowed], decision)
            self._cache.move_to_end(key)
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
            if decision.status in (200, 403):  # the token authenticated
                self._known[key] = None
                self._known.move_to_end(key)
                while len(self._known) > CACHE_ENTRIES:
                    self._known.popitem(last=False)
        return decision

    def _decide(self, token: str) -> Decision:
        answer = self._kube.create(
            {"apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind, "spec": {"token": token}}, TOKEN_REVIEWS
        )
        status: dict[str, Any] = answer.get("status") or {}
        user: dict[str, Any] = status.get("user") or {}
        if not status.get("authenticated") or not user.get("username"):
            return Decision(401, "the bearer token was not accepted")
        spec: dict[str, Any] = {
            "user": str(user["username"]),
            "groups": [str(g) for g in user.get("groups") or []],
            "nonResourceAttributes": {"path": self._path, "verb": self._verb},
        }
        if user.get("uid"):
            spec["uid"] = str(user["uid"])
        if user.get("extra"):
            spec["extra"] = {str(k): [str(v) for v in values or []] for k, values in dict(user["extra"]).items()}
        access = self._kube.create(
            {"apiVersion": SUBJECT_ACCESS_REVIEWS.api_version, "kind": SUBJECT_ACCESS_REVIEWS.kind, "spec": spec},
            SUBJECT_ACCESS_REVIEWS,
        )
        if (access.get("status") or {}).get("allowed"):
            return Decision(200, "allowed", spec["user"])
        return Decision(403, f'user "{spec["user"]}" may not {self._verb} {self._path}', spec["user"])
