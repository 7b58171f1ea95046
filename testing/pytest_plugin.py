"""pytest plugin providing one real control plane per test session.

Fixtures:

``controlplane``
    Session-scoped :class:`nvcre.testing.controlplane.ControlPlane` (etcd +
    kube-apiserver with the project's and the Trainer/JobSet CRDs installed);
    use ``.kubeconfig`` and ``.api_client()``.
``controlplane_controllers``
    The same control plane after kube-controller-manager and kube-scheduler
    were started on it (garbage collection, Job controller, scheduling).
``simcluster``
    Session-scoped :class:`nvcre.testing.simcluster.SimCluster`: a control plane
    of its own with controllers, JobSet, the Kubeflow Trainer and kwok, with no
    nodes. Tests add GPU nodes with ``simcluster.add_nodes(...)``.
``sim_namespace``
    A fresh namespace on the simulated cluster for one test. Afterwards it is
    deleted, and the nodes the test added are removed and faults cleared, so the
    next test schedules onto its own nodes only.

Mark tests that use the simulated cluster ``integration`` and ``sim``.

``realcluster``
    Module-scoped :class:`nvcre.testing.realnodes.cluster.RealCluster`: the control plane with two
    real h100 nodes (kubelet, containerd, runc, CNI bridge, CoreDNS) whose networking lives in a
    namespace of its own; ``realcluster.host_before`` is the host snapshot taken before it started.
    Needs root, Debian's containerd and runc, and ``build.py --real``. Mark such tests
    ``integration`` and ``realnodes``.

Missing binaries are built when a Go toolchain is present. Without one the
tests are skipped, except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from . import binaries

if TYPE_CHECKING:
    from .controlplane import ControlPlane
    from .simcluster import SimCluster


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"{reason} (CI=true, so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


def _ensure_built(request: pytest.FixtureRequest, components: tuple[str, ...]) -> None:
    """Build ``components`` if absent, or skip/fail when that is impossible."""
    absent = binaries.missing(components)
    if not absent:
        return
    if not binaries.go_available():
        _unavailable(f"control-plane binaries not built ({', '.join(absent)}) and no Go toolchain to build them (see docs/testing.md)")
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sim: needs the simulated GPU cluster (JobSet, Trainer, kwok; built with Go)")
    config.addinivalue_line("markers", "realnodes: needs real worker nodes (root, containerd, runc; build.py --real)")


def _with_capture_disabled(request: pytest.FixtureRequest, action: Callable[[], object]) -> None:
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            action()
    else:
        action()


def _ensure_third_party_crds(request: pytest.FixtureRequest) -> None:
    """Fetch the JobSet / Trainer CRDs into the cache if absent, or skip/fail."""
    from .crds import THIRD_PARTY_CRDS_ENV, ensure_third_party_crds

    if os.environ.get(THIRD_PARTY_CRDS_ENV):
        return
    build_module = binaries.build_module()
    if not build_module.sim_data_missing(("jobset", "trainer")):
        return
    if not binaries.go_available():
        _unavailable(
            "the JobSet and Trainer CRDs are not in the build cache and no Go toolchain "
            f"to fetch them (or set {THIRD_PARTY_CRDS_ENV}; see docs/testing.md)"
        )
    try:
        _with_capture_disabled(request, ensure_third_party_crds)
    except build_module.BuildError as exc:
        pytest.fail(f"fetching the JobSet and Trainer CRDs failed: {exc}", pytrace=False)


def _ensure_sim_built(request: pytest.FixtureRequest) -> None:
    """Build JobSet, Trainer and kwok if absent, or skip/fail when that is impossible."""
    from .simcluster import SIM_COMPONENTS

    _ensure_built(request, binaries.CORE + binaries.CONTROLLERS)
    build_module = binaries.build_module()
    absent = build_module.missing_sim_components(list(SIM_COMPONENTS))
    if not absent:
        return
    if not binaries.go_available():
        _unavailable(
            f"simulated-cluster controllers not built ({', '.join(absent)}) and no Go toolchain to build them (see docs/simcluster.md)"
        )
    try:
        _with_capture_disabled(request, lambda: build_module.build_sim(list(SIM_COMPONENTS)))
    except build_module.BuildError as exc:
        pytest.fail(f"building the simulated cluster failed: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def controlplane(request: pytest.FixtureRequest) -> Iterator[object]:
    """A running etcd + kube-apiserver shared by the whole session."""
    from .controlplane import ControlPlane, ControlPlaneError

    _ensure_built(request, binaries.CORE)
    _ensure_third_party_crds(request)
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
def controlplane_controllers(request: pytest.FixtureRequest, controlplane: ControlPlane) -> object:
    """The session control plane with kube-controller-manager and kube-scheduler running."""
    from .controlplane import ControlPlaneError

    _ensure_built(request, binaries.CORE + binaries.CONTROLLERS)
    try:
        controlplane.start_controllers()
    except ControlPlaneError as exc:
        pytest.fail(f"the controllers did not start: {exc}", pytrace=False)
    return controlplane


@pytest.fixture(scope="session")
def simcluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """The simulated GPU cluster shared by the session (no nodes until a test adds some)."""
    from .simcluster import SimCluster

    _ensure_sim_built(request)
    if binaries.openssl() is None:
        _unavailable("the `openssl` command is needed to create the simulated cluster's PKI")
    from kubernetes.client import ApiException

    from .errors import ControlPlaneError

    cluster = SimCluster()
    try:
        cluster.start()
    except (ControlPlaneError, ApiException, OSError, ValueError) as exc:
        pytest.fail(f"the simulated cluster did not start: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def sim_namespace(simcluster: SimCluster) -> Iterator[str]:
    """A fresh namespace for one test; its namespace and the nodes it added go afterwards."""
    import uuid

    from kubernetes import client

    name = f"sim-{uuid.uuid4().hex[:8]}"
    before = set(simcluster.nodes)
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        namespace: Any = {"metadata": {"name": name}}
        core.create_namespace(namespace)
        try:
            yield name
        finally:
            core.delete_namespace(name, propagation_policy="Background")
            # Let kwok finish the pods on this test's nodes before the nodes go.
            deadline = time.monotonic() + 20
            while core.list_namespaced_pod(name).items and time.monotonic() < deadline:
                time.sleep(0.25)
            added = [n for n in simcluster.nodes if n not in before]
            if added:
                simcluster.remove_nodes(added)


def _ensure_real_built(request: pytest.FixtureRequest) -> None:
    """Build what real nodes need if absent, or skip/fail when that is impossible."""
    from .realnodes import toolchain

    _ensure_built(request, binaries.CORE + binaries.CONTROLLERS)
    _ensure_third_party_crds(request)
    system = toolchain.machine_problems()
    if system:
        _unavailable("; ".join(system))
    build_module = binaries.build_module()
    if not build_module.real_missing():
        return
    if not binaries.go_available():
        _unavailable(f"real-node binaries not built ({', '.join(build_module.real_missing())}) and no Go toolchain to build them")
    try:
        _with_capture_disabled(request, build_module.build_real)
    except build_module.BuildError as exc:
        pytest.fail(f"building the real-node binaries failed: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def realcluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """Two real h100 nodes on a control plane of their own, stopped after the module's tests."""
    from .errors import ControlPlaneError
    from .realnodes import hoststate
    from .realnodes.cluster import RealCluster

    _ensure_real_built(request)
    before = hoststate.snapshot()
    cluster = RealCluster(profile_name="h100", nodes=2)
    cluster.host_before = before  # type: ignore[attr-defined]
    try:
        cluster.start()
    except ControlPlaneError as exc:
        pytest.fail(f"the real-node environment did not start: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
