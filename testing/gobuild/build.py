#!/usr/bin/env python3
"""Build the pinned test control plane (etcd, kube-apiserver and, optionally,
kube-scheduler, kube-controller-manager and kubectl) from Go modules into a user cache.

Nothing is downloaded except Go modules through the ordinary ``go`` command:
two throw-away wrapper modules are written into the cache, one depending on
``k8s.io/kubernetes`` and one on ``go.etcd.io/etcd/server/v3``, and the
commands are compiled from them with ``go build -trimpath``.

The module uses the standard library only (``python -m nvcre.testing.gobuild.build
--help``); the test harness and ``nvcrectl dev`` import it to find or build the binaries.

Layout of the cache (``NVCRE_CONTROLPLANE_CACHE`` overrides the root, else
``$XDG_CACHE_HOME/nvcre/controlplane``, else ``~/.cache/nvcre/controlplane``)::

    <root>/<BUILD_ID>/bin/{etcd,kube-apiserver,kube-scheduler,kube-controller-manager,kubectl}
    <root>/<BUILD_ID>/src/{kube,etcd}/      generated wrapper modules
    <root>/<BUILD_ID>/build.json            what was built, with time and memory

A second run with the same inputs does nothing and says so in one line.

``--sim`` also builds the simulated GPU cluster's controllers: JobSet, the
Kubeflow Trainer controller manager and kwok (simulated kubelets). Each is
fetched with ``go mod download -json``, copied into a writable tree and
compiled there with its own go.mod (``go install pkg@version`` is avoided on
purpose: it asks the module proxy for version lists that it may refuse).
Their CRDs, and kwok's upstream Stage objects, are copied out of the same
downloaded modules, so nothing else has to be present::

    <root>/<SIM_BUILD_ID>/bin/{jobset-controller,trainer-controller-manager,kwok}
    <root>/<SIM_BUILD_ID>/crds/{jobset,trainer,kwok}/*.yaml
    <root>/<SIM_BUILD_ID>/stages/*.yaml     kwok's node and pod lifecycle stages
    <root>/<SIM_BUILD_ID>/build.json

``--tools helm,prometheus,cosign`` also builds the tools the tests run, each from its own
module the same way (see :data:`TOOLS`): ``helm`` for the chart tests, ``prometheus`` and
``promtool`` for the alert-rule tests and the scrape test, ``cosign`` to verify the signed
evidence bundles with a second implementation (``--helm`` is short for ``--tools helm``)::

    <root>/<tool>-<version>/bin/<binaries>
    <root>/<tool>-<version>/build.json

``--real`` builds what the real worker nodes run (``nvcrectl dev up --real``): kubelet and
kube-proxy into the control plane's ``bin/`` (same wrapper module and stamps; never built by
default), the ``cni-plugins`` and ``coredns`` tools, and two programs of ours whose sources are
in ``templates/real/`` (outside the control plane's cache key): the pods' sandbox program, a
static C binary, and the GPU device plugin against ``k8s.io/kubelet``'s device-plugin API::

    <root>/pause-<digest>/bin/pause
    <root>/device-plugin-<staging version>-<digest>/bin/nvcre-device-plugin
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

KUBERNETES_VERSION = "v1.36.3"
STAGING_VERSION = "v0.36.3"
ETCD_VERSION = "v3.6.16"
BUILD_ID = f"k8s-{KUBERNETES_VERSION}-etcd-{ETCD_VERSION}"

KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_SERVER_MODULE = "go.etcd.io/etcd/server/v3"

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
MANIFEST_NAME = "build.json"
LOCK_NAME = ".build.lock"


@dataclass(frozen=True)
class Component:
    """One binary of the control plane and the wrapper module it is built from."""

    name: str
    module: str  # "kube" or "etcd": which wrapper module builds it
    package: str  # Go package path (relative to the wrapper module for etcd)


COMPONENTS: dict[str, Component] = {
    c.name: c
    for c in (
        Component("etcd", "etcd", "./cmd/etcd"),
        Component("kube-apiserver", "kube", f"{KUBERNETES_MODULE}/cmd/kube-apiserver"),
        Component("kube-scheduler", "kube", f"{KUBERNETES_MODULE}/cmd/kube-scheduler"),
        Component(
            "kube-controller-manager",
            "kube",
            f"{KUBERNETES_MODULE}/cmd/kube-controller-manager",
        ),
        # The client the conformance tests drive as users do (``kubectl get -l``), from the
        # same Kubernetes source and ldflags as the servers it talks to.
        Component("kubectl", "kube", f"{KUBERNETES_MODULE}/cmd/kubectl"),
        # The real worker nodes' agents (``--real``): same module, same stamps, never built by default.
        Component("kubelet", "kube", f"{KUBERNETES_MODULE}/cmd/kubelet"),
        Component("kube-proxy", "kube", f"{KUBERNETES_MODULE}/cmd/kube-proxy"),
    )
}
REQUIRED_COMPONENTS = ("etcd", "kube-apiserver")
CONTROLLER_COMPONENTS = ("kube-scheduler", "kube-controller-manager")
CLIENT_COMPONENTS = ("kubectl",)
DEFAULT_COMPONENTS = REQUIRED_COMPONENTS + CONTROLLER_COMPONENTS + CLIENT_COMPONENTS
NODE_COMPONENTS = ("kubelet", "kube-proxy")


class BuildError(RuntimeError):
    """A build step failed; the message says which command and why."""


# --------------------------------------------------------------------------- paths


def cache_root() -> Path:
    """Root of the control-plane cache, honouring the documented overrides."""
    override = os.environ.get("NVCRE_CONTROLPLANE_CACHE")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "nvcre" / "controlplane"


def build_dir() -> Path:
    """Directory holding this pinned release's sources, binaries and manifest."""
    return cache_root() / BUILD_ID


def bin_dir() -> Path:
    """Directory holding the built binaries."""
    return build_dir() / "bin"


def binary_path(component: str) -> Path:
    """Path of one component's binary (it may not exist yet)."""
    if component not in COMPONENTS:
        raise KeyError(f"unknown control-plane component {component!r}")
    return bin_dir() / component


def find_go() -> str | None:
    """The ``go`` executable: ``$GO``, then PATH, then the usual install location."""
    explicit = os.environ.get("GO")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    found = shutil.which("go")
    if found:
        return found
    fallback = Path("/usr/local/go/bin/go")
    return str(fallback) if fallback.is_file() else None


# ------------------------------------------------------------------------ manifest


