"""Fixtures for the integration tests on top of the session control plane."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from integration_helpers import unique  # noqa: E402


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
