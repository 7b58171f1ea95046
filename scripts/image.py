#!/usr/bin/env python3
"""Build the controller image without a registry: a Debian base, the Containerfile, an OCI layout, an SBOM.

Usage (root, with mmdebstrap, buildah and skopeo from Debian's packages; ``make image`` runs it):

    python scripts/image.py                       # everything below, into build/image
    python scripts/image.py --out /tmp/again      # the same from nothing (the reproducibility check)
    python scripts/image.py --python-image docker.io/library/python --python-digest sha256:...   # official base

Steps, each timed and printed on stderr:

1. **base**: ``mmdebstrap`` makes a Debian bookworm root filesystem with Python (``python3``,
   ``python3-venv``, ``python3-pip``, ``python-is-python3``, ``libstdc++6`` for re2, CA
   certificates) from the machine's apt sources, and buildah commits it as
   ``localhost/debian-python:bookworm`` with every time set to ``SOURCE_DATE_EPOCH``. The tarball is
   kept in the output folder and reused while its inputs are the same. Skipped with
   ``--python-digest``, which builds on a registry base instead.
2. **build**: ``buildah bud`` of ``Containerfile`` on that base (``--pull=never``, chroot
   isolation, ``--timestamp`` and ``SOURCE_DATE_EPOCH``; no layer cache unless ``--cache``, and
   the image the tag named before is removed, so the store does not grow). The machine's CA bundle and
   pip configuration are mounted into each ``RUN`` and never committed to the image.
3. **export**: ``skopeo copy`` to an OCI layout (``<out>/oci``); its manifest digest, the one a
   registry shows after a push, is printed on stdout and written to ``<out>/image.json``.
4. **sbom**: a CycloneDX JSON SBOM of the image's Python environment, made by ``cyclonedx-py`` in
   a throwaway container of the image (so it reads exactly what the image holds), written next to
   the layout as ``<out>/sbom.cdx.json``.

All state lives in a private containers-storage under the output folder (``storage.conf`` there);
the system store is never touched. ``SOURCE_DATE_EPOCH`` defaults to the last commit's time, so
two builds of one commit give one digest as long as Debian's archive and PyPI serve the same
versions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION = "0.1.0"
BASE_IMAGE = "localhost/debian-python"
BASE_TAG = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates", "libstdc++6")
# Documentation, manuals and translations are left out of the base; copyright files stay.
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
SBOM_TOOL = "cyclonedx-bom==7.2.1"
TOOLS = ("mmdebstrap", "buildah", "skopeo")


class ImageError(Exception):
    """A step failed or a precondition is missing; the message says which and how to fix it."""


def log(message: str) -> None:
    print(f"image: {message}", file=sys.stderr, flush=True)


def missing_tools(*, base: bool = True) -> list[str]:
    """The tools this build needs that are not on PATH (mmdebstrap only when the base is built here)."""
    return [tool for tool in TOOLS if (base or tool != "mmdebstrap") and shutil.which(tool) is None]


def source_date_epoch() -> str:
    """SOURCE_DATE_EPOCH from the environment, else the last commit's time."""
    if os.environ.get("SOURCE_DATE_EPOCH", "").isdigit():
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise ImageError("SOURCE_DATE_EPOCH is not set and the last commit's time cannot be read (not a git checkout?)") from exc
    if not out.isdigit():
        raise ImageError(f"git gave no commit time ({out!r}); set SOURCE_DATE_EPOCH")
    return out


