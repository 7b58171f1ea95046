"""Counts the API server's answers by status code, method and host, beneath the API client.

client-go counts every answer it gets as ``rest_client_requests_total{code,method,host}``; the
Python API client has no such hook, so :func:`count_responses` puts a thin stand-in in front of
the kubernetes package's REST client that the :class:`~nvcre.runtime.kube.client.ApiServerClient`
sends every request through. The stand-in passes each call on unchanged and records the answer's
status code (``<error>`` when the call raised before an answer came) in the client's
:class:`~nvcre.runtime.kube.accounting.RequestCounter`. The host is the API server's
``host:port`` from the client's configuration, as client-go reports it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .accounting import RequestCounter
from .client import ApiServerClient

__all__ = ["CountingRestClient", "count_responses"]


class CountingRestClient:
    """The REST client ``inner`` with every answer recorded in ``counter``."""

    def __init__(self, inner: Any, counter: RequestCounter, host: str) -> None:
        self.inner = inner
        self.counter = counter
        self.host = host

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        try:
            response = self.inner.request(method, url, *args, **kwargs)
        except BaseException:
            self.counter.record_response(None, method, self.host)
            raise
        status = getattr(response, "status", None)
        self.counter.record_response(status if isinstance(status, int) else None, method, self.host)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _host(api_client: Any) -> str:
    url = str(getattr(getattr(api_client, "configuration", None), "host", "") or "")
    return urlsplit(url).netloc or url


def count_responses(kube: Any) -> bool:
    """Count ``kube``'s answers in its ``requests`` counter; False when it is not a client over a
    kubernetes REST client (a test double), or already counted."""
    if not isinstance(kube, ApiServerClient):
        return False
    counter = kube.requests
    api_client: Any = getattr(kube, "_api", None)
    inner = getattr(api_client, "rest_client", None)
    if api_client is None or inner is None or not isinstance(counter, RequestCounter) or isinstance(inner, CountingRestClient):
        return False
    api_client.rest_client = CountingRestClient(inner, counter, _host(api_client))
    return True
