"""The workload image the catalog's MPI, DCGM and training categories run on real nodes, built with no registry.

Two layers, each cached under the control-plane cache by the digest of its inputs:

- the **base**: a Debian bookworm root filesystem made by ``mmdebstrap`` from the machine's apt
  sources with the packages in ``images/workload/packages.txt`` (Open MPI, OpenSSH, Python with
  mpi4py and NumPy), host keys made once in the build;
- the **tools**: the files of ``images/workload`` put where the rendered scripts look for them:
  the CPU stand-in for nccl-tests under each ``*_perf`` and ``*_perf_mpi`` name in
  ``/usr/local/bin``, the ``dcgmi`` stand-in (answering from the node's mock GPU state) as
  ``/usr/local/bin/dcgmi``, the ``torchrun`` stand-in as ``/usr/local/bin/torchrun`` and the
  Megatron-LM stand-in as ``/opt/megatron-lm/pretrain_gpt.py`` (with the ``pyproject.toml`` train.sh's
  pip install reads, and a pip configuration that installs offline), ``python`` for Debian's
  ``python3``, Debian's Open MPI programs under ``/usr/local/mpi/bin`` (``mpirun`` and the
  ``orted`` it starts on each host), Open MPI's defaults for TCP between pods, and an ssh client
  configuration that does not record host keys.

The docker-archive carries every reference in ``images/workload/references.txt`` (the names the
catalog renders), so pods run the rendered ``image:`` unchanged with the images already present.
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
from pathlib import Path

from .images import Image, ImageError, _sha256_file, images_dir

INPUTS = Path(__file__).resolve().parent.parent.parent / "images" / "workload"
STANDIN = "nccl_tests_cpu.py"
STANDIN_PATH = "usr/local/bin/nccl-tests-cpu"
DCGMI = "dcgmi_cpu.py"
DCGMI_PATH = "usr/local/bin/dcgmi"
TORCHRUN = "torchrun_cpu.py"
TORCHRUN_PATH = "usr/local/bin/torchrun"
#: where the catalog's training init container copies Megatron-LM from (``imageMegatronPath``)
MEGATRON_DIR = "opt/megatron-lm"
MEGATRON = "megatron_cpu.py"
MEGATRON_PROJECT = "megatron-pyproject.toml"
MPI_PREFIX = "usr/local/mpi"
# Open MPI's programs under the prefix the catalog's mpirun path names. An mpirun started by its
# full path takes its directory's parent as the prefix and starts ``<prefix>/bin/orted`` on every
# host, so the daemon must be there too, not only mpirun.
MPI_PROGRAMS = ("mpirun", "mpiexec", "orterun", "orted", "ompi_info")
# The nccl-tests programs the stand-in answers for (each also as ``<name>_mpi``).
PERF_NAMES = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "broadcast_perf")
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
# Host keys are made once, in the build: every pod of the image shares them, which is what a
# throw-away test cluster wants (clients never record them, see ssh_config).
CUSTOMIZE = 'chroot "$1" ssh-keygen -A'
CMD = ["/bin/sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e"]
ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"]
_BUILD_TIMEOUT = 3600.0


def _listed(name: str) -> list[str]:
    path = INPUTS / name
    try:
        text = path.read_text()
    except OSError as exc:
        raise ImageError(f"cannot read {path}: {exc}") from None
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def packages() -> list[str]:
    return _listed("packages.txt")


def references() -> list[str]:
    return _listed("references.txt")


def apt_sources() -> list[Path]:
    """The machine's apt source files naming bookworm: mmdebstrap's mirrors."""
    directory = Path("/etc/apt/sources.list.d")
    candidates = [Path("/etc/apt/sources.list"), *(sorted(directory.glob("*")) if directory.is_dir() else [])]
    found = [p for p in candidates if p.is_file() and p.suffix in (".list", ".sources") and "bookworm" in p.read_text(errors="replace")]
    if not found:
        raise ImageError("no apt source under /etc/apt names bookworm; the workload image is made from Debian bookworm's archive")
    return found


def base_key() -> str:
    """Everything that decides the base layer: packages, excludes, the build hook and the apt sources."""
    sources = [p.read_text(errors="replace") for p in apt_sources()]
    text = json.dumps({"variant": "minbase", "packages": packages(), "excludes": DPKG_EXCLUDES, "hook": CUSTOMIZE, "sources": sources})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached() -> bool:
    """Whether the base layer of the current inputs is already built (assembling the rest takes seconds)."""
    return (images_dir() / f"workload-base-{base_key()}.tar").is_file()


def build_base(log: Path | None = None) -> Path:
    """The base layer tar, built by mmdebstrap unless a build of the same inputs is cached."""
    key = base_key()
    target = images_dir() / f"workload-base-{key}.tar"
    if target.is_file():
        return target
    if shutil.which("mmdebstrap") is None:
        raise ImageError("mmdebstrap is needed to build the workload image (Debian package `mmdebstrap`)")
    if os.geteuid() != 0:
        raise ImageError("the workload image's base is built as root (mmdebstrap --mode=root)")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")  # two builds at once never share a file
    log = log or target.with_name(f"workload-base-{key}.log")
    argv = [
        "mmdebstrap",
        "--variant=minbase",
        "--mode=root",
        "--quiet",
        "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
        f"--include={','.join(packages())}",
        *(f"--dpkgopt={opt}" for opt in DPKG_EXCLUDES),
        f"--customize-hook={CUSTOMIZE}",
        "--format=tar",
        "bookworm",
        str(staging),
        *(str(p) for p in apt_sources()),
    ]
    with log.open("wb") as transcript:
        try:
            done = subprocess.run(
                ["nice", "-n", "19", *argv],
                env={**os.environ, "SOURCE_DATE_EPOCH": "0"},
                stdin=subprocess.DEVNULL,
                stdout=transcript,
                stderr=subprocess.STDOUT,
                timeout=_BUILD_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            staging.unlink(missing_ok=True)
            raise ImageError(f"mmdebstrap did not finish: {exc}") from None
    if done.returncode != 0:
        staging.unlink(missing_ok=True)
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
        raise ImageError(f"mmdebstrap failed (exit {done.returncode}); it needs Debian's archive and root. Last lines of {log}:\n{tail}")
    os.replace(staging, target)
    return target


def _entry(name: str, *, mode: int = 0o644, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode, info.type, info.size, info.linkname, info.mtime = mode, kind, size, link, 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    tar.addfile(_entry(name, mode=mode, size=len(data)), io.BytesIO(data))


def _directories(tar: tarfile.TarFile, *paths: str) -> None:
    seen: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            name = "/".join(parts[:depth])
            if name not in seen:
                seen.add(name)
                tar.addfile(_entry(name + "/", mode=0o755, kind=tarfile.DIRTYPE))


def tools_layer(target: Path) -> Path:
    """Write the tools layer: the stand-in under every nccl-tests name, Open MPI's prefix, MPI and ssh defaults."""
    names = (STANDIN, DCGMI, "openmpi-mca-params.conf", "ssh_config", TORCHRUN, MEGATRON, MEGATRON_PROJECT, "pip.conf")
    try:
        standin, dcgmi, mca, ssh, torchrun, megatron, project, pip = ((INPUTS / name).read_bytes() for name in names)
    except OSError as exc:
        raise ImageError(f"the workload image's inputs are missing ({exc}); they live in images/workload of the repository") from None
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        _directories(tar, "usr/local/bin", f"{MPI_PREFIX}/bin", "etc/openmpi", "etc/ssh/ssh_config.d", MEGATRON_DIR)
        _file(tar, STANDIN_PATH, standin, 0o755)
        _file(tar, DCGMI_PATH, dcgmi, 0o755)
        _file(tar, TORCHRUN_PATH, torchrun, 0o755)
        _file(tar, f"{MEGATRON_DIR}/pretrain_gpt.py", megatron, 0o755)
        _file(tar, f"{MEGATRON_DIR}/pyproject.toml", project)
        _file(tar, "etc/pip.conf", pip)
        # train.sh calls ``python`` (NVIDIA's images have it); Debian's Python is ``python3`` alone.
        tar.addfile(_entry("usr/local/bin/python", kind=tarfile.SYMTYPE, mode=0o777, link="/usr/bin/python3"))
        for name in PERF_NAMES:
            for variant in (name, f"{name}_mpi"):
                tar.addfile(_entry(f"usr/local/bin/{variant}", kind=tarfile.SYMTYPE, mode=0o777, link="nccl-tests-cpu"))
        for program in MPI_PROGRAMS:
            tar.addfile(_entry(f"{MPI_PREFIX}/bin/{program}", kind=tarfile.SYMTYPE, mode=0o777, link=f"/usr/bin/{program}"))
        _file(tar, "etc/openmpi/openmpi-mca-params.conf", mca)
        _file(tar, "etc/ssh/ssh_config.d/nvcre-workload.conf", ssh)
    return target


