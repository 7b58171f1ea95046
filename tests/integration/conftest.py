"""Fixtures for the integration tests on top of the session control plane.

Every integration test runs with the controller's logging exactly as ``python -m nvcre.runtime``
sets it up (``nvcre.runtime.logs.configure("info")``): a log call that only breaks once a handler
formats its record (an ``extra=`` key a LogRecord owns raised KeyError in the shipped controller
and in no test) breaks here too. A test also fails when the controller logged an unexpected
exception (a record carrying a traceback) or an error while it ran, unless it is marked
``reconcile_errors_expected`` because it injects such a fault on purpose.

Every informer cache runs in checked mode (``NVCRE_CHECKED_CACHE=1``, set here for the
in-process controllers and inherited by the controller processes tests start): a reconciler
that changes a cached object in place logs an error, which fails the test.
"""

from __future__ import annotations

import logging
import os

import pytest

from tests.integration.integration_helpers import unique  # noqa: E402

os.environ["NVCRE_CHECKED_CACHE"] = "1"


class _Unexpected(logging.Handler):
    """Keeps the records that mean a reconcile went wrong in a way nobody planned for."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


@pytest.fixture(autouse=True)
def controller_logging_as_shipped(request):
    from nvcre.runtime.logs import configure

    configure("info")
    catcher = _Unexpected()
    tree = logging.getLogger("nvcre")
    tree.addHandler(catcher)
    try:
        yield catcher
    finally:
        tree.removeHandler(catcher)
    if catcher.records and request.node.get_closest_marker("reconcile_errors_expected") is None:
        lines = [f"{r.name}: {r.getMessage()} {getattr(r, 'error', '')}".strip() for r in catcher.records[:10]]
        pytest.fail("the controller logged unexpected errors:\n" + "\n".join(lines), pytrace=False)


@pytest.fixture
def kube(simcluster):
    """The runtime's own client of the simulated cluster, closed afterwards."""
    from nvcre.runtime.kube.client import ApiServerClient

    client = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def namespace(controlplane):
    """A namespace of its own for one test, deleted afterwards."""
    from kubernetes import client

    name = unique("it")
    with controlplane.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": name}})
        try:
            yield name
        finally:
            core.delete_namespace(name)