class Store:
    """A private containers-storage (overlay) under one folder, and the environment that selects it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.conf = self.root / "storage.conf"

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(f'[storage]\ndriver = "overlay"\nrunroot = "{self.root}/runroot"\ngraphroot = "{self.root}/storage"\n')

    def env(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_STORAGE_CONF": str(self.conf)}

    def run(self, argv: list[str], *, what: str, timeout: float = 1800, stdin: str | None = None) -> str:
        """Run one tool against this store; its stderr goes to ours, its stdout is returned."""
        done = subprocess.run(argv, env=self.env(), input=stdin, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise ImageError(f"{what} failed (exit {done.returncode}): {' '.join(argv[:3])} ...")
        return done.stdout


def apt_sources() -> list[str]:
    """The machine's apt source files for the bookworm suites, handed to mmdebstrap as its mirrors."""
    found = [
        path
        for path in (Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*")))
        if path.is_file() and path.suffix in (".list", ".sources") and "bookworm" in path.read_text()
    ]
    if not found:
        raise ImageError("no apt source under /etc/apt names bookworm; the base is made from Debian bookworm's archive")
    return [str(path) for path in found]


def base_key(sources: list[str], epoch: str) -> str:
    """What decides the base tarball's bytes (besides the archive's state): packages, excludes, sources, time."""
    text = json.dumps([BASE_PACKAGES, DPKG_EXCLUDES, [Path(s).read_text() for s in sources], epoch])
    return hashlib.sha256(text.encode()).hexdigest()


def build_base_tar(out: Path, epoch: str) -> Path:
    """The Debian root filesystem as a tarball; reused while its key (inputs) is unchanged."""
    sources = apt_sources()
    tar, key_file = out / "base.tar", out / "base.key"
    key = base_key(sources, epoch)
    if tar.is_file() and key_file.is_file() and key_file.read_text() == key:
        log(f"base: reusing {tar} (same packages, sources and SOURCE_DATE_EPOCH)")
        return tar
    tar.unlink(missing_ok=True)
    argv = [
        "mmdebstrap",
        "--variant=essential",
        "--quiet",
        "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
        f"--include={','.join(BASE_PACKAGES)}",
        *(f"--dpkgopt={opt}" for opt in DPKG_EXCLUDES),
        "bookworm",
        str(tar),
        *sources,
    ]
    with (out / "base.log").open("wb") as transcript:
        done = subprocess.run(
            argv, env={**os.environ, "SOURCE_DATE_EPOCH": epoch}, stdout=transcript, stderr=subprocess.STDOUT, check=False, timeout=1800
        )
    if done.returncode != 0:
        tail = (out / "base.log").read_text(errors="replace").splitlines()[-15:]
        raise ImageError(
            f"mmdebstrap failed (exit {done.returncode}); the base needs Debian's archive and root. "
            f"Last lines of {out / 'base.log'}:\n" + "\n".join(tail)
        )
    key_file.write_text(key)
    return tar


def import_base(store: Store, tar: Path, epoch: str) -> str:
    """Commit the tarball as the local base image (times fixed), returning its digest in the store."""
    ctr = store.run(["buildah", "from", "--quiet", "scratch"], what="buildah from scratch").strip()
    try:
        store.run(["buildah", "add", "--quiet", ctr, str(tar), "/"], what="buildah add (base)")
        store.run(
            [
                "buildah",
                "config",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--cmd",
                '["python3"]',
                "--created-by",
                f"mmdebstrap bookworm essential + {' '.join(BASE_PACKAGES)}",
                ctr,
            ],
            what="buildah config (base)",
        )
        store.run(["buildah", "commit", "--quiet", "--timestamp", epoch, ctr, f"{BASE_IMAGE}:{BASE_TAG}"], what="buildah commit (base)")
    finally:
        subprocess.run(["buildah", "rm", ctr], env=store.env(), capture_output=True, check=False, timeout=120)
    return store.run(
        ["buildah", "inspect", "--type", "image", "--format", "{{.FromImageDigest}}", f"{BASE_IMAGE}:{BASE_TAG}"],
        what="buildah inspect (base)",
    ).strip()


def build_mounts(out: Path) -> list[str]:
    """The CA bundle and pip configuration of this machine, mounted read-only into every RUN of the build."""
    ca = Path(os.environ.get("SSL_CERT_FILE") or CA_BUNDLE)
    mounts = ["-v", f"{ca}:{CA_BUNDLE}:ro"] if ca.is_file() else []
    pip_conf = Path(os.environ.get("PIP_CONFIG_FILE") or "/etc/pip.conf")
    if not pip_conf.is_file():
        pip_conf = out / "pip.conf"
        pip_conf.write_text(f"[global]\ncert = {CA_BUNDLE}\n")
    return [*mounts, "-v", f"{pip_conf}:/etc/pip.conf:ro"]


def build_image(store: Store, out: Path, tag: str, epoch: str, python_image: str, python_digest: str, *, cache: bool, pull: str) -> None:
    argv = [
        "buildah",
        "bud",
        "--quiet",
        f"--pull={pull}",
        "--isolation",
        "chroot",
        f"--layers={'true' if cache else 'false'}",
        "--timestamp",
        epoch,
        "--build-arg",
        f"SOURCE_DATE_EPOCH={epoch}",
        "--build-arg",
        f"PYTHON_IMAGE={python_image}",
        "--build-arg",
        f"PYTHON_DIGEST={python_digest}",
        *build_mounts(out),
        "-t",
        tag,
        "-f",
        str(REPO / "Containerfile"),
        str(REPO),
    ]
    store.run(argv, what="buildah bud")
    if not cache:  # the image this tag named before, and nothing else, is left without a name
        subprocess.run(["buildah", "rmi", "--prune"], env=store.env(), capture_output=True, check=False, timeout=300)


def export_layout(store: Store, out: Path, tag: str) -> tuple[str, dict[str, object]]:
    """Copy the image to an OCI layout; return the manifest digest and the manifest."""
    layout = out / "oci"
    shutil.rmtree(layout, ignore_errors=True)
    store.run(["skopeo", "copy", "--quiet", f"containers-storage:{tag}", f"oci:{layout}:{tag.rsplit(':', 1)[-1]}"], what="skopeo copy")
    index = json.loads((layout / "index.json").read_text())
    digest = index["manifests"][0]["digest"]
    manifest = json.loads((layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_text())
    return digest, manifest


def write_sbom(store: Store, out: Path, tag: str) -> Path:
    """CycloneDX JSON of the image's /opt/nvcre environment, made inside a throwaway container of the image."""
    ctr = store.run(["buildah", "from", "--quiet", "--pull=never", tag], what="buildah from (sbom)").strip()
    try:
        run = ["buildah", "run", "--isolation", "chroot", "--user", "0:0", *build_mounts(out), ctr, "--"]
        store.run([*run, "/opt/nvcre/bin/python", "-m", "venv", "/tmp/sbom"], what="venv for the SBOM tool")
        store.run(
            [*run, "/tmp/sbom/bin/python", "-m", "pip", "install", "--quiet", "--no-cache-dir", SBOM_TOOL], what=f"pip install {SBOM_TOOL}"
        )
        document = store.run(
            [
                *run,
                "/tmp/sbom/bin/cyclonedx-py",
                "environment",
                "--output-reproducible",
                "--of",
                "JSON",
                "--output-file",
                "-",
                "/opt/nvcre/bin/python",
            ],
            what="cyclonedx-py environment",
        )
    finally:
        subprocess.run(["buildah", "rm", ctr], env=store.env(), capture_output=True, check=False, timeout=120)
    json.loads(document)  # a tool that printed something else must not leave a file that looks like an SBOM
    path = out / "sbom.cdx.json"
    path.write_text(document)
    return path


@contextlib.contextmanager
def timed(steps: dict[str, float], name: str) -> Iterator[None]:
    """Record a step's wall time in ``steps`` and say when it starts and ends."""
    log(f"{name} ...")
    start = time.monotonic()
    yield
    steps[name] = round(time.monotonic() - start, 1)
    log(f"{name}: {steps[name]} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "image", help="output folder (layout, SBOM, image.json)")
    parser.add_argument("--store", type=Path, default=None, help="containers-storage folder (default: <out>/store)")
    parser.add_argument("--tag", default=f"localhost/nvcre/manager:{VERSION}")
    parser.add_argument("--python-image", default=None, help="registry base instead of the Debian one (with --python-digest)")
    parser.add_argument("--python-digest", default=None, help="the registry base's digest; skips the Debian base")
    parser.add_argument(
        "--cache", action="store_true", help="keep and reuse intermediate layers (faster rebuilds of unchanged steps; the store grows)"
    )
    parser.add_argument("--no-sbom", action="store_true", help="skip the SBOM (it installs cyclonedx-bom from PyPI)")
    args = parser.parse_args(argv)
    local_base = args.python_digest is None
    try:
        if os.geteuid() != 0:
            raise ImageError("the image is built as root (rootful buildah with a private store); run it with sudo or as root")
        if missing := missing_tools(base=local_base):
            raise ImageError(f"missing {', '.join(missing)}: apt-get install --no-install-recommends buildah podman skopeo mmdebstrap runc")
        out: Path = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        store = Store(args.store or out / "store")
        store.prepare()
        epoch = source_date_epoch()
        steps: dict[str, float] = {}
        if local_base:
            with timed(steps, "base"):
                tar = build_base_tar(out, epoch)
                python_image, python_digest = BASE_IMAGE, import_base(store, tar, epoch)
            log(f"base: {python_image}@{python_digest} (tarball sha256 {hashlib.sha256(tar.read_bytes()).hexdigest()})")
        else:
            python_image, python_digest = args.python_image or "docker.io/library/python", args.python_digest
        with timed(steps, "build"):
            build_image(
                store, out, args.tag, epoch, python_image, python_digest, cache=args.cache, pull="never" if local_base else "missing"
            )
        with timed(steps, "export"):
            digest, manifest = export_layout(store, out, args.tag)
        if not args.no_sbom:
            with timed(steps, "sbom"):
                write_sbom(store, out, args.tag)
        layers = [int(layer["size"]) for layer in manifest["layers"]]  # type: ignore[index,union-attr]
        record = {
            "tag": args.tag,
            "digest": digest,
            "layout": str(out / "oci"),
            "base": f"{python_image}@{python_digest}",
            "sourceDateEpoch": int(epoch),
            "compressedLayerBytes": layers,
            "seconds": steps,
            "storageConf": str(store.conf),
        }
        (out / "image.json").write_text(json.dumps(record, indent=2) + "\n")
        log(f"layout {out / 'oci'}: {len(layers)} layers, {sum(layers) / 1e6:.1f} MB compressed")
        print(digest)
        return 0
    except ImageError as exc:
        log(f"error: {exc}")
        return 2
    except subprocess.TimeoutExpired as exc:
        log(f"error: {exc.cmd[0]} did not finish in {exc.timeout:.0f} s")
        return 2


if __name__ == "__main__":
    sys.exit(main())