def write_archive(layers: list[Path], tags: list[str], target: Path) -> None:
    """A docker-archive of ``layers`` (bottom first) carrying every one of ``tags``."""
    diff_ids = [_sha256_file(layer) for layer in layers]
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Cmd": CMD, "Env": ENV},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "nvcre.testing.realnodes.workload_images"} for _ in layers],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = f"{hashlib.sha256(config_bytes).hexdigest()}.json"
    manifest = [{"Config": config_name, "RepoTags": tags, "Layers": [f"{d}/layer.tar" for d in diff_ids]}]
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        with tarfile.open(staging, "w", format=tarfile.PAX_FORMAT) as tar:
            _file(tar, config_name, config_bytes)
            for diff_id, layer in zip(diff_ids, layers, strict=True):
                tar.addfile(_entry(f"{diff_id}/", mode=0o755, kind=tarfile.DIRTYPE))
                with layer.open("rb") as fh:
                    tar.addfile(_entry(f"{diff_id}/layer.tar", size=layer.stat().st_size), fh)
            _file(tar, "manifest.json", json.dumps(manifest).encode())
    except OSError as exc:
        staging.unlink(missing_ok=True)
        raise ImageError(f"cannot write {target}: {exc}") from None
    os.replace(staging, target)


def workload_image() -> Image:
    """The workload image's docker-archive, built (or taken from the cache) from its inputs."""
    base = build_base()
    tags = references()
    if not tags:
        raise ImageError(f"{INPUTS / 'references.txt'} names no image reference")
    images_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nvcre-workload-", dir=images_dir()) as scratch:
        tools = tools_layer(Path(scratch) / "tools.tar")
        key_text = json.dumps({"base": base.name, "tools": _sha256_file(tools), "tags": tags, "cmd": CMD, "env": ENV})
        key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
        target = images_dir() / f"workload-{key}.tar"
        if not target.is_file():
            for stale in images_dir().glob("workload-[0-9a-f]*.tar"):
                if not stale.name.startswith("workload-base-"):
                    stale.unlink(missing_ok=True)  # one assembled archive at a time; bases stay
            write_archive([base, tools], tags, target)
    return Image(tags[0], target)


def main() -> int:
    """Build (or find) the workload image and print its archive's path: ``python -m ...workload_images``."""
    try:
        image = workload_image()
    except ImageError as exc:
        print(f"workload image: {exc}", flush=True)
        return 1
    print(image.archive)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
