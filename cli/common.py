"""What several command groups share: option types, input loading and the cluster client.

Command modules take what they share from here rather than from each other, so no import circle
forms among them (the layer test checks it). Everything heavy (the compiler, the
Kubernetes client) is imported inside the functions, so loading this module costs nothing.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import EXIT_FAILURE
from .render_flags import load_facts, load_single

__all__ = [
    "ContextOption",
    "DryRunContextOption",
    "DryRunKubeconfigOption",
    "DryRunOption",
    "EnvPrefixOption",
    "ExplainOption",
    "FactsOption",
    "Format",
    "GPUArchOption",
    "KubeconfigOption",
    "ListFormat",
    "NamespaceOption",
    "OutputDirOption",
    "PlatformOption",
    "kube_client",
    "load_facts",
    "load_single",
]


class Format(str, Enum):
    """How rendered objects are printed."""

    yaml = "yaml"
    json = "json"


class ListFormat(str, Enum):
    """How a listing is printed: NVCRE's ``table``, ``yaml`` and ``json`` (``text`` is our older name of
    ``table``; ``wide`` is a table with more columns)."""

    table = "table"
    text = "text"
    wide = "wide"
    yaml = "yaml"
    json = "json"


# ------------------------------------------------------------------ render options

PlatformOption = Annotated[str | None, typer.Option("--platform", help="Platform to render for (overrides detection).")]
GPUArchOption = Annotated[str | None, typer.Option("--gpu-arch", help="GPU architecture: gb300, NVIDIA-GB300 or 'NVIDIA GB300'.")]
FactsOption = Annotated[Path | None, typer.Option("--facts", help="Cluster facts: Nodes, ResourceSlices, Pods as YAML.")]
ExplainOption = Annotated[bool, typer.Option("--explain", help="Print every render decision and where it came from to stderr.")]
OutputDirOption = Annotated[
    Path | None,
    typer.Option(
        "--output-dir",
        help="Write one file per object plus a kustomization.yaml into this directory instead of stdout.",
    ),
]
EnvPrefixOption = Annotated[
    str | None,
    typer.Option(
        "--env-prefix",
        help="Read unset --platform/--gpu-arch/--facts from <PREFIX>NVCRE_PLATFORM, <PREFIX>NVCRE_GPU_ARCH, "
        "<PREFIX>NVCRE_FACTS (e.g. ARGOCD_ENV_ in an Argo CD plugin).",
    ),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Detect platform, GPU, NICs and TCPXO from the live cluster (no --gpu-arch).")
]
DryRunKubeconfigOption = Annotated[str | None, typer.Option("--kubeconfig", help="With --dry-run: the kubeconfig to use.")]
DryRunContextOption = Annotated[str | None, typer.Option("--context", help="With --dry-run: the kubeconfig context.")]

# ------------------------------------------------------------------ cluster options

KubeconfigOption = Annotated[Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: the usual loading rules).")]
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n")]


# ------------------------------------------------------------------ the cluster client (loading lives in render_flags)


def kube_client(kubeconfig: Path | str | None, context: str | None) -> Any:
    """A client for the cluster the kubeconfig names; exit 1 with a clear line when there is none."""
    from nvcre.runtime.kube.client import ApiServerClient

    try:
        return ApiServerClient.from_kubeconfig(str(kubeconfig) if kubeconfig else None, context=context)
    except Exception as exc:  # noqa: BLE001 - no kubeconfig, bad context, unreadable file: one clear line
        sys.stderr.write(f"error: cannot load cluster credentials: {exc}\n")
        raise typer.Exit(EXIT_FAILURE) from None
