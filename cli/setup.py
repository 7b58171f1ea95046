"""``nvcrectl setup render | chart | init | status | reset``: install the controller from chart-style values.

Values come from the defaults, then (for ``init``) the values the last ``init`` kept on the
cluster, then every ``-f/--values`` file in order, then every ``--set`` and ``--set-json`` in
order (Helm's precedence). ``render`` talks to no cluster: pipe it to ``kubectl apply -f -`` or
commit it (``--output-dir``) for a GitOps tool to sync. ``chart`` writes the Helm chart whose
``helm template`` gives the same objects. ``init`` applies the same objects, ``status`` says
exactly what is missing, ``reset`` removes what is ours, and of that keeps what others still
depend on: a namespace holding objects nvcrectl did not make, the Trainer CRDs while others'
TrainJobs or TrainingRuntimes exist, the JobSet CRD while JobSets exist (``--delete-crd NAME``
deletes a named one anyway).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .certification import emit_workflows
from .common import ContextOption, Format, OutputDirOption, kube_client
from .output import fail_invalid, guarded, print_diagnostics, stderr_lines

app = typer.Typer(help="Install the nvcre controller: CRDs, LogProfiles, RBAC and the Deployment.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """Install the nvcre controller."""


def _values_file(path: str) -> dict[str, Any]:
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import FILE_LIMITS, load_documents, read_text

    if "://" in path:
        raise CompileError([error("ValuesURL", "--values", f"{path}: values must be a local file (URLs are not fetched)")])
    docs = load_documents(read_text(path, FILE_LIMITS.max_bytes or 0), path, limits=FILE_LIMITS)
    if not docs:
        return {}
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise CompileError([error("InvalidValues", path, "expected one YAML mapping of values")])
    return docs[0]


def _set_json(expression: str) -> dict[str, Any]:
    """Values from one ``--set-json key=<JSON>`` (Helm syntax: the key is a dotted path)."""
    import json

    from nvcre.compiler.diagnostics import CompileError, error

    key, sep, raw = expression.partition("=")
    if not sep or not key:
        raise CompileError([error("InvalidSetJSON", "--set-json", f"expected key=<JSON>, got {expression!r}")])
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise CompileError([error("InvalidSetJSON", f"--set-json {key}", f"not JSON: {exc}")]) from None
    layer: dict[str, Any] = {}
    cursor = layer
    parts = key.split(".")
    for part in parts[:-1]:
        cursor = cursor.setdefault(part, {})
    cursor[parts[-1]] = parsed
    return layer


def _flag_layers(values: list[str] | None, set_: list[str] | None, set_json: list[str] | None) -> list[dict[str, Any]]:
    """Values files in order, then every ``--set``, then every ``--set-json``."""
    from nvcre.compiler.install import parse_set

    layers = [_values_file(path) for path in values or []]
    layers += [parse_set(expression, f"--set {expression}") for expression in set_ or []]
    layers += [_set_json(expression) for expression in set_json or []]
    return layers


ValuesOption = Annotated[list[str] | None, typer.Option("--values", "-f", help="Values file (repeatable; '-' reads stdin).")]
SetOption = Annotated[list[str] | None, typer.Option("--set", help="key=value in Helm syntax (repeatable).")]
SetJsonOption = Annotated[list[str] | None, typer.Option("--set-json", help="key=<JSON> (repeatable).")]


@app.command("render")
@guarded
def render(
    values: ValuesOption = None,
    set_: SetOption = None,
    set_json: SetJsonOption = None,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml or json.")] = Format.yaml,
    output_dir: OutputDirOption = None,
) -> None:
    """Print the install objects in apply order: CRDs, namespace, LogProfiles, RBAC, ServiceAccount, Deployment."""
    from nvcre.compiler.install import render_install

    installed = render_install(_flag_layers(values, set_, set_json))
    print_diagnostics(installed.diagnostics)
    emit_workflows(installed.objects, output=output, output_dir=output_dir)


#: What ``setup chart`` owns inside its output directory (other files there are left alone).
_CHART_OWNED = ("Chart.yaml", "values.yaml", "values.schema.json", "templates")


def _chart_files_on_disk(directory: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name in _CHART_OWNED:
        path = directory / name
        if path.is_file():
            found[name] = path.read_bytes()
        elif path.is_dir():
            for item in sorted(path.rglob("*")):
                if item.is_file():
                    found[item.relative_to(directory).as_posix()] = item.read_bytes()
    return found


@app.command("chart")
@guarded
def chart(
    output_dir: Annotated[Path, typer.Option("--output-dir", help="Chart directory to write (for example charts/nvcre).")],
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if the directory differs from a fresh chart.")] = False,
) -> None:
    """Write the Helm chart whose `helm template` equals `setup render` for the same values."""
    from nvcre.compiler.install.chart import CHART_NAME, generate_chart

    files = {name: text.encode("utf-8") for name, text in generate_chart().items()}
    if output_dir.exists() and not output_dir.is_dir():
        raise fail_invalid(f"--output-dir {output_dir}: not a directory")
    existing = _chart_files_on_disk(output_dir) if output_dir.is_dir() else {}
    chart_yaml = existing.get("Chart.yaml")
    if chart_yaml is not None and f"name: {CHART_NAME}\n".encode() not in chart_yaml:
        raise fail_invalid(f"--output-dir {output_dir}: holds another chart (its Chart.yaml does not name {CHART_NAME})")
    changed = sorted(name for name, data in files.items() if existing.get(name) != data)
    stale = sorted(set(existing) - set(files))
    if check:
        for name in changed:
            sys.stderr.write(f"{'differs' if name in existing else 'missing'}: {output_dir / name}\n")
        for name in stale:
            sys.stderr.write(f"not generated: {output_dir / name}\n")
        if changed or stale:
            sys.stderr.write("the chart is out of date: run nvcrectl setup chart --output-dir " + str(output_dir) + "\n")
            raise typer.Exit(1)
        sys.stderr.write(f"{output_dir}: up to date ({len(files)} files)\n")
        return
    for name in changed:
        target = output_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name])
    for name in stale:
        (output_dir / name).unlink()
    sys.stderr.write(f"{output_dir}: {len(changed)} written, {len(files) - len(changed)} unchanged, {len(stale)} removed\n")


KubeconfigOption = Annotated[str | None, typer.Option("--kubeconfig", help="Path to a kubeconfig.")]
SkipOption = Annotated[list[str] | None, typer.Option("--skip-phases", help="Comma-separated phases to skip.")]
AutoApproveOption = Annotated[bool, typer.Option("--auto-approve", help="Do not ask for confirmation.")]


def _skip(skip_phases: list[str] | None, command: str) -> tuple[str, ...]:
    """The ``--skip-phases`` of ``setup init`` or ``setup reset``; exit 2 naming any phase it does not have."""
    from nvcre.runtime.ops.install import lifecycle as ops

    try:
        return ops.check_phases(skip_phases or [], ops.INIT_PHASES if command == "init" else ops.RESET_PHASES, command)
    except ValueError as exc:
        raise fail_invalid(str(exc)) from None


def _image_layer(image: str, layers: list[dict[str, Any]]) -> dict[str, Any]:
    """``--image repo:tag`` or ``repo@sha256:...`` as values; refused beside values that set the image."""
    from nvcre.runtime.ops.install.chart import image_values

    for layer in layers:
        given = (layer.get("manager") or {}).get("image") or {}
        clash = [key for key in ("repository", "tag", "digest") if key in given]
        if clash:
            raise fail_invalid(f"--image cannot be combined with values that set manager.image.{clash[0]}")
    return image_values(image)


ChartRefOption = Annotated[
    str | None,
    typer.Option(
        "--chart-ref",
        help="NVCRE Helm chart to render with helm (an OCI reference such as oci://ghcr.io/nvidia/cluster-readiness-engine, "
        "a mirror of it, or a chart directory); default: the objects nvcrectl renders itself (the same chart).",
    ),
]
TrainerChartRefOption = Annotated[
    str | None,
    typer.Option(
        "--trainer-chart-ref",
        help="Kubeflow Trainer Helm chart (for example oci://ghcr.io/kubeflow/charts/kubeflow-trainer or a mirror), pulled at "
        "the pinned 2.2.1; default: the chart of the pinned Trainer Go module on this machine (nothing is downloaded).",
    ),
]
PullSecretOption = Annotated[
    str | None,
    typer.Option(
        "--image-pull-secret",
        help="GitHub token: creates the ghcr.io pull Secret nvcrectl-pull-secret for the controller and logs in to "
        "ghcr.io for chart pulls from there (a chart on another registry needs helm registry login first).",
    ),
]
VersionOption = Annotated[
    str | None,
    typer.Option("--version", help="Chart version for a pulled --chart-ref, and the controller image tag unless the image is set."),
]


def _version(version: str, layers: list[dict[str, Any]]) -> dict[str, Any]:
    """``--version``: the controller image tag, unless values set the image."""
    import re

    if not re.fullmatch(r"v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?", version):
        raise fail_invalid(f"--version {version!r}: expected a chart version such as 0.8.2")
    if any((layer.get("manager") or {}).get("image") for layer in layers):
        return {}
    return {"manager": {"image": {"tag": version}}}


def _init_layers(
    values: list[str] | None,
    set_: list[str] | None,
    set_json: list[str] | None,
    flags: dict[str, Any],
) -> list[dict[str, Any]]:
    """Values files, ``--set``/``--set-json``, then ``--rbac-scope``, ``--image``, ``--version`` and the pull Secret."""
    from nvcre.runtime.ops.install.chart import PULL_SECRET

    file_layers = [_values_file(path) for path in values or []]
    flag_layers = _flag_layers(None, set_, set_json)
    if flags["rbac_scope"] is not None:
        flag_layers.append({"rbac": {"scope": flags["rbac_scope"]}})
    if flags["image"]:
        flag_layers.append(_image_layer(flags["image"], [*file_layers, *flag_layers]))
    if flags["version"]:
        flag_layers.append(_version(flags["version"], [*file_layers, *flag_layers]))
    if flags["pull_secret"]:
        flag_layers.append({"manager": {"imagePullSecrets": [PULL_SECRET]}})
    return [*file_layers, *flag_layers]


def _value_sources(kept: dict[str, Any], values: list[str] | None, set_: list[str] | None, set_json: list[str] | None) -> str:
    from nvcre.compiler.install import DEFAULT_VALUES
    from nvcre.compiler.install.keep import changed_paths, kept_values

    sources = []
    if kept:
        sources.append(f"kept on the cluster ({', '.join(changed_paths(kept, kept_values(DEFAULT_VALUES))) or 'defaults'})")
    sources += [f"--values {path}" for path in values or []]
    sources += [f"--set {expression.split('=', 1)[0]}" for expression in set_ or []]
    sources += [f"--set-json {expression.split('=', 1)[0]}" for expression in set_json or []]
    return "; ".join(sources) if sources else "defaults"


@app.command("init")
@guarded
def init(
    values: ValuesOption = None,
    set_: SetOption = None,
    set_json: SetJsonOption = None,
    image: Annotated[str | None, typer.Option("--image", help="Controller image, repo:tag or repo@sha256:digest.")] = None,
    rbac_scope: Annotated[str | None, typer.Option("--rbac-scope", help="cluster or namespaced.")] = None,
    reset_values: Annotated[
        bool, typer.Option("--reset-values", help="Drop kept values except rbac.scope and rbac.runNamespaces.")
    ] = False,
    chart_ref: ChartRefOption = None,
    trainer_chart_ref: TrainerChartRefOption = None,
    image_pull_secret: PullSecretOption = None,
    version: VersionOption = None,
    skip_phases: SkipOption = None,
    auto_approve: AutoApproveOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Install Kubeflow Trainer 2.2.1 when absent (deps), then the CRDs, LogProfiles, RBAC and the controller (helm)."""
    from nvcre.compiler.install import render_install
    from nvcre.compiler.install.keep import after_reset
    from nvcre.runtime.ops.install import lifecycle as ops

    from .running import dependencies_missing

    skip = _skip(skip_phases, "init")
    if "-" in (values or []) and not auto_approve:
        raise fail_invalid("-f - reads values from stdin, so it needs --auto-approve")
    if not auto_approve and not sys.stdin.isatty():
        raise fail_invalid("setup init changes the cluster; pass --auto-approve to confirm without a terminal")
    flags = {"rbac_scope": rbac_scope, "image": image, "version": version, "pull_secret": image_pull_secret}
    layers = _init_layers(values, set_, set_json, flags)

    kube = kube_client(kubeconfig, context)
    kept = ops.read_kept_values(kube, ops.namespace_of(layers))
    if reset_values:
        kept = after_reset(kept)
    installed = render_install([kept, *layers])
    print_diagnostics(installed.diagnostics)
    sys.stderr.write("Values: " + _value_sources(kept, values, set_, set_json) + "\n")
    if not auto_approve and not typer.confirm("Install nvcre into the current cluster?", err=True):
        raise typer.Exit(1)

    if "deps" not in skip:
        try:
            ops.ensure_dependencies(kube, chart_ref=trainer_chart_ref, token=image_pull_secret, say=stderr_lines("[deps] "))
        except ops.DependenciesMissing as exc:
            raise dependencies_missing(exc.missing) from None
    if "helm" not in skip:
        objects = ops.chart_objects(installed, chart_ref, version=version, token=image_pull_secret)
        ops.apply_install(kube, objects, say=stderr_lines())
        if image_pull_secret:
            ops.ensure_pull_secret(kube, str(installed.values["namespace"]["name"]), image_pull_secret, say=stderr_lines())
        sys.stderr.write("Setup complete. Check it with: nvcrectl setup status\n")


