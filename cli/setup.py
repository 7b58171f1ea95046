"""``nvcrectl setup render | chart | init | status | reset``: install the controller from chart-style values.

Values come from the defaults, then (for ``init``) the values the last ``init`` kept on the
cluster, then every ``-f/--values`` file in order, then every ``--set`` and ``--set-json`` in
order (Helm's precedence). ``render`` talks to no cluster: pipe it to ``kubectl apply -f -`` or
commit it (``--output-dir``) for a GitOps tool to sync. ``chart`` writes the Helm chart whose
``helm template`` gives the same objects. ``init`` applies the same objects, ``status`` says
exactly what is missing, ``reset`` removes what is ours and keeps the shared JobSet CRD.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .certification import Format, OutputDirOption, emit_workflows
from .output import guarded, print_diagnostics

app = typer.Typer(help="Install the nvcre controller: CRDs, LogProfiles, RBAC and the Deployment.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """Install the nvcre controller."""


def _values_file(path: str) -> dict[str, Any]:
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.yamlio import load_documents, read_text

    if "://" in path:
        raise CompileError([error("ValuesURL", "--values", f"{path}: values must be a local file (URLs are not fetched)")])
    docs = load_documents(read_text(path), path)
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


SetJsonOption = Annotated[list[str] | None, typer.Option("--set-json", help="key=<JSON> (repeatable).")]


@app.command("render")
@guarded
def render(
    values: Annotated[list[str] | None, typer.Option("--values", "-f", help="Values file (repeatable; '-' reads stdin).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value in Helm syntax (repeatable).")] = None,
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
        raise _fail_invalid(f"--output-dir {output_dir}: not a directory")
    existing = _chart_files_on_disk(output_dir) if output_dir.is_dir() else {}
    chart_yaml = existing.get("Chart.yaml")
    if chart_yaml is not None and f"name: {CHART_NAME}\n".encode() not in chart_yaml:
        raise _fail_invalid(f"--output-dir {output_dir}: holds another chart (its Chart.yaml does not name {CHART_NAME})")
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
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]
SkipOption = Annotated[list[str] | None, typer.Option("--skip-phases", help="Comma-separated phases to skip.")]


def _fail_invalid(message: str) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(2)


def _image_layer(image: str, layers: list[dict[str, Any]]) -> dict[str, Any]:
    """``--image repo:tag`` or ``repo@sha256:...`` as values; refused beside values that set the image."""
    for layer in layers:
        given = ((layer.get("manager") or {}).get("image") or {})
        clash = [key for key in ("repository", "tag", "digest") if key in given]
        if clash:
            raise _fail_invalid(f"--image cannot be combined with values that set manager.image.{clash[0]}")
    if "@" in image:
        repository, digest = image.split("@", 1)
        return {"manager": {"image": {"repository": repository, "digest": digest}}}
    head, sep, tag = image.rpartition(":")
    if sep and "/" not in tag:
        return {"manager": {"image": {"repository": head, "tag": tag}}}
    return {"manager": {"image": {"repository": image}}}


def _objects_with_kept_values(installed: Any) -> list[dict[str, Any]]:
    """The install's objects plus the ConfigMap that keeps its values for the next ``init``."""
    from nvcre.compiler.install.keep import kept_values_configmap

    return [*installed.objects, kept_values_configmap(installed.values, installed.values["namespace"]["name"])]


def _installed_now(kube: Any) -> Any:
    """The install as the last ``init`` left it: its kept values over the defaults."""
    from nvcre.compiler.install import DEFAULT_VALUES, render_install
    from nvcre.runtime.ops.install import read_kept_values

    return render_install([read_kept_values(kube, str(DEFAULT_VALUES["namespace"]["name"]))])


