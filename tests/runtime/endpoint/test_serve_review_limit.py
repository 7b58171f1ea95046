"""Unknown bearer tokens cannot turn ``/metrics`` into a TokenReview flood against the API server.

The audit sent 3,000 requests, each with a fresh random token, and the controller sent 3,001
TokenReviews in 12 s. Reviews of tokens not known to authenticate are now rate limited for the
whole process; a scraper whose token authenticated before is re-reviewed outside the limit.
"""

from __future__ import annotations

import secrets

from nvcre.runtime.kube.review import ALLOWED_SECONDS, REVIEW_BURST, REVIEWS_PER_SECOND, TOKEN_REVIEWS, RequestReviewer  # noqa: E402
from tests.runtime.endpoint.test_serve_secure import ReviewingServer  # noqa: E402

PROMETHEUS = "system:serviceaccount:monitoring:prometheus"


def token_reviews(server: ReviewingServer) -> int:
    return sum(1 for obj in server.sent if obj["kind"] == TOKEN_REVIEWS.kind)


def test_three_thousand_random_tokens_cost_a_bounded_number_of_token_reviews() -> None:
    now = [0.0]
    server = ReviewingServer({"good": PROMETHEUS}, {PROMETHEUS})
    reviewer = RequestReviewer(server, clock=lambda: now[0])  # type: ignore[arg-type]
    statuses = []
    for index in range(3000):
        now[0] = index * 0.004  # 3,000 requests in 12 s, as in the audit
        statuses.append(reviewer.review(f"Bearer {secrets.token_urlsafe(24)}").status)
    allowed_reviews = REVIEW_BURST + int(12 * REVIEWS_PER_SECOND) + 1
    assert token_reviews(server) <= allowed_reviews
    assert token_reviews(server) < 100  # was 3,000
    assert statuses.count(401) == token_reviews(server)
    assert statuses.count(429) == 3000 - token_reviews(server) == reviewer.limited


def test_a_scraper_known_before_is_re_reviewed_during_a_flood() -> None:
    now = [0.0]
    server = ReviewingServer({"good": PROMETHEUS}, {PROMETHEUS})
    reviewer = RequestReviewer(server, clock=lambda: now[0])  # type: ignore[arg-type]
    assert reviewer.review("Bearer good").status == 200
    for _ in range(500):
        reviewer.review(f"Bearer {secrets.token_urlsafe(24)}")
    now[0] = ALLOWED_SECONDS + 0.5  # its answer expired in the middle of the flood
    for _ in range(500):
        reviewer.review(f"Bearer {secrets.token_urlsafe(24)}")
    before = token_reviews(server)
    assert reviewer.review("Bearer good").status == 200
    assert token_reviews(server) == before + 1


def test_the_limit_refills_with_time() -> None:
    now = [0.0]
    server = ReviewingServer({}, set())
    reviewer = RequestReviewer(server, clock=lambda: now[0], reviews_per_second=2.0, review_burst=3)  # type: ignore[arg-type]
    assert [reviewer.review(f"Bearer t{i}").status for i in range(5)] == [401, 401, 401, 429, 429]
    now[0] = 1.0
    assert [reviewer.review(f"Bearer u{i}").status for i in range(3)] == [401, 401, 429]
    # a refused token repeated inside its ten seconds is answered from the cache, not the budget
    assert reviewer.review("Bearer t0").status == 401
    assert token_reviews(server) == 5


def test_the_endpoint_answers_429_with_retry_after_over_the_limit() -> None:
    import urllib.error
    import urllib.request

    from prometheus_client import CollectorRegistry

    from nvcre.runtime.endpoint.serve import Endpoint

    server = ReviewingServer({}, set())
    reviewer = RequestReviewer(server, reviews_per_second=0.001, review_burst=1)  # type: ignore[arg-type]
    endpoint = Endpoint(("127.0.0.1", 0), registry=CollectorRegistry(), authorize=reviewer.review).start()
    codes, retry = [], []
    try:
        for index in range(3):
            request = urllib.request.Request(f"http://127.0.0.1:{endpoint.port}/metrics", headers={"Authorization": f"Bearer t{index}"})
            try:
                urllib.request.urlopen(request, timeout=10)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
                retry.append(exc.headers.get("Retry-After"))
    finally:
        endpoint.stop()
    assert codes == [401, 429, 429] and retry == [None, "1", "1"]
    assert token_reviews(server) == 1
