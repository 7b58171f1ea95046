"""``helm template`` for ``setup init``: the charts named by ``--chart-ref`` and ``--trainer-chart-ref``.

nvcrectl never lets helm write to the cluster: it renders a chart here and applies the objects
itself, so it can mark what it installed and check ownership first. helm's registry logins and
caches live in a temporary directory for the one command, so a ``--image-pull-secret`` login
does not outlast it. The binary is ``NVCRE_HELM`` when set, else ``helm`` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["GHCR", "HELM_TIMEOUT", "HelmError", "find_helm", "helm_template", "is_remote"]

GHCR = "ghcr.io"
HELM_TIMEOUT = 300.0


class HelmError(Exception):
    """helm is missing, failed or took too long; nothing was applied."""


def find_helm() -> str:
    named = os.environ.get("NVCRE_HELM")
    if named is not None:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise HelmError(f"NVCRE_HELM={named!r} is not an executable file")
        return named
    found = shutil.which("helm")
    if not found:
        raise HelmError("helm not found: install helm (or set NVCRE_HELM) and try again")
    return found


def is_remote(chart: str) -> bool:
    """A chart reference helm pulls (an OCI or repository reference), not a directory or archive here."""
    return "://" in chart or not Path(chart).exists()


def _run(helm: str, args: Sequence[str], env: Mapping[str, str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run([helm, *args], input=stdin, capture_output=True, text=True, env=dict(env), timeout=HELM_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise HelmError(f"helm {args[0]} did not finish in {HELM_TIMEOUT:.0f}s") from None
    if done.returncode:
        raise HelmError(f"helm {args[0]} failed: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def helm_template(
    chart: str | Path,
    release: str,
    namespace: str,
    *,
    version: str | None = None,
    values: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
    token: str | None = None,
) -> list[dict[str, Any]]:
    """The objects of ``chart`` (CRDs included) for ``release`` in ``namespace``.

    ``version`` is passed only for a chart helm pulls; ``token`` logs in to ghcr.io first when the
    chart is there (a chart on another registry needs ``helm registry login`` beforehand)."""
    import yaml

    from nvcre.compiler.yamlio import load_documents

    helm = find_helm()
    ref = str(chart)
    with tempfile.TemporaryDirectory(prefix="nvcre-helm-") as tmp:
        env = {**os.environ, "HELM_CONFIG_HOME": tmp, "HELM_CACHE_HOME": tmp, "HELM_DATA_HOME": tmp}
        if token and ref.startswith(f"oci://{GHCR}/"):
            _run(helm, ["registry", "login", GHCR, "--username", "token", "--password-stdin"], env, stdin=token)
        args = ["template", release, ref, "--namespace", namespace, "--include-crds"]
        if version and is_remote(ref):
            args += ["--version", version]
        if values:
            path = Path(tmp) / "values.yaml"
            path.write_text(yaml.safe_dump(dict(values)))
            args += ["--values", str(path)]
        for expression in sets:
            args += ["--set", expression]
        text = _run(helm, args, env)
    return [dict(doc) for doc in load_documents(text, f"helm template {ref}") if isinstance(doc, dict) and doc.get("kind")]
