"""Locate (and on request build) the etcd / Kubernetes binaries of the test control plane.

The pinned versions, the cache layout and the build itself live in the
stand-alone script ``tests/controlplane/build.py`` of a source checkout; this
module imports that script by path so there is one source of truth. A
directory of ready-made binaries can be supplied instead with
``NVCRE_CONTROLPLANE_BIN_DIR`` (then no checkout is needed).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

BIN_DIR_ENV = "NVCRE_CONTROLPLANE_BIN_DIR"
REPO_ROOT_ENV = "NVCRE_REPO_ROOT"
BUILD_SCRIPT = Path("tests") / "controlplane" / "build.py"

CORE = ("etcd", "kube-apiserver")
CONTROLLERS = ("kube-scheduler", "kube-controller-manager")


class BinariesMissing(RuntimeError):
    """Some control-plane binaries are not built; the message says how to build them."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


def repo_root() -> Path | None:
    """The source checkout holding the build script, if there is one."""
    explicit = os.environ.get(REPO_ROOT_ENV)
    candidates = [Path(explicit)] if explicit else []
    candidates += [Path(__file__).resolve().parent.parent, Path.cwd(), *Path.cwd().parents]
    for candidate in candidates:
        if (candidate / BUILD_SCRIPT).is_file():
            return candidate
    return None


@lru_cache(maxsize=1)
def build_script() -> Path:
    """Where ``tests/controlplane/build.py`` is; FileNotFoundError, saying what to set, without a checkout."""
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            f"cannot find {BUILD_SCRIPT} (set {REPO_ROOT_ENV} to the nvcre source checkout, "
            f"or {BIN_DIR_ENV} to a directory of prebuilt binaries)"
        )
    return root / BUILD_SCRIPT


def build_module() -> ModuleType:
    """Import ``tests/controlplane/build.py`` by path."""
    path = build_script()
    spec = importlib.util.spec_from_file_location("nvcre_controlplane_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve annotations through sys.modules while executing.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Binaries:
    """Paths of the control-plane executables (controllers may be absent)."""

    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path | None
    kube_controller_manager: Path | None

    @property
    def has_controllers(self) -> bool:
        return self.kube_scheduler is not None and self.kube_controller_manager is not None


def bin_dir() -> Path:
    """Where the binaries are (or will be) kept."""
    explicit = os.environ.get(BIN_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return Path(build_module().bin_dir())


def cache_root() -> Path:
    """Root of the control-plane cache (the build script decides; this mirrors it
    when only prebuilt binaries are available)."""
    try:
        return Path(build_module().cache_root())
    except FileNotFoundError:
        override = os.environ.get("NVCRE_CONTROLPLANE_CACHE")
        if override:
            return Path(override).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
        return base / "nvcre" / "controlplane"


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing(components: tuple[str, ...] = CORE) -> list[str]:
    """Which of ``components`` are not available."""
    if os.environ.get(BIN_DIR_ENV):
        return [c for c in components if _executable(bin_dir() / c) is None]
    return list(build_module().missing_components(list(components)))


def locate(*, require_controllers: bool = False) -> Binaries:
    """Return the binaries, raising :class:`BinariesMissing` if required ones are absent."""
    wanted = CORE + (CONTROLLERS if require_controllers else ())
    absent = missing(wanted)
    if absent:
        raise BinariesMissing(
            f"control-plane binaries not built: {', '.join(absent)} (expected in {bin_dir()}); "
            "run `python tests/controlplane/build.py` or `nvcrectl dev controlplane build`",
            absent,
        )
    directory = bin_dir()
    have_controllers = not missing(CONTROLLERS)
    return Binaries(
        etcd=directory / "etcd",
        kube_apiserver=directory / "kube-apiserver",
        kube_scheduler=directory / "kube-scheduler" if have_controllers else None,
        kube_controller_manager=(directory / "kube-controller-manager" if have_controllers else None),
    )


def go_available() -> bool:
    """Whether a Go toolchain the build script can use is installed."""
    if os.environ.get(BIN_DIR_ENV):
        return False
    try:
        return build_module().find_go() is not None
    except FileNotFoundError:
        return False


def build(components: tuple[str, ...] = CORE + CONTROLLERS) -> Path:
    """Build the binaries through the build script (a no-op when they are current)."""
    if os.environ.get(BIN_DIR_ENV):
        raise BinariesMissing(
            f"{BIN_DIR_ENV} points at {bin_dir()}, which lacks binaries; nothing is built into a directory given that way",
            missing(components),
        )
    return Path(build_module().build(list(components)))


def openssl() -> str | None:
    """Path of the ``openssl`` command used to make the test PKI."""
    return shutil.which("openssl")
