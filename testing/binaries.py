"""Locate (and on request build) the etcd / Kubernetes binaries of the test control plane.

The pinned versions, the cache layout and the build itself live in
:mod:`nvcre.testing.gobuild.build`, the one source of truth. A directory of
ready-made binaries can be supplied instead with ``NVCRE_CONTROLPLANE_BIN_DIR``.
"""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

BIN_DIR_ENV = "NVCRE_CONTROLPLANE_BIN_DIR"
REPO_ROOT_ENV = "NVCRE_REPO_ROOT"
#: What a source checkout of nvcre holds at its root.
CHECKOUT_MARKER = Path("compiler") / "api"

CORE = ("etcd", "kube-apiserver")
CONTROLLERS = ("kube-scheduler", "kube-controller-manager")


class BinariesMissing(RuntimeError):
    """Some control-plane binaries are not built; the message says how to build them."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


def repo_root() -> Path | None:
    """The nvcre source checkout this runs from or in, if there is one (``NVCRE_REPO_ROOT`` first)."""
    explicit = os.environ.get(REPO_ROOT_ENV)
    candidates = [Path(explicit)] if explicit else []
    candidates += [Path(__file__).resolve().parent.parent, Path.cwd(), *Path.cwd().parents]
    for candidate in candidates:
        if (candidate / "pyproject.toml").is_file() and (candidate / CHECKOUT_MARKER).is_dir():
            return candidate
    return None


def build_module() -> ModuleType:
    """The control-plane build, :mod:`nvcre.testing.gobuild.build` (standard library only)."""
    return importlib.import_module("nvcre.testing.gobuild.build")


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
    """Root of the control-plane cache (``NVCRE_CONTROLPLANE_CACHE``, else under ``XDG_CACHE_HOME``)."""
    return Path(build_module().cache_root())


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
            "run `python -m nvcre.testing.gobuild.build` or `nvcrectl dev controlplane build`",
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
    """Whether a Go toolchain the build can use is installed."""
    if os.environ.get(BIN_DIR_ENV):
        return False
    return build_module().find_go() is not None


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