@app.command("status")
@guarded
def status(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    output: Annotated[Format, typer.Option("--output", "-o", help="yaml or json.")] = Format.yaml,
) -> None:
    """What the install has and exactly what is missing; exit 1 when anything is."""
    import json

    from nvcre.runtime.ops.install import lifecycle as ops

    kube = kube_client(kubeconfig, context)
    components = ops.install_status(kube, ops.render_over_kept(kube).objects)
    if output is Format.json:
        sys.stdout.write(json.dumps([c.__dict__ for c in components], indent=2) + "\n")
    else:
        for c in components:
            sys.stdout.write(f"{'ok     ' if c.present else 'MISSING'}  {c.name}" + (f": {c.detail}" if c.detail else "") + "\n")
    if not all(c.present for c in components if not c.name.startswith("DCGM")):
        raise typer.Exit(1)


DeleteCrdOption = Annotated[
    list[str] | None,
    typer.Option(
        "--delete-crd",
        help="A Kubeflow Trainer or JobSet CRD setup init installed (e.g. trainjobs.trainer.kubeflow.org) to delete even while it "
        "holds objects nvcrectl did not create: they are deleted with it, in every namespace. Repeatable.",
    ),
]


def _delete_crds(names: list[str] | None) -> tuple[str, ...]:
    """The ``--delete-crd`` names; exit 2 for one that is not a CRD of the deps phase."""
    from nvcre.runtime.ops.install.deps import JOBSET_CRD, TRAINER_CRDS

    known = (*TRAINER_CRDS, JOBSET_CRD)
    for name in names or []:
        if name not in known:
            raise fail_invalid(f"--delete-crd {name}: not a CRD setup init installs; expected one of {', '.join(known)}")
    return tuple(dict.fromkeys(names or []))


@app.command("reset")
@guarded
def reset(
    skip_phases: SkipOption = None,
    auto_approve: AutoApproveOption = False,
    delete_crd: DeleteCrdOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete every run (cr), our install (helm), then what init installed of Kubeflow Trainer (deps).

    Kept, each with a line saying why: a namespace holding objects nvcrectl did not create; the
    whole Trainer while its CRDs hold others' TrainJobs or TrainingRuntimes; the JobSet CRD while
    JobSets exist. --delete-crd NAME deletes that CRD (and what it holds) anyway."""
    from nvcre.runtime.ops.install import lifecycle as ops

    skip = _skip(skip_phases, "reset")
    delete_crds = _delete_crds(delete_crd)
    if not auto_approve:
        if not sys.stdin.isatty():
            raise fail_invalid("setup reset deletes every Certification, Workflow and Job; pass --auto-approve")
        if not typer.confirm("Delete every nvcre run and the nvcre install?", err=True):
            raise typer.Exit(1)
    kube = kube_client(kubeconfig, context)
    ops.setup_reset(kube, skip=skip, say=stderr_lines(), delete_crds=delete_crds)


if __name__ == "__main__":
    sys.exit(app())
