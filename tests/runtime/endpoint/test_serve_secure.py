"""The secure metrics endpoint offline: TLS, bearer tokens reviewed by a stand-in API server, the cache, the flags."""

from __future__ import annotations

import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from nvcre.runtime.endpoint import serve
from nvcre.runtime.endpoint.tls import CertificateError, ServingCertificate, self_signed_pem
from nvcre.runtime.kube.errors import ApiError
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.kube.review import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, RequestReviewer, bearer_token
from nvcre.runtime.main import OptionError, Options


class ReviewingServer:
    """Answers TokenReviews from a token table and SubjectAccessReviews from a set of allowed users."""

    def __init__(self, tokens: Mapping[str, str], readers: set[str]) -> None:
        self.tokens = dict(tokens)
        self.readers = readers
        self.sent: list[dict[str, Any]] = []
        self.failing = False

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        self.sent.append(dict(obj))
        if self.failing:
            raise ApiError(500, "InternalError", "etcd is away")
        if resource is TOKEN_REVIEWS:
            user = self.tokens.get(obj["spec"]["token"])
            status = {"authenticated": True, "user": {"username": user, "groups": ["system:authenticated"]}} if user else {}
            return {**obj, "status": status}
        assert resource is SUBJECT_ACCESS_REVIEWS
        spec = obj["spec"]
        allowed = spec["user"] in self.readers and spec["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        return {**obj, "status": {"allowed": allowed}}


def test_bearer_token_reads_only_a_well_formed_header() -> None:
    assert bearer_token("Bearer abc.def") == "abc.def"
    assert bearer_token("bearer   abc ") == "abc"
    for header in (None, "", "Basic abc", "Bearer", "Bearer a b", "Bearer " + "x" * 20000):
        assert bearer_token(header) is None, header


def test_reviews_decide_401_403_200_and_are_cached_briefly() -> None:
    now = [0.0]
    server = ReviewingServer({"good": "system:serviceaccount:mon:prometheus", "other": "alice"}, {"system:serviceaccount:mon:prometheus"})
    reviewer = RequestReviewer(server, clock=lambda: now[0])  # type: ignore[arg-type]
    assert reviewer.review(None).status == 401 and not server.sent
    assert reviewer.review("Bearer nope").status == 401
    denied = reviewer.review("Bearer other")
    assert denied.status == 403 and "alice" in denied.reason
    assert reviewer.review("Bearer good").status == 200
    sent = len(server.sent)
    assert reviewer.review("Bearer good").allowed and reviewer.review("Bearer other").status == 403
    assert len(server.sent) == sent, "answers within their time are not asked again"
    server.readers.add("alice")
    now[0] = 11.0  # a refusal is forgotten after ten seconds, a grant stands a minute
    assert reviewer.review("Bearer other").status == 200
    assert len(server.sent) == sent + 2
    assert all("good" not in str(key) for key in reviewer._cache), "the cache holds digests, not tokens"
    server.failing = True
    now[0] = 100.0
    assert reviewer.review("Bearer good").status == 503
    assert reviewer.review("Bearer good").status == 503, "a failed review is not cached as a grant"


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    cert, key = self_signed_pem(["localhost", "127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    return tmp_path


def _get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_https_endpoint_checks_every_scrape(cert_dir: Path) -> None:
    registry = CollectorRegistry()
    Counter("nvcre_test_secure", "things", registry=registry).inc()
    server = ReviewingServer({"good": "prom"}, {"prom"})
    certificate = ServingCertificate(str(cert_dir))
    endpoint = serve.Endpoint(
        ("127.0.0.1", 0),
        registry=registry,
        tls=certificate.context,
        authorize=RequestReviewer(server).review,  # type: ignore[arg-type]
    ).start()
    trusting = ssl.create_default_context(cafile=str(cert_dir / "tls.crt"))
    url = f"https://127.0.0.1:{endpoint.port}/metrics"
    try:
        assert _get(url, context=trusting)[0] == 401
        assert _get(url, "bad", context=trusting)[0] == 401
        status, body = _get(url, "good", context=trusting)
        assert status == 200 and "nvcre_test_secure_total 1.0" in body
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # no HTTP answer on the TLS port
            urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5)
        assert _get(url, "good", context=trusting)[0] == 200, "a plain-HTTP client does not break the endpoint"
    finally:
        endpoint.stop()


def test_a_generated_certificate_serves_and_a_bad_directory_is_a_clear_error(tmp_path: Path) -> None:
    generated = ServingCertificate()
    assert generated.generated and generated.context().minimum_version == ssl.TLSVersion.TLSv1_2
    with pytest.raises(CertificateError, match="no such file"):
        ServingCertificate(str(tmp_path))
    (tmp_path / "tls.crt").write_text("not a certificate\n")
    (tmp_path / "tls.key").write_text("not a key\n")
    with pytest.raises(CertificateError, match="cannot load"):
        ServingCertificate(str(tmp_path))


def test_changed_certificate_files_are_picked_up(cert_dir: Path) -> None:
    now = [0.0]
    certificate = ServingCertificate(str(cert_dir), clock=lambda: now[0])
    first = certificate.context()
    cert, key = self_signed_pem(["localhost"])
    (cert_dir / "tls.crt").write_bytes(cert)
    (cert_dir / "tls.key").write_bytes(key)
    assert certificate.context() is first, "not looked at again before the recheck interval"
    now[0] = 11.0
    assert certificate.context() is not first
    (cert_dir / "tls.key").write_text("broken\n")
    now[0] = 22.0
    kept = certificate.context()
    assert kept is not first and kept.minimum_version == ssl.TLSVersion.TLSv1_2, "a broken renewal keeps the last good context"


def test_flag_checks() -> None:
    Options().check()
    with pytest.raises(OptionError, match="--metrics-cert-path"):
        Options(metrics_secure=False, metrics_cert_path="/certs").check()
    with pytest.raises(OptionError, match="--metrics-cert-key"):
        Options(metrics_cert_key="../key").check()


def test_a_missing_certificate_directory_exits_2_without_a_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nvcre.runtime", "--metrics-cert-path", str(tmp_path / "absent"), "--kubeconfig", str(tmp_path / "kc")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--metrics-cert-path" in done.stderr and "Traceback" not in done.stderr
    plain = subprocess.run(
        [sys.executable, "-m", "nvcre.runtime", "--metrics-secure=false", "--metrics-cert-path=/x", "--kubeconfig", str(tmp_path / "kc")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 2 and "only used with --metrics-secure" in plain.stderr


def test_a_busy_metrics_port_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    from nvcre.runtime.main import serve

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        raised: list[BaseException] = []

        def run() -> None:  # off the main thread, so serve() installs no signal handlers here
            try:
                serve(Options(kubeconfig=str(kubeconfig), metrics_bind_address=f"127.0.0.1:{port}", health_probe_bind_address="0"))
            except BaseException as exc:  # noqa: BLE001 - handed to the assertion below
                raised.append(exc)

        import threading

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(timeout=30)
    assert len(raised) == 1 and isinstance(raised[0], OptionError), raised
    assert "--metrics-bind-address: cannot listen on" in str(raised[0])
