"""Find, parse and install CustomResourceDefinitions into a test control plane:
the project's generated CRDs and the Kubeflow Trainer / JobSet CRDs it targets."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from . import binaries
from .errors import ControlPlaneError

THIRD_PARTY_CRDS_ENV = "NVCRE_THIRD_PARTY_CRDS"
PROJECT_CRDS = Path("compiler") / "api" / "crds"
FIELD_MANAGER = "nvcre-testing"
# The controllers whose CRDs every test control plane serves (kwok's only the simulated cluster).
DEFAULT_THIRD_PARTY = ("jobset", "trainer")


def project_root() -> Path:
    """Root of the project checkout (``NVCRE_REPO_ROOT`` overrides)."""
    found = binaries.repo_root()
    return found if found is not None else Path(__file__).resolve().parent.parent


def project_crd_dir() -> Path:
    """Where the project's generated CRDs live (may not exist yet)."""
    return project_root() / PROJECT_CRDS


def sim_crd_dir(component: str | None = None) -> Path:
    """CRDs copied out of the pinned JobSet / Trainer / kwok modules into the build cache."""
    return Path(binaries.build_module().sim_crd_dir(component))


def third_party_crd_dirs() -> list[Path]:
    """Directories of the Kubeflow Trainer and JobSet CRDs.

    ``NVCRE_THIRD_PARTY_CRDS`` names one directory instead; otherwise they are the
    copies the build script takes from the same Go modules the controllers are
    built from (``testing/gobuild/build.py --sim``, or only the CRDs through
    :func:`ensure_third_party_crds`).
    """
    explicit = os.environ.get(THIRD_PARTY_CRDS_ENV)
    if explicit:
        return [Path(explicit).expanduser()]
    return [sim_crd_dir(name) for name in DEFAULT_THIRD_PARTY]


def third_party_crd_dir() -> Path:
    """The first of :func:`third_party_crd_dirs` (kept for callers wanting one directory)."""
    return third_party_crd_dirs()[0]


def ensure_third_party_crds() -> None:
    """Fetch the Trainer / JobSet CRDs into the cache when absent (needs Go, no compiling)."""
    if os.environ.get(THIRD_PARTY_CRDS_ENV):
        return
    module = binaries.build_module()
    if module.sim_data_missing(DEFAULT_THIRD_PARTY):
        module.fetch_sim_data(DEFAULT_THIRD_PARTY)


def crd_files(directory: Path) -> list[Path]:
    """Every ``*.yaml`` below ``directory`` (none if it does not exist), sorted."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*.yaml") if p.is_file())


def default_crd_files() -> list[Path]:
    """The project's CRDs (maybe none yet) followed by the third-party ones (required)."""
    third_party: list[Path] = []
    for directory in third_party_crd_dirs():
        files = crd_files(directory)
        if not files:
            raise ControlPlaneError(
                f"no third-party CRDs (Kubeflow Trainer, JobSet) found in {directory}; run "
                f"`python -m nvcre.testing.gobuild.build --sim` or set {THIRD_PARTY_CRDS_ENV}"
            )
        third_party.extend(files)
    return crd_files(project_crd_dir()) + third_party


def load_crds(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Parse CustomResourceDefinition documents, rejecting anything else."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds: list[dict[str, Any]] = []
    for path in paths:
        try:
            docs = list(yaml.load_all(path.read_text(), Loader=loader))
        except yaml.YAMLError as exc:
            raise ControlPlaneError(f"{path}: not valid YAML: {exc}") from exc
        for index, doc in enumerate(d for d in docs if d):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                raise ControlPlaneError(f"{path} (document {index + 1}) is a {kind}, not a CustomResourceDefinition")
            if not (doc.get("metadata") or {}).get("name"):
                raise ControlPlaneError(f"{path} (document {index + 1}) has no metadata.name")
            crds.append(doc)
    return crds


def apply_crds(api_client: Any, crds: list[dict[str, Any]], *, timeout: float = 60.0) -> list[str]:
    """Server-side apply ``crds`` and wait until each is Established; return their names."""
    from kubernetes import client

    api = client.ApiextensionsV1Api(api_client)
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            api.patch_custom_resource_definition(
                name,
                crd,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _preload_content=False,
            )
        except client.ApiException as exc:
            raise ControlPlaneError(f"the apiserver refused CRD {name}: {exc.status} {api_reason(exc)}") from exc
    names = [c["metadata"]["name"] for c in crds]
    wait_established(api, names, timeout)
    return names


def wait_established(api: Any, names: list[str], timeout: float) -> None:
    """Poll until every named CRD reports ``Established=True``."""
    from kubernetes import client

    deadline = time.monotonic() + timeout
    pending = list(names)
    last: dict[str, str] = {}
    while pending:
        for name in list(pending):
            try:
                raw = api.read_custom_resource_definition(name, _preload_content=False)
            except client.ApiException as exc:
                last[name] = f"{exc.status} {api_reason(exc)}"
                continue
            status = json.loads(raw.data).get("status") or {}
            conditions = {c["type"]: c for c in status.get("conditions") or []}
            if conditions.get("Established", {}).get("status") == "True":
                pending.remove(name)
                continue
            names_accepted = conditions.get("NamesAccepted", {})
            if names_accepted.get("status") == "False":
                raise ControlPlaneError(f"CRD {name}: names not accepted: {names_accepted.get('message')}")
            last[name] = conditions.get("Established", {}).get("message") or "not Established yet"
        if pending and time.monotonic() > deadline:
            details = "; ".join(f"{n}: {last.get(n, '?')}" for n in pending)
            raise ControlPlaneError(f"CRDs not Established after {timeout:.0f}s: {details}")
        if pending:
            time.sleep(0.2)


def api_reason(exc: Any) -> str:
    """The apiserver's message from an ``ApiException``, else its reason."""
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(getattr(exc, "reason", exc))