@app.command("init")
@guarded
def init(
    values: Annotated[list[str] | None, typer.Option("--values", "-f", help="Values file (repeatable; '-' reads stdin).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value in Helm syntax (repeatable).")] = None,
    set_json: SetJsonOption = None,
    image: Annotated[str | None, typer.Option("--image", help="Controller image, repo:tag or repo@sha256:digest.")] = None,
    rbac_scope: Annotated[str | None, typer.Option("--rbac-scope", help="cluster or namespaced.")] = None,
    reset_values: Annotated[bool, typer.Option("--reset-values", help="Drop kept values except rbac.scope and rbac.runNamespaces.")] = False,
    skip_phases: SkipOption = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="Do not ask for confirmation.")] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Install (or update) the CRDs, LogProfiles, RBAC and the controller; check Trainer and JobSet."""
    from nvcre.compiler.install import DEFAULT_VALUES, render_install
    from nvcre.compiler.install.keep import after_reset, changed_paths, kept_values
    from nvcre.runtime.ops import install as ops

    from .operate import kube_client

    try:
        skip = ops.check_phases(skip_phases or [], ops.INIT_PHASES, "init")
    except ValueError as exc:
        raise _fail_invalid(str(exc)) from None
    if "-" in (values or []) and not auto_approve:
        raise _fail_invalid("-f - reads values from stdin, so it needs --auto-approve")
    if not auto_approve and not sys.stdin.isatty():
        raise _fail_invalid("setup init changes the cluster; pass --auto-approve to confirm without a terminal")
    file_layers = [_values_file(path) for path in values or []]
    flag_layers = _flag_layers(None, set_, set_json)
    if rbac_scope is not None:
        flag_layers.append({"rbac": {"scope": rbac_scope}})
    if image:
        flag_layers.append(_image_layer(image, [*file_layers, *flag_layers]))

    kube = kube_client(kubeconfig, context)
    namespace = str(DEFAULT_VALUES["namespace"]["name"])
    for layer in [*file_layers, *flag_layers]:
        namespace = str((layer.get("namespace") or {}).get("name") or namespace)
    kept = ops.read_kept_values(kube, namespace)
    if reset_values:
        kept = after_reset(kept)
    installed = render_install([kept, *file_layers, *flag_layers])
    print_diagnostics(installed.diagnostics)

    sources = []
    if kept:
        sources.append(f"kept on the cluster ({', '.join(changed_paths(kept, kept_values(DEFAULT_VALUES))) or 'defaults'})")
    sources += [f"--values {path}" for path in values or []]
    sources += [f"--set {expression.split('=', 1)[0]}" for expression in set_ or []]
    sources += [f"--set-json {expression.split('=', 1)[0]}" for expression in set_json or []]
    sys.stderr.write("Values: " + ("; ".join(sources) if sources else "defaults") + "\n")
    if not auto_approve and not typer.confirm("Install nvcre into the current cluster?", err=True):
        raise typer.Exit(1)

    if "deps" not in skip:
        missing = [c for c in ops.dependencies(kube) if not c.present]
        if missing:
            for component in missing:
                sys.stderr.write(f"missing: {component.name}: {component.detail}\n")
            sys.stderr.write(ops.TRAINER_INSTALL + "\n")
            raise typer.Exit(1)
        sys.stderr.write("Kubeflow Trainer and JobSet are present.\n")
    if "helm" not in skip:
        ops.apply_install(kube, _objects_with_kept_values(installed), say=lambda line: sys.stderr.write(line + "\n"))
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

    from nvcre.runtime.ops import install as ops

    from .operate import kube_client

    kube = kube_client(kubeconfig, context)
    components = ops.install_status(kube, _installed_now(kube).objects)
    if output is Format.json:
        sys.stdout.write(json.dumps([c.__dict__ for c in components], indent=2) + "\n")
    else:
        for c in components:
            sys.stdout.write(f"{'ok     ' if c.present else 'MISSING'}  {c.name}" + (f": {c.detail}" if c.detail else "") + "\n")
    if not all(c.present for c in components if not c.name.startswith("DCGM")):
        raise typer.Exit(1)


@app.command("reset")
@guarded
def reset(
    skip_phases: SkipOption = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="Do not ask for confirmation.")] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete every run (cr), then our install (helm); the JobSet CRD and Kubeflow Trainer stay."""
    from nvcre.runtime.ops import install as ops

    from .operate import kube_client

    try:
        skip = ops.check_phases(skip_phases or [], ops.RESET_PHASES, "reset")
    except ValueError as exc:
        raise _fail_invalid(str(exc)) from None
    if not auto_approve:
        if not sys.stdin.isatty():
            raise _fail_invalid("setup reset deletes every Certification, Workflow and Job; pass --auto-approve")
        if not typer.confirm("Delete every nvcre run and the nvcre install?", err=True):
            raise typer.Exit(1)
    kube = kube_client(kubeconfig, context)
    ops.reset_install(kube, _objects_with_kept_values(_installed_now(kube)), skip, say=lambda line: sys.stderr.write(line + "\n"))


if __name__ == "__main__":
    sys.exit(app())
