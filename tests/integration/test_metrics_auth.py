"""The controller's secured /metrics against a real API server: no token 401, a token whose
ServiceAccount may not get /metrics 403, one bound to nvcre-metrics-reader 200; plain HTTP is
refused on the TLS port, and the health probes stay plain and open on their own port."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nvcre.testing.metrics_reader import grant_metrics_reader, request_token
from tests.integration.secure_metrics import running_controller, scrape

pytestmark = pytest.mark.integration


def test_metrics_need_a_token_that_may_get_metrics(simcluster, sim_namespace, kube, tmp_path: Path) -> None:
    grant_metrics_reader(kube, sim_namespace, "prometheus")
    grant_metrics_reader(kube, sim_namespace, "outsider", bound=False)
    reader = request_token(simcluster.kubeconfig, sim_namespace, "prometheus")
    outsider = request_token(simcluster.kubeconfig, sim_namespace, "outsider")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log") as controller:
        status, body = scrape(controller.metrics_url)
        assert status == 401, body
        status, body = scrape(controller.metrics_url, "not-a-token")
        assert status == 401, body
        status, body = scrape(controller.metrics_url, outsider)
        assert status == 403 and f"system:serviceaccount:{sim_namespace}:outsider" in body, body
        status, body = scrape(controller.metrics_url, reader)
        assert status == 200, f"{status} {body[:300]}\n{controller.tail()}"
        assert "nvcre_api_requests_total{" in body and "# TYPE nvcre_workqueue_depth gauge" in body
        status, _ = scrape(controller.metrics_url, reader)  # answered from the review cache
        assert status == 200
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=5)
        with urllib.request.urlopen(f"http://127.0.0.1:{controller.health_port}/healthz", timeout=5) as health:
            assert health.status == 200
        assert scrape(controller.metrics_url, reader)[0] == 200, "the endpoint outlives a plain-HTTP client"


def test_plain_http_stays_available_behind_the_flag(simcluster, sim_namespace, tmp_path: Path) -> None:
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log", "--metrics-secure=false") as controller:
        with urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=10) as answer:
            assert answer.status == 200 and b"# TYPE nvcre_workqueue_depth gauge" in answer.read()
