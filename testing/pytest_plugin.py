"""pytest plugin providing one real control plane per test session.

Fixtures:

``controlplane``
    Session-scoped :class:`nvcre.testing.controlplane.ControlPlane` (etcd +
    kube-apiserver with the project's and the Trainer/JobSet CRDs installed);
    use ``.kubeconfig`` and ``.api_client()``.
``controlplane_controllers``
    The same control plane after kube-controller-manager and kube-scheduler
    were started on it (garbage collection, Job controller, scheduling).

Missing binaries are built when a Go toolchain is present. Without one the
tests are skipped, except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import os
from typing import Iterator, NoReturn

import pytest

from . import binaries


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"{reason} (CI=true, so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


def _ensure_built(request: pytest.FixtureRequest, components: tuple[str, ...]) -> None:
    """Build ``components`` if absent, or skip/fail when that is impossible."""
    try:
        absent = binaries.missing(components)
    except FileNotFoundError as exc:
        _unavailable(str(exc))
    if not absent:
        return
    if not binaries.go_available():
        _unavailable(
            f"control-plane binaries not built ({', '.join(absent)}) and no Go toolchain "
            "to build them (see docs/testing.md)"
        )
    build_module = binaries.build_module()
    capture = request.config.pluginmanager.getplugin("capturemanager")
    try:
        if capture is not None:
            with capture.global_and_fixture_disabled():
                binaries.build(binaries.CORE + binaries.CONTROLLERS)
        else:
            binaries.build(binaries.CORE + binaries.CONTROLLERS)
    except build_module.BuildError as exc:
        pytest.fail(f"building the test control plane failed: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def controlplane(request: pytest.FixtureRequest) -> Iterator[object]:
    """A running etcd + kube-apiserver shared by the whole session."""
    from .controlplane import ControlPlane, ControlPlaneError

    _ensure_built(request, binaries.CORE)
    if binaries.openssl() is None:
        _unavailable("the `openssl` command is needed to create the test control plane's PKI")
    plane = ControlPlane()
    try:
        plane.start()
    except ControlPlaneError as exc:
        pytest.fail(f"the test control plane did not start: {exc}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def controlplane_controllers(request: pytest.FixtureRequest, controlplane) -> object:
    """The session control plane with kube-controller-manager and kube-scheduler running."""
    from .controlplane import ControlPlaneError

    _ensure_built(request, binaries.CORE + binaries.CONTROLLERS)
    try:
        controlplane.start_controllers()
    except ControlPlaneError as exc:
        pytest.fail(f"the controllers did not start: {exc}", pytrace=False)
    return controlplane