def _inputs_digest() -> str:
    """Digest of everything that decides the binaries' content (not the Go version)."""
    h = hashlib.sha256()
    for part in (KUBERNETES_VERSION, STAGING_VERSION, ETCD_VERSION):
        h.update(part.encode() + b"\0")
    for template in sorted(TEMPLATE_DIR.glob("*.in")):
        h.update(template.name.encode() + b"\0" + template.read_bytes())
    h.update(_kube_ldflags().encode())
    return h.hexdigest()


def _object(value: Any) -> dict[str, Any]:
    """A decoded JSON document that must be an object; ValueError otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def read_manifest() -> dict[str, Any]:
    """The manifest of the current build directory, or an empty dict."""
    path = build_dir() / MANIFEST_NAME
    try:
        return _object(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def built_components() -> list[str]:
    """Components whose binary exists and was produced from the current inputs."""
    manifest = read_manifest()
    if manifest.get("inputs") != _inputs_digest():
        return []
    recorded = manifest.get("components", {})
    return [name for name in COMPONENTS if name in recorded and os.access(binary_path(name), os.X_OK)]


def missing_components(components: Sequence[str] = REQUIRED_COMPONENTS) -> list[str]:
    """Requested components that still need building."""
    have = set(built_components())
    return [c for c in components if c not in have]


# ----------------------------------------------------------------- measured runs


@dataclass
class StepResult:
    """Wall time and memory of one measured command."""

    seconds: float
    max_rss_kib: int  # largest single process in the tree (compiler or linker)
    tree_rss_peak_kib: int  # sampled sum over the whole process tree (Linux only)


def _process_tree_rss_kib(root_pid: int) -> int:
    """Sum of resident memory of ``root_pid`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # Fields after the parenthesised command name; ppid is the 2nd, rss the 22nd.
        fields = stat[stat.rfind(b")") + 2 :].split()
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page_kib
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


class _TreeSampler(threading.Thread):
    """Samples the total resident memory of a process tree twice a second."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        if not Path("/proc/self/stat").exists():
            return
        while not self._stop_event.wait(0.5):
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.peak_kib = max(self.peak_kib, _process_tree_rss_kib(self.pid))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def _parse_gnu_time(path: Path) -> int:
    """Maximum resident set size (KiB) from a ``/usr/bin/time -v`` report."""
    match = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", path.read_text())
    return int(match.group(1)) if match else 0


def run_measured(argv: Sequence[str], *, cwd: Path, env: dict[str, str], label: str) -> StepResult:
    """Run ``argv`` (never through a shell), streaming its output, and measure it."""
    gnu_time = Path("/usr/bin/time")
    report = None
    full_argv = list(argv)
    if gnu_time.is_file() and os.access(gnu_time, os.X_OK):
        fd, name = tempfile.mkstemp(prefix="nvcre-time-", suffix=".txt")
        os.close(fd)
        report = Path(name)
        full_argv = [str(gnu_time), "-v", "-o", str(report), *full_argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    proc = subprocess.Popen(full_argv, cwd=cwd, env=env)
    sampler = _TreeSampler(proc.pid)
    sampler.start()
    try:
        rc = proc.wait()
    except BaseException:
        proc.terminate()
        proc.wait()
        raise
    finally:
        sampler.stop()
    seconds = time.monotonic() - started
    try:
        if rc != 0:
            raise BuildError(f"{label} failed (exit {rc}): {' '.join(argv)}\n  in {cwd}; see the Go output above")
        if report is not None:
            max_rss = _parse_gnu_time(report)
        else:
            # ru_maxrss of children is the largest child so far: exact only when
            # this step is the biggest, which the compiler/linker steps are.
            max_rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
        return StepResult(seconds, max_rss, sampler.peak_kib)
    finally:
        if report is not None:
            report.unlink(missing_ok=True)


# ------------------------------------------------------------------- go helpers


def _go_env(go: str) -> dict[str, str]:
    """Environment for the go command: module mode, no cgo, default GOPATH/GOMODCACHE."""
    env = dict(os.environ)
    env["GO111MODULE"] = "on"
    env["CGO_ENABLED"] = "0"
    env["GOTOOLCHAIN"] = "local"
    flags = [f for f in env.get("GOFLAGS", "").split() if not f.startswith("-mod=")]
    env["GOFLAGS"] = " ".join([*flags, "-mod=mod"])
    env["PATH"] = os.pathsep.join([str(Path(go).parent), env.get("PATH", "")])
    return env


def _go_json(go: str, args: Sequence[str], *, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run a go subcommand that prints one JSON object and decode it."""
    proc = subprocess.run([go, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"`go {' '.join(args)}` failed (exit {proc.returncode}):\n{proc.stderr.strip() or proc.stdout.strip()}")
    try:
        return _object(json.loads(proc.stdout))
    except ValueError as exc:
        raise BuildError(f"`go {' '.join(args)}` printed no JSON: {exc}") from exc


def _module_gomod(go: str, module: str, version: str, *, env: dict[str, str]) -> dict[str, Any]:
    """Download ``module@version`` and return its go.mod as ``go mod edit -json`` sees it."""
    with tempfile.TemporaryDirectory(prefix="nvcre-gomod-") as scratch:
        info = _go_json(go, ["mod", "download", "-json", f"{module}@{version}"], cwd=Path(scratch), env=env)
        if info.get("Error") or not info.get("GoMod"):
            raise BuildError(f"cannot download {module}@{version}: {info.get('Error')}")
        return _go_json(go, ["mod", "edit", "-json", info["GoMod"]], cwd=Path(scratch), env=env)


def _go_directive(gomod: dict[str, Any], fallback: str = "1.24") -> str:
    return gomod.get("Go") or fallback


def staging_replacements(kube_gomod: dict[str, Any]) -> list[str]:
    """``k8s.io/*`` modules that k8s.io/kubernetes requires and serves from ./staging.

    Only modules that are also required get a replacement: the others (the
    samples) are never part of the build graph and are not all published.
    """
    required = {r["Path"] for r in kube_gomod.get("Require") or []}
    staged = []
    for rep in kube_gomod.get("Replace") or []:
        old, new = rep["Old"]["Path"], rep["New"]
        if old.startswith("k8s.io/") and not new.get("Version") and new.get("Path", "").startswith("./staging/") and old in required:
            staged.append(old)
    if not staged:
        raise BuildError(
            f"{KUBERNETES_MODULE}@{KUBERNETES_VERSION}'s go.mod lists no ./staging replacements; the wrapper module cannot be generated"
        )
    return sorted(staged)


def etcd_siblings(etcd_gomod: dict[str, Any]) -> list[str]:
    """etcd modules that server/v3 resolves through relative replace directives."""
    siblings = []
    for rep in etcd_gomod.get("Replace") or []:
        old, new = rep["Old"]["Path"], rep["New"]
        path = new.get("Path", "")
        if old.startswith("go.etcd.io/etcd/") and not new.get("Version") and path.startswith("../"):
            siblings.append(old)
    return sorted(siblings)


def _render(template: str, **values: str) -> str:
    return Template((TEMPLATE_DIR / template).read_text()).substitute(values)


def _kube_ldflags() -> str:
    """Version stamps the Kubernetes release build puts into its binaries."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+", KUBERNETES_VERSION)
    if not match:
        raise BuildError(f"unexpected Kubernetes version {KUBERNETES_VERSION!r}")
    stamps = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": match.group(1),
        "gitMinor": match.group(2),
        "gitTreeState": "clean",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for key, value in stamps.items():
            flags.append(f"-X={pkg}.{key}={value}")
    return " ".join(flags)


def write_kube_module(go: str, src: Path, env: dict[str, str]) -> None:
    """Generate the wrapper module for the Kubernetes commands from upstream's go.mod."""
    upstream = _module_gomod(go, KUBERNETES_MODULE, KUBERNETES_VERSION, env=env)
    replaces = "\n".join(f"\t{mod} => {mod} {STAGING_VERSION}" for mod in staging_replacements(upstream))
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.sum").unlink(missing_ok=True)
    (src / "go.mod").write_text(
        _render(
            "kube.go.mod.in",
            go_version=_go_directive(upstream),
            kubernetes_version=KUBERNETES_VERSION,
            staging_replaces=replaces,
        )
    )


def write_etcd_module(go: str, src: Path, env: dict[str, str]) -> None:
    """Generate the wrapper module and main package for etcd."""
    upstream = _module_gomod(go, ETCD_SERVER_MODULE, ETCD_VERSION, env=env)
    siblings = etcd_siblings(upstream)
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.sum").unlink(missing_ok=True)
    (src / "go.mod").write_text(
        _render(
            "etcd.go.mod.in",
            go_version=_go_directive(upstream),
            etcd_version=ETCD_VERSION,
            sibling_requires="\n".join(f"\t{m} {ETCD_VERSION}" for m in siblings),
            sibling_replaces="\n".join(f"\t{m} => {m} {ETCD_VERSION}" for m in siblings),
        )
    )
    main_dir = src / "cmd" / "etcd"
    main_dir.mkdir(parents=True, exist_ok=True)
    (main_dir / "main.go").write_text(_render("etcd_main.go.in"))


# ----------------------------------------------------------------------- build


def _say(message: str) -> None:
    print(f"[controlplane {time.strftime('%H:%M:%S')}] {message}", flush=True)


@contextlib.contextmanager
def _directory_lock(directory: Path, what: str) -> Iterator[None]:
    """Serialise concurrent builds into the same cache ``directory`` (``what`` names it in the wait message)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_NAME, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"another build of {what} is running; waiting for it")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build_lock() -> contextlib.AbstractContextManager[None]:
    return _directory_lock(build_dir(), "this control plane")


def _build_group(go: str, group: str, names: list[str], env: dict[str, str], manifest: dict[str, Any]) -> None:
    """Resolve and compile the components of one wrapper module, recording costs."""
    src = build_dir() / "src" / group
    packages = [COMPONENTS[n].package for n in names]
    _say(f"generating the {group} wrapper module in {src}")
    if group == "kube":
        write_kube_module(go, src, env)
    else:
        write_etcd_module(go, src, env)

    _say(f"resolving and downloading Go modules for {', '.join(names)}")
    resolve = run_measured(
        [go, "list", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", *packages],
        cwd=src,
        env=env,
        label=f"resolving modules for {group}",
    )

    staging = build_dir() / "bin.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    argv = [go, "build", "-trimpath", "-o", str(staging) + os.sep]
    if group == "kube":
        argv.append(f"-ldflags={_kube_ldflags()}")
    argv.extend(packages)
    _say(f"compiling {', '.join(names)} (this is the slow part)")
    compiled = run_measured(argv, cwd=src, env=env, label=f"compiling {group}")

    bin_dir().mkdir(parents=True, exist_ok=True)
    for name in names:
        built = staging / Path(COMPONENTS[name].package).name
        if not built.is_file():
            raise BuildError(f"go build reported success but {built} is missing")
        os.replace(built, binary_path(name))
    shutil.rmtree(staging, ignore_errors=True)

    step = {
        "components": names,
        "resolve_seconds": round(resolve.seconds, 1),
        "compile_seconds": round(compiled.seconds, 1),
        "max_process_rss_mib": round(max(resolve.max_rss_kib, compiled.max_rss_kib) / 1024),
        "peak_tree_rss_mib": round(max(resolve.tree_rss_peak_kib, compiled.tree_rss_peak_kib) / 1024),
    }
    manifest.setdefault("steps", []).append(step)
    for name in names:
        manifest.setdefault("components", {})[name] = {
            "package": COMPONENTS[name].package,
            "bytes": binary_path(name).stat().st_size,
        }
    _say(
        f"built {', '.join(names)}: resolve {step['resolve_seconds']}s, "
        f"compile {step['compile_seconds']}s, largest process {step['max_process_rss_mib']} MiB, "
        f"whole build tree {step['peak_tree_rss_mib']} MiB"
    )


def _go_cache_was_empty(go: str, env: dict[str, str]) -> bool:
    proc = subprocess.run([go, "env", "GOCACHE"], env=env, capture_output=True, text=True, check=False)
    cache = Path(proc.stdout.strip()) if proc.returncode == 0 else None
    return cache is None or not cache.is_dir() or not any(cache.iterdir())


# Long: one build in the order it happens (check, lock, re-check, stamp, compile per group, record), under one lock.
def build(components: Sequence[str] = DEFAULT_COMPONENTS, *, force: bool = False) -> Path:
    """Build the requested components unless they are already built; return bin dir.

    Raises :class:`BuildError` when Go is missing or a step fails.
    """
    unknown = [c for c in components if c not in COMPONENTS]
    if unknown:
        raise BuildError(f"unknown component(s) {', '.join(unknown)}; choose from {', '.join(COMPONENTS)}")
    wanted = list(dict.fromkeys([*REQUIRED_COMPONENTS, *components]))
    if not force and not missing_components(wanted):
        _say(f"{', '.join(wanted)} already built in {bin_dir()}; nothing to do")
        return bin_dir()

    go = find_go()
    if go is None:
        raise BuildError(
            "the Go toolchain was not found (looked at $GO, PATH and /usr/local/go/bin/go); "
            "install Go 1.26+ to build the test control plane"
        )
    env = _go_env(go)
    with _build_lock():
        # Another process may have finished the same build while we waited.
        todo = wanted if force else missing_components(wanted)
        if not todo:
            _say(f"{', '.join(wanted)} already built in {bin_dir()}; nothing to do")
            return bin_dir()
        manifest = read_manifest()
        if manifest.get("inputs") != _inputs_digest():
            manifest = {}
        go_version = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True, text=True, check=False).stdout.strip()
        cold = _go_cache_was_empty(go, env)
        manifest.update(
            {
                "build_id": BUILD_ID,
                "inputs": _inputs_digest(),
                "kubernetes": KUBERNETES_VERSION,
                "staging": STAGING_VERSION,
                "etcd": ETCD_VERSION,
                "go": go_version,
                "cpus": os.cpu_count(),
            }
        )
        _say(f"building {', '.join(todo)} with {go_version} into {bin_dir()} ({'cold' if cold else 'warm'} Go build cache)")
        started = time.monotonic()
        for group in ("etcd", "kube"):
            names = [n for n in todo if COMPONENTS[n].module == group]
            if names:
                _build_group(go, group, names, env, manifest)
                # Persist after each group so a later failure keeps earlier work.
                (build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        total = time.monotonic() - started
        manifest.setdefault("runs", []).append(
            {
                "built": todo,
                "seconds": round(total, 1),
                "cold_go_cache": cold,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        (build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        _say(f"done in {total:.0f}s; binaries in {bin_dir()}")
    return bin_dir()


# --------------------------------------------------------- simulated cluster


JOBSET_VERSION = "v0.11.1"
TRAINER_VERSION = "v2.2.1"
KWOK_VERSION = "v0.8.0"
SIM_BUILD_ID = f"sim-jobset-{JOBSET_VERSION}-trainer-{TRAINER_VERSION}-kwok-{KWOK_VERSION}"
SIM_LDFLAGS = "-s -w"


@dataclass(frozen=True)
class SimComponent:
    """A third-party controller of the simulated cluster, built from its own module."""

    name: str
    module: str
    version: str
    package: str  # main package, relative to the module root
    binary: str
    crd_dir: str  # CRD bases inside the module
    stage_files: tuple[str, ...] = ()  # kwok Stage objects inside the module


SIM_COMPONENTS: dict[str, SimComponent] = {
    c.name: c
    for c in (
        SimComponent(
            "jobset",
            "sigs.k8s.io/jobset",
            JOBSET_VERSION,
            ".",
            "jobset-controller",
            "config/components/crd/bases",
        ),
        SimComponent(
            "trainer",
            "github.com/kubeflow/trainer/v2",
            TRAINER_VERSION,
            "./cmd/trainer-controller-manager",
            "trainer-controller-manager",
            "manifests/base/crds",
        ),
        SimComponent(
            "kwok",
            "sigs.k8s.io/kwok",
            KWOK_VERSION,
            "./cmd/kwok",
            "kwok",
            "kustomize/crd/bases",
            (
                "kustomize/stage/node/fast/node-initialize.yaml",
                "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                "kustomize/stage/pod/fast/pod-ready.yaml",
                "kustomize/stage/pod/fast/pod-delete.yaml",
            ),
        ),
    )
}


def sim_build_dir() -> Path:
    """Directory holding the simulated cluster's controllers, CRDs and manifest."""
    return cache_root() / SIM_BUILD_ID


def sim_binary_path(component: str) -> Path:
    """Path of one simulated-cluster controller binary (it may not exist yet)."""
    if component not in SIM_COMPONENTS:
        raise KeyError(f"unknown simulated-cluster component {component!r}")
    return sim_build_dir() / "bin" / SIM_COMPONENTS[component].binary


def sim_crd_dir(component: str | None = None) -> Path:
    """The copied CRDs: all of them, or one component's."""
    root = sim_build_dir() / "crds"
    return root if component is None else root / component


def sim_stage_dir() -> Path:
    """kwok's upstream Stage objects, copied out of its module."""
    return sim_build_dir() / "stages"


def _sim_inputs_digest() -> str:
    h = hashlib.sha256()
    for c in SIM_COMPONENTS.values():
        for part in (c.name, c.module, c.version, c.package, c.crd_dir, *c.stage_files):
            h.update(part.encode() + b"\0")
    h.update(SIM_LDFLAGS.encode())
    return h.hexdigest()


def read_sim_manifest() -> dict[str, Any]:
    """The manifest of the simulated cluster's build directory, or an empty dict."""
    try:
        return _object(json.loads((sim_build_dir() / MANIFEST_NAME).read_text()))
    except (OSError, ValueError):
        return {}


def missing_sim_components(components: Sequence[str] = tuple(SIM_COMPONENTS)) -> list[str]:
    """Requested simulated-cluster components not built from the current inputs."""
    manifest = read_sim_manifest()
    recorded = manifest.get("components", {}) if manifest.get("inputs") == _sim_inputs_digest() else {}
    missing = []
    for name in components:
        have = name in recorded and os.access(sim_binary_path(name), os.X_OK) and any(sim_crd_dir(name).glob("*.yaml"))
        if not have:
            missing.append(name)
    return missing


def _copy_module(source: Path, target: Path) -> None:
    """A writable copy of a read-only module directory from the module cache."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(target):
        for name in (*dirnames, *filenames):
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
    Path(target).chmod(Path(target).stat().st_mode | 0o200)


def _copy_yaml(source: Path, target: Path) -> list[str]:
    """Copy the CRD YAML files of ``source`` (kustomization files excluded) into ``target``."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    copied = []
    for path in sorted(source.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        shutil.copyfile(path, target / path.name)
        copied.append(path.name)
    if not copied:
        raise BuildError(f"no CRD files in {source}")
    return copied


def _copy_sim_data(component: SimComponent, module_dir: Path) -> tuple[list[str], list[str]]:
    """Copy a component's CRDs (and kwok's Stage objects) out of its module directory."""
    crds = _copy_yaml(module_dir / component.crd_dir, sim_crd_dir(component.name))
    stages = []
    if component.stage_files:
        sim_stage_dir().mkdir(parents=True, exist_ok=True)
        for rel in component.stage_files:
            source = module_dir / rel
            if not source.is_file():
                raise BuildError(f"{component.module}@{component.version} has no {rel}")
            shutil.copyfile(source, sim_stage_dir() / source.name)
            stages.append(source.name)
    return crds, stages


def sim_data_missing(components: Sequence[str] = tuple(SIM_COMPONENTS)) -> list[str]:
    """Components whose CRDs (or, for kwok, Stage objects) are not in the cache yet."""
    missing = []
    for name in components:
        component = SIM_COMPONENTS[name]
        have = any(sim_crd_dir(name).glob("*.yaml")) and all((sim_stage_dir() / Path(rel).name).is_file() for rel in component.stage_files)
        if not have:
            missing.append(name)
    return missing


def fetch_sim_data(components: Sequence[str] = tuple(SIM_COMPONENTS)) -> Path:
    """Download the modules (no compiling) and copy their CRDs and stages; return the CRD dir.

    This is what a control plane without the simulated cluster needs: the JobSet
    and Trainer CRDs, from the same pinned modules the controllers are built from.
    """
    todo = sim_data_missing(components)
    if not todo:
        return sim_crd_dir()
    go = find_go()
    if go is None:
        raise BuildError(
            "the Go toolchain was not found (looked at $GO, PATH and /usr/local/go/bin/go); "
            "it is needed to fetch the JobSet and Trainer CRDs from their Go modules"
        )
    env = _go_env(go)
    with _sim_build_lock():
        for name in sim_data_missing(todo):
            component = SIM_COMPONENTS[name]
            _say(f"fetching the CRDs of {component.module}@{component.version}")
            with tempfile.TemporaryDirectory(prefix="nvcre-sim-") as scratch:
                info = _go_json(
                    go,
                    ["mod", "download", "-json", f"{component.module}@{component.version}"],
                    cwd=Path(scratch),
                    env=env,
                )
            if info.get("Error") or not info.get("Dir"):
                raise BuildError(f"cannot download {component.module}@{component.version}: {info.get('Error')}")
            _copy_sim_data(component, Path(info["Dir"]))
    return sim_crd_dir()


# Long: download, copy, resolve, compile and record one controller in order; each step needs the last one's paths.
def _build_sim_component(go: str, component: SimComponent, env: dict[str, str], manifest: dict[str, Any]) -> None:
    """Download, copy and compile one controller; copy its CRDs (and stages)."""
    with tempfile.TemporaryDirectory(prefix="nvcre-sim-") as scratch:
        started = time.monotonic()
        _say(f"downloading {component.module}@{component.version}")
        info = _go_json(
            go,
            ["mod", "download", "-json", f"{component.module}@{component.version}"],
            cwd=Path(scratch),
            env=env,
        )
    if info.get("Error") or not info.get("Dir"):
        raise BuildError(f"cannot download {component.module}@{component.version}: {info.get('Error')}")
    module_dir = Path(info["Dir"])
    src = sim_build_dir() / "src" / component.name
    _copy_module(module_dir, src)
    download_seconds = time.monotonic() - started

    _say(f"resolving the Go modules {component.name} needs")
    resolve = run_measured(
        [go, "list", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", component.package],
        cwd=src,
        env=env,
        label=f"resolving modules for {component.name}",
    )
    staging = sim_build_dir() / "bin.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    out = staging / component.binary
    _say(f"compiling {component.name} ({component.package} of {component.module}@{component.version})")
    compiled = run_measured(
        [go, "build", "-trimpath", f"-ldflags={SIM_LDFLAGS}", "-o", str(out), component.package],
        cwd=src,
        env=env,
        label=f"compiling {component.name}",
    )
    if not out.is_file():
        raise BuildError(f"go build reported success but {out} is missing")
    (sim_build_dir() / "bin").mkdir(parents=True, exist_ok=True)
    os.replace(out, sim_binary_path(component.name))
    shutil.rmtree(staging, ignore_errors=True)

    crds, stages = _copy_sim_data(component, src)
    # The copied sources are only needed while compiling.
    shutil.rmtree(src, ignore_errors=True)

    step = {
        "component": component.name,
        "module": f"{component.module}@{component.version}",
        "download_seconds": round(download_seconds + resolve.seconds, 1),
        "compile_seconds": round(compiled.seconds, 1),
        "max_process_rss_mib": round(max(resolve.max_rss_kib, compiled.max_rss_kib) / 1024),
        "peak_tree_rss_mib": round(max(resolve.tree_rss_peak_kib, compiled.tree_rss_peak_kib) / 1024),
    }
    manifest.setdefault("steps", []).append(step)
    manifest.setdefault("components", {})[component.name] = {
        "module": component.module,
        "version": component.version,
        "package": component.package,
        "bytes": sim_binary_path(component.name).stat().st_size,
        "crds": crds,
        "stages": stages,
    }
    _say(
        f"built {component.name}: download {step['download_seconds']}s, "
        f"compile {step['compile_seconds']}s, largest process {step['max_process_rss_mib']} MiB, "
        f"whole build tree {step['peak_tree_rss_mib']} MiB"
    )


def _sim_build_lock() -> contextlib.AbstractContextManager[None]:
    return _directory_lock(sim_build_dir(), "the simulated cluster")


def build_sim(components: Sequence[str] = tuple(SIM_COMPONENTS), *, force: bool = False) -> Path:
    """Build the simulated cluster's controllers one at a time; return their bin dir.

    Raises :class:`BuildError` when Go is missing or a step fails.
    """
    unknown = [c for c in components if c not in SIM_COMPONENTS]
    if unknown:
        raise BuildError(f"unknown simulated-cluster component(s) {', '.join(unknown)}; choose from {', '.join(SIM_COMPONENTS)}")
    wanted = list(dict.fromkeys(components))
    if not force and not missing_sim_components(wanted):
        _say(f"{', '.join(wanted)} already built in {sim_build_dir()}; nothing to do")
        return sim_build_dir() / "bin"
    go = find_go()
    if go is None:
        raise BuildError(
            "the Go toolchain was not found (looked at $GO, PATH and /usr/local/go/bin/go); install Go 1.26+ to build the simulated cluster"
        )
    env = _go_env(go)
    with _sim_build_lock():
        todo = wanted if force else missing_sim_components(wanted)
        if not todo:
            _say(f"{', '.join(wanted)} already built in {sim_build_dir()}; nothing to do")
            return sim_build_dir() / "bin"
        manifest = read_sim_manifest()
        if manifest.get("inputs") != _sim_inputs_digest():
            manifest = {}
        go_version = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True, text=True, check=False).stdout.strip()
        cold = _go_cache_was_empty(go, env)
        manifest.update(
            {
                "build_id": SIM_BUILD_ID,
                "inputs": _sim_inputs_digest(),
                "versions": {c.name: c.version for c in SIM_COMPONENTS.values()},
                "go": go_version,
                "cpus": os.cpu_count(),
            }
        )
        _say(f"building {', '.join(todo)} with {go_version} into {sim_build_dir()}")
        started = time.monotonic()
        for name in todo:  # one at a time: each compile alone fills the machine
            _build_sim_component(go, SIM_COMPONENTS[name], env, manifest)
            (sim_build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        total = time.monotonic() - started
        manifest.setdefault("runs", []).append(
            {
                "built": todo,
                "seconds": round(total, 1),
                "cold_go_cache": cold,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        (sim_build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        _say(f"done in {total:.0f}s; binaries in {sim_build_dir() / 'bin'}")
    return sim_build_dir() / "bin"


# ------------------------------------------------------------------------ tools


@dataclass(frozen=True)
class GoTool:
    """A command-line tool the tests run, built from the main packages of one Go module."""

    name: str
    module: str
    version: str
    binaries: tuple[tuple[str, str], ...]  # (binary name, main package relative to the module root)
    ldflags: str = "-s -w"
    purpose: str = ""
    # Files written into the copied module before compiling (path relative to its root, template name):
    # a main package of our own that links only the parts of the module the tests need.
    overlay: tuple[tuple[str, str], ...] = ()

    @property
    def build_id(self) -> str:
        return f"{self.name}-{self.version}"


HELM_VERSION = "v4.3.2"
HELM_MODULE = "helm.sh/helm/v4"
PROMETHEUS_VERSION = "v0.316.0"
PROMETHEUS_MODULE = "github.com/prometheus/prometheus"
COSIGN_VERSION = "v3.1.3"
COSIGN_MODULE = "github.com/sigstore/cosign/v3"
CNI_PLUGINS_VERSION = "v1.10.0"
CNI_PLUGINS_MODULE = "github.com/containernetworking/plugins"
COREDNS_VERSION = "v1.14.7"
COREDNS_MODULE = "github.com/coredns/coredns"

TOOLS: dict[str, GoTool] = {
    t.name: t
    for t in (
        GoTool(
            "helm",
            HELM_MODULE,
            HELM_VERSION,
            (("helm", "./cmd/helm"),),
            f"-s -w -X={HELM_MODULE}/internal/version.version={HELM_VERSION} -X={HELM_MODULE}/internal/version.gitTreeState=clean",
            "the Helm chart tests (helm lint and helm template)",
        ),
        GoTool(
            "prometheus",
            PROMETHEUS_MODULE,
            PROMETHEUS_VERSION,
            (("prometheus", "./cmd/prometheus"), ("promtool", "./cmd/promtool")),
            f"-s -w -X=github.com/prometheus/common/version.Version={PROMETHEUS_VERSION.lstrip('v')}",
            "the alert-rule tests (promtool) and the scrape test against a real Prometheus",
        ),
        GoTool(
            "cosign",
            COSIGN_MODULE,
            COSIGN_VERSION,
            (("cosign", "./cmd/cosign"),),
            f"-s -w -X=sigs.k8s.io/release-utils/version.gitVersion={COSIGN_VERSION}",
            "verifying the evidence bundles' signed attestations with a second implementation",
        ),
        GoTool(
            "cni-plugins",
            CNI_PLUGINS_MODULE,
            CNI_PLUGINS_VERSION,
            (("bridge", "./plugins/main/bridge"), ("host-local", "./plugins/ipam/host-local"), ("loopback", "./plugins/main/loopback")),
            f"-s -w -X=github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion={CNI_PLUGINS_VERSION}",
            "the pod network of the real worker nodes (containerd runs them)",
        ),
        GoTool(
            "coredns",
            COREDNS_MODULE,
            COREDNS_VERSION,
            (("coredns", "./cmd/nvcre-coredns"),),
            f"-s -w -X={COREDNS_MODULE}/coremain.GitCommit={COREDNS_VERSION}",
            "the cluster DNS of the real worker nodes (headless-service names)",
            (("cmd/nvcre-coredns/main.go", "real/coredns_main.go.in"),),
        ),
    )
}


def _tool(name: str) -> GoTool:
    if name not in TOOLS:
        raise KeyError(f"unknown tool {name!r} (known: {', '.join(TOOLS)})")
    return TOOLS[name]


def tool_build_dir(name: str) -> Path:
    """Directory holding one tool's binaries and its manifest."""
    return cache_root() / _tool(name).build_id


def tool_binary_path(name: str, binary: str | None = None) -> Path:
    """Path of one binary of a tool (its first one by default); it may not exist yet."""
    tool = _tool(name)
    binary = binary or tool.binaries[0][0]
    if binary not in dict(tool.binaries):
        raise KeyError(f"tool {name!r} has no binary {binary!r}")
    return tool_build_dir(name) / "bin" / binary


def _tool_inputs_digest(tool: GoTool) -> str:
    h = hashlib.sha256()
    for part in (tool.module, tool.version, tool.ldflags, *(f"{b}={p}" for b, p in tool.binaries)):
        h.update(part.encode() + b"\0")
    for target, template in tool.overlay:
        h.update(target.encode() + b"\0" + (TEMPLATE_DIR / template).read_bytes() + b"\0")
    return h.hexdigest()


def read_tool_manifest(name: str) -> dict[str, Any]:
    """The manifest of a tool's build directory, or an empty dict."""
    try:
        return _object(json.loads((tool_build_dir(name) / MANIFEST_NAME).read_text()))
    except (OSError, ValueError):
        return {}


def tool_missing(name: str) -> bool:
    """Whether a tool still needs building from the current inputs."""
    tool = _tool(name)
    if read_tool_manifest(name).get("inputs") != _tool_inputs_digest(tool):
        return True
    return not all(os.access(tool_binary_path(name, b), os.X_OK) for b, _ in tool.binaries)


# Long: download, overlay, resolve, compile and record one tool in order, under its directory lock.
def build_tool(name: str, *, force: bool = False) -> Path:
    """Build a tool's binaries from its module unless they are built; return the first one's path.

    The module is fetched with ``go mod download -json``, copied into a writable tree and compiled
    there with its own go.mod, like the simulated cluster's controllers. Raises
    :class:`BuildError` when Go is missing or a step fails.
    """
    tool = _tool(name)
    label = f"{tool.name} {tool.version}"
    if not force and not tool_missing(name):
        _say(f"{label} already built at {tool_binary_path(name).parent}; nothing to do")
        return tool_binary_path(name)
    go = find_go()
    if go is None:
        raise BuildError(
            "the Go toolchain was not found (looked at $GO, PATH and /usr/local/go/bin/go); "
            f"install Go 1.26+ to build {label} for {tool.purpose or 'the tests'}"
        )
    # A module may ship a go.work for its own development (prometheus does); build from its go.mod.
    env = {**_go_env(go), "GOWORK": "off"}
    with _directory_lock(tool_build_dir(name), tool.name):
        if not force and not tool_missing(name):
            _say(f"{label} already built at {tool_binary_path(name).parent}; nothing to do")
            return tool_binary_path(name)
        started = time.monotonic()
        _say(f"downloading {tool.module}@{tool.version}")
        with tempfile.TemporaryDirectory(prefix=f"nvcre-{tool.name}-") as scratch:
            info = _go_json(go, ["mod", "download", "-json", f"{tool.module}@{tool.version}"], cwd=Path(scratch), env=env)
        if info.get("Error") or not info.get("Dir"):
            raise BuildError(f"cannot download {tool.module}@{tool.version}: {info.get('Error')}")
        src = tool_build_dir(name) / "src"
        _copy_module(Path(info["Dir"]), src)
        for target, template in tool.overlay:
            (src / target).parent.mkdir(parents=True, exist_ok=True)
            (src / target).write_text(_render(template))
        download_seconds = time.monotonic() - started
        packages = [package for _, package in tool.binaries]
        _say(f"resolving the Go modules {tool.name} needs")
        resolve = run_measured(
            [go, "list", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", *packages],
            cwd=src,
            env=env,
            label=f"resolving modules for {tool.name}",
        )
        staging = tool_build_dir(name) / "bin.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        steps = [resolve]
        for binary, package in tool.binaries:
            _say(f"compiling {binary} ({package} of {tool.module}@{tool.version})")
            steps.append(
                run_measured(
                    [go, "build", "-trimpath", f"-ldflags={tool.ldflags}", "-o", str(staging / binary), package],
                    cwd=src,
                    env=env,
                    label=f"compiling {binary}",
                )
            )
            if not (staging / binary).is_file():
                raise BuildError(f"go build reported success but {staging / binary} is missing")
        bin_target = tool_build_dir(name) / "bin"
        bin_target.mkdir(parents=True, exist_ok=True)
        for binary, _ in tool.binaries:
            os.replace(staging / binary, bin_target / binary)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)
        go_version = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True, text=True, check=False).stdout.strip()
        manifest = {
            "build_id": tool.build_id,
            "inputs": _tool_inputs_digest(tool),
            "module": f"{tool.module}@{tool.version}",
            "go": go_version,
            "cpus": os.cpu_count(),
            "bytes": {b: (bin_target / b).stat().st_size for b, _ in tool.binaries},
            "download_seconds": round(download_seconds + resolve.seconds, 1),
            "compile_seconds": round(sum(step.seconds for step in steps[1:]), 1),
            "max_process_rss_mib": round(max(step.max_rss_kib for step in steps) / 1024),
            "peak_tree_rss_mib": round(max(step.tree_rss_peak_kib for step in steps) / 1024),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (tool_build_dir(name) / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        _say(
            f"built {label}: download {manifest['download_seconds']}s, "
            f"compile {manifest['compile_seconds']}s, largest process {manifest['max_process_rss_mib']} MiB"
        )
    return tool_binary_path(name)


# ------------------------------------------------------------------- real nodes

PAUSE_TEMPLATE = "real/pause.c"
PAUSE_CFLAGS = ("-static", "-O2", "-s", "-Wall", "-Wextra", "-Werror")
REAL_TOOLS = ("cni-plugins", "coredns")


def find_cc() -> str | None:
    """The C compiler: ``$CC``, else ``cc`` or ``gcc`` on PATH."""
    explicit = os.environ.get("CC")
    if explicit:
        return shutil.which(explicit)
    return shutil.which("cc") or shutil.which("gcc")


def _cc_version(cc: str) -> str:
    proc = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.splitlines()[0].strip() if proc.returncode == 0 and proc.stdout else "unknown"


def _pause_inputs_digest() -> str:
    h = hashlib.sha256((TEMPLATE_DIR / PAUSE_TEMPLATE).read_bytes() + b"\0")
    h.update(" ".join(PAUSE_CFLAGS).encode() + b"\0")
    return h.hexdigest()


def pause_build_dir() -> Path:
    """Directory of the sandbox program, named by the digest of its source and flags."""
    return cache_root() / f"pause-{_pause_inputs_digest()[:12]}"


def pause_binary_path() -> Path:
    return pause_build_dir() / "bin" / "pause"


def pause_missing() -> bool:
    return not os.access(pause_binary_path(), os.X_OK)


def build_pause(*, force: bool = False) -> Path:
    """Compile the pods' sandbox program (templates/pause.c) as a static binary; return its path."""
    if not force and not pause_missing():
        _say(f"pause already built at {pause_binary_path()}; nothing to do")
        return pause_binary_path()
    cc = find_cc()
    if cc is None:
        raise BuildError("no C compiler found ($CC, cc or gcc) to build the pods' sandbox program (apt-get install gcc libc6-dev)")
    with _directory_lock(pause_build_dir(), "the pause program"):
        target = pause_binary_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name("pause.tmp")
        started = time.monotonic()
        proc = subprocess.run(
            [cc, *PAUSE_CFLAGS, "-o", str(staging), str(TEMPLATE_DIR / PAUSE_TEMPLATE)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise BuildError(f"compiling {PAUSE_TEMPLATE} with {cc} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        os.replace(staging, target)
        manifest = {
            "inputs": _pause_inputs_digest(),
            "cc": _cc_version(cc),
            "cflags": list(PAUSE_CFLAGS),
            "bytes": target.stat().st_size,
            "compile_seconds": round(time.monotonic() - started, 2),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (pause_build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        _say(f"built pause ({manifest['bytes']} bytes) in {manifest['compile_seconds']}s")
    return target


DEVICE_PLUGIN_TEMPLATES = ("real/deviceplugin.go.mod.in", "real/deviceplugin.go.in")


def _device_plugin_grpc_version(go: str, env: dict[str, str]) -> str:
    """The grpc version k8s.io/kubelet (at the staging release) requires."""
    gomod = _module_gomod(go, "k8s.io/kubelet", STAGING_VERSION, env=env)
    for require in gomod.get("Require") or []:
        if require.get("Path") == "google.golang.org/grpc":
            return str(require["Version"])
    raise BuildError(f"k8s.io/kubelet@{STAGING_VERSION} requires no google.golang.org/grpc")


def _device_plugin_digest() -> str:
    h = hashlib.sha256(STAGING_VERSION.encode() + b"\0")
    for template in DEVICE_PLUGIN_TEMPLATES:
        h.update((TEMPLATE_DIR / template).read_bytes() + b"\0")
    return h.hexdigest()


def device_plugin_build_dir() -> Path:
    return cache_root() / f"device-plugin-{STAGING_VERSION}-{_device_plugin_digest()[:12]}"


def device_plugin_binary_path() -> Path:
    return device_plugin_build_dir() / "bin" / "nvcre-device-plugin"


def device_plugin_missing() -> bool:
    return not os.access(device_plugin_binary_path(), os.X_OK)


def build_device_plugin(*, force: bool = False) -> Path:
    """Compile the real nodes' GPU device plugin (templates/real/deviceplugin.go.in) against the
    device-plugin API of k8s.io/kubelet at the staging release; return its path."""
    if not force and not device_plugin_missing():
        _say(f"the device plugin is already built at {device_plugin_binary_path()}; nothing to do")
        return device_plugin_binary_path()
    go = find_go()
    if go is None:
        raise BuildError(
            "the Go toolchain was not found (looked at $GO, PATH and /usr/local/go/bin/go); install Go 1.26+ to build the device plugin"
        )
    env = _go_env(go)
    with _directory_lock(device_plugin_build_dir(), "the device plugin"):
        src = device_plugin_build_dir() / "src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        (src / "go.mod").write_text(
            _render(
                DEVICE_PLUGIN_TEMPLATES[0],
                go_version="1.25",
                grpc_version=_device_plugin_grpc_version(go, env),
                staging_version=STAGING_VERSION,
            )
        )
        (src / "main.go").write_text(_render(DEVICE_PLUGIN_TEMPLATES[1]))
        staging = device_plugin_build_dir() / "bin.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        _say("compiling the device plugin (k8s.io/kubelet device-plugin API)")
        step = run_measured(
            [go, "build", "-trimpath", "-ldflags=-s -w", "-o", str(staging / "nvcre-device-plugin"), "."],
            cwd=src,
            env=env,
            label="compiling the device plugin",
        )
        device_plugin_binary_path().parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "nvcre-device-plugin", device_plugin_binary_path())
        shutil.rmtree(staging, ignore_errors=True)
        manifest = {
            "inputs": _device_plugin_digest(),
            "kubelet_api": f"k8s.io/kubelet@{STAGING_VERSION}",
            "compile_seconds": round(step.seconds, 1),
            "max_process_rss_mib": round(step.max_rss_kib / 1024),
            "bytes": device_plugin_binary_path().stat().st_size,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (device_plugin_build_dir() / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        _say(f"built the device plugin in {manifest['compile_seconds']}s")
    return device_plugin_binary_path()


def real_missing() -> list[str]:
    """What the real worker nodes need that is not built yet (component, tool or ``pause``)."""
    missing: list[str] = list(missing_components(list(NODE_COMPONENTS)))
    missing += [name for name in REAL_TOOLS if tool_missing(name)]
    if pause_missing():
        missing.append("pause")
    if device_plugin_missing():
        missing.append("device-plugin")
    return missing


def build_real(*, force: bool = False) -> None:
    """Build the real worker nodes' binaries, one at a time: kubelet and kube-proxy (same module and
    stamps as the control plane), the CNI plugins, CoreDNS, the sandbox program and the GPU device plugin."""
    build([*DEFAULT_COMPONENTS, *NODE_COMPONENTS], force=force)
    for name in REAL_TOOLS:
        build_tool(name, force=force)
    build_pause(force=force)
    build_device_plugin(force=force)


# helm keeps its own names: the chart tests and older callers use them.
HELM_BUILD_ID = TOOLS["helm"].build_id


def helm_build_dir() -> Path:
    return tool_build_dir("helm")


def helm_binary_path() -> Path:
    return tool_binary_path("helm")


def read_helm_manifest() -> dict[str, Any]:
    return read_tool_manifest("helm")


def helm_missing() -> bool:
    return tool_missing("helm")


def build_helm(*, force: bool = False) -> Path:
    return build_tool("helm", force=force)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"received signal {signum}")


# Long: the command line is data: one argument per line, then one branch per mode.
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            f"Build etcd {ETCD_VERSION} and Kubernetes {KUBERNETES_VERSION} control-plane "
            "binaries from Go modules for the nvcre integration tests."
        )
    )
    parser.add_argument(
        "--components",
        default=",".join(DEFAULT_COMPONENTS),
        help="comma-separated subset of: " + ", ".join(COMPONENTS) + " (etcd and kube-apiserver are always built)",
    )
    parser.add_argument(
        "--minimal",
        action="store_true",
        help="build only etcd and kube-apiserver (no scheduler/controller-manager)",
    )
    parser.add_argument(
        "--sim",
        action="store_true",
        help="also build the simulated GPU cluster: " + ", ".join(f"{c.name} {c.version}" for c in SIM_COMPONENTS.values()),
    )
    parser.add_argument(
        "--sim-only",
        action="store_true",
        help="build only the simulated cluster's controllers (not the control plane)",
    )
    parser.add_argument(
        "--helm",
        action="store_true",
        help=f"also build helm {HELM_VERSION} (from {HELM_MODULE}) for the Helm chart tests",
    )
    parser.add_argument(
        "--helm-only",
        action="store_true",
        help="build only helm (not the control plane)",
    )
    parser.add_argument(
        "--tools",
        default="",
        help="comma-separated tools to build too: "
        + "; ".join(f"{t.name} {t.version} ({', '.join(b for b, _ in t.binaries)}) for {t.purpose}" for t in TOOLS.values()),
    )
    parser.add_argument("--tools-only", action="store_true", help="build only the --tools (not the control plane)")
    parser.add_argument(
        "--real",
        action="store_true",
        help="also build what real worker nodes need: kubelet and kube-proxy "
        f"{KUBERNETES_VERSION}, the CNI plugins {CNI_PLUGINS_VERSION}, CoreDNS {COREDNS_VERSION} and the pods' sandbox program",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--print-bin-dir", action="store_true", help="print the binary directory and exit")
    parser.add_argument(
        "--optional",
        action="store_true",
        help="without a Go toolchain, say so and exit 0 (the integration tests then skip); "
        "ignored when CI=true, where a missing toolchain is an error",
    )
    args = parser.parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.helm or args.helm_only:
        tools = ["helm", *[t for t in tools if t != "helm"]]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}")
    if args.print_bin_dir:
        if args.tools_only and tools:
            print(tool_build_dir(tools[0]) / "bin")
        elif args.helm_only:
            print(helm_binary_path().parent)
        else:
            print(sim_build_dir() / "bin" if args.sim_only else bin_dir())
        return 0
    if args.optional and find_go() is None and os.environ.get("CI", "").lower() != "true":
        print("Go not found: skipping the control-plane build; the integration tests will skip", file=sys.stderr)
        return 0
    # A SIGTERM unwinds like Ctrl-C, so the running go command is stopped too.
    signal.signal(signal.SIGTERM, _interrupt)
    components = list(REQUIRED_COMPONENTS) if args.minimal else [c.strip() for c in args.components.split(",") if c.strip()]
    try:
        if not (args.sim_only or args.helm_only or args.tools_only):
            build(components, force=args.force)
        if args.sim or args.sim_only:
            build_sim(force=args.force)
        for name in tools:
            build_tool(name, force=args.force)
        if args.real:
            build_real(force=args.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
