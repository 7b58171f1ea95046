"""Container images built on this machine and imported into each node's containerd, with no
registry anywhere: a layer tar is wrapped as a docker-archive (``manifest.json``, a config whose
``rootfs.diff_ids`` names the layer, the layer itself) and handed to ``ctr images import``.

Two images are made here, each cached under the control-plane cache by the digest of its inputs:

- the pods' sandbox image, holding only the ``pause`` program ``build.py`` compiles;
- ``localhost/nvcre-busybox``, Debian's ``busybox-static`` package (downloaded by apt, unpacked by
  ``dpkg-deb``) for the environment's own checks: a shell, ``nslookup``, ``wget``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import binaries
from ..errors import ControlPlaneError

PAUSE_REPO = "localhost/nvcre-pause"
BUSYBOX_REPO = "localhost/nvcre-busybox"
BUSYBOX_PACKAGE = "busybox-static"
_EPOCH = 0


class ImageError(ControlPlaneError):
    """An image could not be built or imported."""


@dataclass(frozen=True)
class Image:
    """A docker-archive on disk and the reference it is imported as."""

    reference: str
    archive: Path


def images_dir() -> Path:
    return binaries.cache_root() / "images"


def _tar_info(name: str, size: int, mode: int, kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.type, info.mtime = size, mode, kind, _EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    tar.addfile(_tar_info(name, len(data), mode), io.BytesIO(data))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wrap_layer(layer: Path, reference: str, cmd: list[str], target: Path, *, env: list[str] | None = None) -> Image:
    """Write ``target``: a docker-archive of the single ``layer`` tar, tagged ``reference``."""
    diff_id = _sha256_file(layer)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Cmd": cmd, "Env": env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "nvcre.testing.realnodes.images"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = f"{hashlib.sha256(config_bytes).hexdigest()}.json"
    manifest = [{"Config": config_name, "RepoTags": [reference], "Layers": [f"{diff_id}/layer.tar"]}]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + ".tmp")
    with tarfile.open(staging, "w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, config_name, config_bytes)
        tar.addfile(_tar_info(f"{diff_id}/", 0, 0o755, tarfile.DIRTYPE))
        info = _tar_info(f"{diff_id}/layer.tar", layer.stat().st_size, 0o644)
        with layer.open("rb") as fh:
            tar.addfile(info, fh)
        _add_bytes(tar, "manifest.json", json.dumps(manifest).encode())
    os.replace(staging, target)
    return Image(reference, target)


def pause_image(pause_binary: Path) -> Image:
    """The sandbox image: ``/pause`` and nothing else, tagged by the binary's digest."""
    digest = _sha256_file(pause_binary)[:12]
    reference = f"{PAUSE_REPO}:{digest}"
    target = images_dir() / f"pause-{digest}.tar"
    if target.is_file():
        return Image(reference, target)
    with tempfile.TemporaryDirectory(prefix="nvcre-pause-") as scratch:
        layer = Path(scratch) / "layer.tar"
        with tarfile.open(layer, "w", format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, "pause", pause_binary.read_bytes(), 0o755)
        return wrap_layer(layer, reference, ["/pause"], target)


def _apt_download(package: str, directory: Path) -> Path:
    try:
        proc = subprocess.run(["apt-get", "download", package], cwd=directory, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageError(f"`apt-get download {package}` failed: {exc}") from None
    debs = sorted(directory.glob(f"{package}_*.deb"))
    if proc.returncode != 0 or not debs:
        raise ImageError(
            f"`apt-get download {package}` failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}; run `apt-get update` first"
        )
    return debs[0]


def _package_version(package: str) -> str:
    try:
        proc = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in proc.stdout.splitlines():
        if line.strip().startswith("Candidate:"):
            version = line.split(":", 1)[1].strip()
            return "" if version == "(none)" else version
    return ""


def busybox_image() -> Image:
    """Debian's static busybox as an image (``/bin/busybox``), cached by the package's version."""
    version = _package_version(BUSYBOX_PACKAGE)
    if not version and os.geteuid() == 0 and shutil.which("apt-get"):
        # A machine whose package lists were never fetched knows no candidate yet.
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600, check=False)
        version = _package_version(BUSYBOX_PACKAGE)
    if not version:
        raise ImageError(f"apt knows no {BUSYBOX_PACKAGE} package; run `apt-get update` (Debian's archive is needed once)")
    tag = hashlib.sha256(version.encode()).hexdigest()[:12]
    reference = f"{BUSYBOX_REPO}:{tag}"
    target = images_dir() / f"busybox-{tag}.tar"
    if target.is_file():
        return Image(reference, target)
    if shutil.which("dpkg-deb") is None:
        raise ImageError("dpkg-deb is needed to unpack busybox-static")
    with tempfile.TemporaryDirectory(prefix="nvcre-busybox-") as scratch:
        deb = _apt_download(BUSYBOX_PACKAGE, Path(scratch))
        layer = Path(scratch) / "layer.tar"
        with layer.open("wb") as out:
            proc = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=out, stderr=subprocess.PIPE, check=False)
        if proc.returncode != 0:
            raise ImageError(f"dpkg-deb could not unpack {deb.name}: {proc.stderr.decode(errors='replace').strip()}")
        return wrap_layer(layer, reference, ["/bin/busybox", "sleep", "3600"], target)


def import_image(ctr: str, socket_path: Path, image: Image, timeout: float = 300.0) -> None:
    """``ctr images import`` the archive into one node's containerd (the CRI's ``k8s.io`` namespace)."""
    argv = [ctr, f"--address={socket_path}", "--namespace=k8s.io", "images", "import", str(image.archive)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageError(f"importing {image.reference} failed: {exc}") from None
    if proc.returncode != 0:
        raise ImageError(f"importing {image.reference} failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
